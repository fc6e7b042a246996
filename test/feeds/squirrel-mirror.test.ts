import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mirrorSite } from "../mirror/mirror-site";
import { FeedServer, Vendor } from "../mirror/vendor";
import { packagesToApply, parseReleaseFile, squirrelMacCheck } from "./squirrel-clients";

/** design.md "Feed credentials in the URL, Squirrel, deltas, public lanes": the Squirrel feeds are mirrored like the others. */
const feed = new FeedServer();
let vendor: Vendor;
const sha1 = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex");

beforeAll(async () => {
  feed.start();
  vendor = await new Vendor("alpha", feed.url).init();
  for (const [version, released] of [
    ["1.0.0", "2026-09-01T00:00:00+00:00"],
    ["1.1.0", "2026-10-01T00:00:00+00:00"],
  ] as const) {
    const bytes = crypto.getRandomValues(new Uint8Array(4000));
    vendor.tree.add({
      version,
      released,
      installer: `Alpha-${version}-full.nupkg`,
      installerBytes: bytes,
      fields: { feeds: { squirrel: { sha1: sha1(bytes) } } },
    });
  }
  vendor.tree.add({ version: "2.0.0", platform: "mac-arm64", installer: "Alpha-2.0.0-mac.zip" });
});
afterAll(() => {
  feed.stop();
  vendor.remove();
});

describe("Squirrel at a mirror", () => {
  test("a vendor token reads RELEASES and its package from the mirror's copy; a release withdrawn at the vendor leaves RELEASES within one poll", async () => {
    const m = await mirrorSite(vendor, feed.url, { settings: { platforms: "win-x64,mac-arm64" } });
    try {
      const token = vendor.token({ activation: "act_squirrel", license: "lic_squirrel", nowMs: m.clock() });
      const releases = async () => parseReleaseFile(await (await m.get("/feeds/squirrel/alpha/stable/win-x64/RELEASES", token)).text());
      const [take] = packagesToApply(await releases(), null);
      expect(take!.filename).toBe("Alpha-1.1.0-full.nupkg");
      const bytes = new Uint8Array(await (await m.get(`/feeds/squirrel/alpha/stable/win-x64/${take!.filename}`, token)).arrayBuffer());
      expect(sha1(bytes)).toBe(take!.sha1.toLowerCase());

      feed.add("release.withdrawn", { release: { lane: "alpha/stable/win-x64", version: "1.1.0" }, share: 0 });
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect((await releases()).map((e) => e.filename)).toEqual(["Alpha-1.0.0-full.nupkg"]);
      expect((await m.get("/feeds/squirrel/alpha/stable/win-x64/Alpha-1.1.0-full.nupkg", token)).status).toBe(404);
      // A mirror makes no feed credential: Squirrel.Mac's check by bearer names the zip on the mirror's update path.
      const update = (await squirrelMacCheck(await m.get("/feeds/squirrel-mac/alpha/stable/mac-arm64/0.1.0", token)))!;
      expect(update.updateURL.href).toBe("https://mirror.example.com/api/v1/updates/alpha/stable/mac-arm64/Alpha-2.0.0-mac.zip");
    } finally {
      await m.close();
    }
  });
});
