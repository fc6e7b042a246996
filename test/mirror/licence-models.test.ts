import { afterAll, beforeAll, expect, test } from "bun:test";
import { device, testClock } from "../helpers";
import { mirrorSite } from "./mirror-site";
import { FeedServer, Vendor } from "./vendor";

// design.md "Licence models": a mirror refuses trials and metered use like other licensing
// (licensing_unavailable, 503): the trials and the meters' counts live at the vendor.

const feed = new FeedServer();
let vendor: Vendor;

beforeAll(async () => {
  feed.start();
  vendor = await new Vendor("alpha", feed.url).init();
});
afterAll(() => {
  feed.stop();
  vendor.remove();
});

test("a mirror answers licensing_unavailable to POST /trials/start and GET and POST /entitlements/usage, naming its vendor", async () => {
  const m = await mirrorSite(vendor, feed.url, { clock: testClock() });
  try {
    const token = vendor.token({ activation: "act_meter1", license: "lic_meter", nowMs: m.clock() });
    const usage = await m.post("/entitlements/usage", { meter: "exports", amount: 1, idempotencyKey: "k1" }, token);
    expect(usage.status).toBe(503);
    const u = (await usage.json()) as { error: string; message: string };
    expect(u.error).toBe("licensing_unavailable");
    expect(u.message).toContain(feed.url);

    const read = await m.get("/entitlements/usage", token);
    expect(read.status).toBe(503);
    expect(((await read.json()) as { error: string }).error).toBe("licensing_unavailable");

    const trial = await m.post("/trials/start", { device: device("alpha") });
    expect(trial.status).toBe(503);
    expect(((await trial.json()) as { error: string }).error).toBe("licensing_unavailable");
  } finally {
    await m.close();
  }
});
