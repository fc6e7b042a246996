import { afterAll, beforeAll, expect, test } from "bun:test";
import { FeedServer, Vendor } from "./vendor";
import { mirrorSite } from "./mirror-site";

// design.md "Licence models": releases after a licence's window are not offered "on the update
// path, /releases, any feed or a mirror". A mirror holds no licences: it reads the window and the
// features from the vendor's token, as the vendor's own site does.

const feed = new FeedServer();
let vendor: Vendor;
const WINDOW = Date.parse("2026-09-15T00:00:00Z") / 1000;

beforeAll(async () => {
  feed.start();
  vendor = await new Vendor("alpha", feed.url).init();
  vendor.tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
  vendor.tree.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
  vendor.tree.add({ version: "1.2.0", released: "2026-11-01T00:00:00+00:00", fields: { requiresFeature: "lts" } });
});
afterAll(() => {
  feed.stop();
  vendor.remove();
});

test("a mirror offers what the vendor's token allows: the newest release within the window, a feature's release only with it", async () => {
  const m = await mirrorSite(vendor, feed.url);
  try {
    const token = (o: { upd?: number; ent?: Record<string, string | true> }) =>
      vendor.token({ activation: `act_${Object.keys(o).join("") || "plain"}`, license: "lic_terms", nowMs: m.clock(), ...o });
    const manifest = async (t: string) => ((await (await m.get("/updates/alpha/stable/win-x64/alpha-update.json", t)).json()) as { version: string }).version;
    const plain = token({});
    const windowed = token({ upd: WINDOW });
    const featured = token({ ent: { lts: true } });
    expect(await manifest(plain)).toBe("1.1.0");
    expect(await manifest(windowed)).toBe("1.0.0");
    expect(await manifest(featured)).toBe("1.2.0");
    const refused = await m.get("/updates/alpha/stable/win-x64/alpha-1.1.0-win-x64.exe", windowed);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string; message: string }).message).toContain("ended on 2026-09-15");
    const listed = (await (await m.get("/releases", windowed)).json()) as { releases: { version: string }[] };
    expect(listed.releases.map((r) => r.version)).toEqual(["1.0.0"]);
  } finally {
    await m.close();
  }
});
