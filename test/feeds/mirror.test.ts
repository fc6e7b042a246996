import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FeedServer, Vendor } from "../mirror/vendor";
import { mirrorSite } from "../mirror/mirror-site";
import { feedFileEntry } from "../release-tree";
import { VARIANTS } from "../../src/config/variants";
import { FeedCredentials } from "../../src/domain/feed-credential";
import { TokenSigner } from "../../src/domain/tokens";
import { minisignKey } from "./signers";

/** design.md "Feeds for existing updaters": the feeds work through a mirror, with the vendor's tokens and controls. */
const feed = new FeedServer();
let vendor: Vendor;
const key = minisignKey();

beforeAll(async () => {
  feed.start();
  vendor = await new Vendor("alpha", feed.url).init();
  for (const [version, released] of [
    ["1.0.0", "2026-09-01T00:00:00+00:00"],
    ["1.1.0", "2026-10-01T00:00:00+00:00"],
  ] as const) {
    const installer = `alpha-${version}-win-x64.exe`;
    const bytes = crypto.getRandomValues(new Uint8Array(5000));
    const sig = key.sign(bytes, installer);
    vendor.tree.add({
      version,
      released,
      installer,
      installerBytes: bytes,
      files: { [`${installer}.sig`]: sig },
      fields: { feeds: { tauri: { signature: feedFileEntry(`${installer}.sig`, sig) } } },
    });
  }
});
afterAll(() => {
  feed.stop();
  vendor.remove();
});

describe("the feeds at a mirror", () => {
  test("a vendor token reads the Tauri and electron feeds from the mirror's copy, downloads on the mirror's origin; a release withdrawn at the vendor leaves them within one poll", async () => {
    const m = await mirrorSite(vendor, feed.url);
    try {
      const token = vendor.token({ activation: "act_feeds1", license: "lic_feeds", nowMs: m.clock() });
      const tauri = async () =>
        (await (await m.get("/feeds/tauri/alpha/stable/windows/x86_64/0.1.0", token)).json()) as { version: string; url: string; signature: string };
      const offered = await tauri();
      expect(offered.version).toBe("1.1.0");
      expect(offered.url).toBe("https://mirror.example.com/api/v1/updates/alpha/stable/win-x64/alpha-1.1.0-win-x64.exe");
      const download = Buffer.from(await (await m.get(offered.url.slice("https://mirror.example.com/api/v1".length), token)).arrayBuffer());
      expect(key.verify(download, offered.signature)).toBe(true);
      expect(await (await m.get("/feeds/electron/alpha/stable/latest.yml", token)).text()).toContain('version: "1.1.0"');

      feed.add("release.withdrawn", { release: { lane: "alpha/stable/win-x64", version: "1.1.0" }, share: 0 });
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect((await tauri()).version).toBe("1.0.0");
      expect(await (await m.get("/feeds/electron/alpha/stable/latest.yml", token)).text()).toContain('version: "1.0.0"');
      expect((await m.get("/feeds/electron/alpha/stable/alpha-1.1.0-win-x64.exe", token)).status).toBe(404);
    } finally {
      await m.close();
    }
  });

  test("a feed credential the vendor made opens the mirror's feeds, the mirror makes none, and a deactivation at the vendor ends it within one poll", async () => {
    const m = await mirrorSite(vendor, feed.url);
    try {
      const token = vendor.token({ activation: "act_feedcred", license: "lic_feedcred", nowMs: m.clock() });
      const ring = vendor["ring"];
      // The vendor's site makes it as FeedCredentials does (its signing key, its address as iss).
      const atVendor = new FeedCredentials({
        variant: VARIANTS.alpha,
        baseUrl: vendor.url,
        issuer: vendor.url,
        keys: ring,
        clock: m.clock,
        signer: () => new TokenSigner(VARIANTS.alpha, vendor.url, ring.signing!),
        status: { check() {} },
        mirrorOf: null,
      });
      const claims = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString());
      const { credential } = atVendor.issue({ claims });
      const path = `/feeds/credential/${credential}/velopack/alpha/stable/releases.win.json`;
      const first = await m.get(path);
      expect([first.status, await first.json()]).toEqual([200, { Assets: [] }]);
      const made = await m.post("/feeds/credential", undefined, token);
      expect([made.status, ((await made.json()) as { error: string }).error]).toEqual([503, "licensing_unavailable"]);
      feed.deactivate("act_feedcred", claims.exp * 1000);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const after = await m.get(path);
      expect([after.status, ((await after.json()) as { error: string }).error]).toEqual([401, "entitlement_revoked"]);
    } finally {
      await m.close();
    }
  });
});
