import { afterAll, beforeAll, expect, test } from "bun:test";
import { FeedServer, Vendor } from "./vendor";
import { mirrorSite } from "./mirror-site";

// design.md "Release pipeline": a release halted by its rollout's autoHalt at the vendor is halted
// at the mirror with its rule (the release.halted event's `rule`), so the mirror serves it as the
// vendor does: only to installations running it, the previous release to everyone else.

const feed = new FeedServer();
let vendor: Vendor;
let manifestPath: string;
const RULE = "autoHalt: 3 of 4 installations reporting within 1h failed (75%; the rule: at least 50% of at least 4)";

beforeAll(async () => {
  feed.start();
  vendor = await new Vendor("alpha", feed.url).init();
  vendor.tree.add({ version: "1.2.0", released: "2026-11-01T00:00:00+00:00" });
  const r = vendor.tree.add({
    version: "1.3.0",
    released: "2026-11-20T00:00:00+00:00",
    fields: { rollout: { percent: 100, autoHalt: { failureRate: 0.5, minReports: 4, window: "1h" } } },
  });
  manifestPath = `/updates/${r.lane}/alpha-update.json`;
});
afterAll(() => {
  feed.stop();
  vendor.remove();
});

test("a halt by the vendor's rule reaches the mirror with the rule; a resume lifts it", async () => {
  const m = await mirrorSite(vendor, feed.url);
  const version = async (token: string, query = "") => ((await (await m.get(`${manifestPath}${query}`, token)).json()) as { version: string }).version;
  try {
    const token = vendor.token({ activation: "act_mirror1", license: "lic_one", nowMs: m.clock() });
    expect(await version(token)).toBe("1.3.0");
    // The first poll reads the vendor's snapshot; the halt comes as an event after it.
    await m.follower.pollOnce();
    feed.add("release.halted", { release: { lane: "alpha/stable/win-x64", version: "1.3.0" }, share: 100, rule: RULE });
    await m.follower.pollOnce();
    const control = (await m.composed.store.listReleaseControls()).find((c) => c.version === "1.3.0");
    expect(control?.haltRule).toBe(RULE);
    expect(await version(token)).toBe("1.2.0");
    // The request's own version says it runs it.
    expect(await version(token, "?installed=1.3.0")).toBe("1.3.0");
    // A mirror that starts now reads the halt and its rule from the snapshot.
    const late = await mirrorSite(vendor, feed.url);
    try {
      await late.follower.pollOnce();
      expect((await late.composed.store.listReleaseControls()).find((c) => c.version === "1.3.0")?.haltRule).toBe(RULE);
      expect(((await (await late.get(manifestPath, token)).json()) as { version: string }).version).toBe("1.2.0");
    } finally {
      await late.close();
    }
    feed.add("release.resumed", { release: { lane: "alpha/stable/win-x64", version: "1.3.0" }, share: 100 });
    await m.follower.pollOnce();
    expect(await version(token)).toBe("1.3.0");
  } finally {
    await m.close();
  }
});
