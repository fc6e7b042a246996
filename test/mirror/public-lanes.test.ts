import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ServeProcess } from "../serve-process";
import { tempDir } from "../helpers";
import { FeedServer, startMirror, Vendor } from "./vendor";
import type { WrittenRelease } from "../release-tree";

/** design.md "Public lanes": a mirror serves the vendor's public lanes without a bearer too, as a real `serve --mirror-of` process. */
describe("a public lane through a mirror (keyturn serve --mirror-of --public-lanes)", () => {
  const feed = new FeedServer();
  let vendor: Vendor;
  let publicRelease: WrittenRelease;
  let privateRelease: WrittenRelease;
  let mirror: ServeProcess;

  beforeAll(async () => {
    feed.start();
    vendor = await new Vendor("alpha", feed.url).init();
    publicRelease = vendor.tree.add({ version: "1.0.0", channel: "preview", installerBytes: new Uint8Array(50_000).map((_, i) => i % 253) });
    privateRelease = vendor.tree.add({ version: "2.0.0" });
    mirror = await startMirror(vendor, feed, tempDir("keyturn-mirror-public-"), ["--public-lanes", "alpha/preview"]);
  });
  afterAll(async () => {
    await mirror.cleanup();
    feed.stop();
    vendor.remove();
  });

  test("its download page and installer answer without a token; its manifest is the vendor's signed bytes; the private lane refuses", async () => {
    const page = await fetch(`${mirror.url}/download/alpha/preview`, { headers: { "user-agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64)" } });
    expect(page.status).toBe(200);
    const link = /id="download" href="([^"]+)"/.exec(await page.text())?.[1];
    expect(link).toBe(`/api/v1/updates/${publicRelease.lane}/${publicRelease.installer}`);
    const installer = await fetch(`${mirror.url}${link}`);
    expect(installer.status).toBe(200);
    expect(Buffer.from(await installer.arrayBuffer()).equals(Buffer.from(publicRelease.installerBytes))).toBe(true);
    const manifest = await fetch(`${mirror.url}/api/v1/updates/${publicRelease.lane}/alpha-update.json`);
    expect(Buffer.from(await manifest.arrayBuffer()).equals(publicRelease.manifestBytes)).toBe(true);

    const refused = await fetch(`${mirror.url}/api/v1/updates/${privateRelease.lane}/alpha-update.json`);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe("entitlement_invalid");
    expect((await fetch(`${mirror.url}/download/alpha/stable`)).status).toBe(404);
    // A vendor's token still reads the private lane at the mirror.
    const token = vendor.token({ activation: "act_public", license: "lic_public" });
    expect(
      (await fetch(`${mirror.url}/api/v1/updates/${privateRelease.lane}/alpha-update.json`, { headers: { authorization: `Bearer ${token}` } })).status,
    ).toBe(200);
  });

  test("a release withdrawn at the vendor leaves the mirror's public lane within a poll", async () => {
    const url = `${mirror.url}/api/v1/updates/${publicRelease.lane}/alpha-update.json`;
    expect((await fetch(url)).status).toBe(200);
    feed.add("release.withdrawn", { release: { lane: "alpha/preview/win-x64", version: "1.0.0" }, share: 0 });
    const deadline = Date.now() + 10_000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      await Bun.sleep(100);
      status = (await fetch(url)).status;
    }
    expect(status).toBe(404);
  });
});
