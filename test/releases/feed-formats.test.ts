import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ELECTRON, feedsOffered } from "../../src/domain/releases/feed-formats";
import type { Manifest } from "../../src/domain/releases/manifest";
import { releaseSite } from "../release-tree";

// electron-builder's packages/electron-updater/src/MacUpdater.ts: `findFile(files, "zip", ["pkg", "dmg"])`,
// then "ZIP file not provided" (ERR_UPDATER_ZIP_FILE_NOT_FOUND) when the channel file names no zip.

const manifest = (platform: string, installer: string): Manifest => ({
  product: "alpha",
  channel: "stable",
  platform,
  version: "1.0.0",
  released: 0,
  installer,
  size: 1,
  sha256: "0".repeat(64),
  rollout: null,
  feeds: null,
});

describe("electron-updater on macOS installs only a zip", () => {
  test("the admin overview offers electron for a mac zip, and for any installer elsewhere, never for a mac disk image or package", () => {
    expect(feedsOffered(manifest("mac-x64", "Alpha-1.0.0-mac.ZIP"))).toContain("electron");
    expect(feedsOffered(manifest("win-x64", "AlphaSetup.exe"))).toContain("electron");
    for (const installer of ["Alpha-1.0.0.dmg", "Alpha-1.0.0.pkg"]) {
      expect(ELECTRON.installs(manifest("mac-arm64", installer))).toBe(false);
      expect(feedsOffered(manifest("mac-arm64", installer))).not.toContain("electron");
    }
  });

  let s: Awaited<ReturnType<typeof releaseSite>>;
  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,mac-x64" });
    s.tree.add({ version: "1.0.0", platform: "mac-x64", installer: "Alpha-1.0.0.dmg", released: "2026-10-01T00:00:00+00:00" });
    await s.holder.rescan();
    await s.holder.verified();
  });
  afterAll(() => s.close());

  test("a mac lane whose releases are all disk images: latest-mac.yml is no_release, saying what electron-updater needs", async () => {
    const token = await s.token();
    const res = await s.site.request("GET", "/feeds/electron/alpha/stable/latest-mac.yml", { token });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      error: "no_release",
      message: "No release on alpha/stable/mac-x64 is one electron-updater can install (on macOS, a release whose installer is a .zip).",
    });
    // The update path still serves the disk image: only the electron feed cannot offer it.
    expect((await s.site.request("GET", "/updates/alpha/stable/mac-x64/alpha-update.json", { token })).status).toBe(200);
  });
});
