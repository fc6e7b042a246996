import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  ELECTRON,
  electronArchIs,
  electronChannelFile,
  feedsOffered,
  refuseMixedVelopack,
  velopackFeedPlatforms,
} from "../../src/domain/releases/feed-formats";
import { KeyturnError } from "../../src/domain/errors";
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

  test("a zip behind a dozen newer disk images is still the one latest-mac.yml names", async () => {
    s.tree.add({ version: "0.9.0", platform: "mac-x64", installer: "Alpha-0.9.0-mac.zip", released: "2026-09-01T00:00:00+00:00" });
    for (let i = 1; i <= 12; i++)
      s.tree.add({
        version: `1.0.${i}`,
        platform: "mac-x64",
        installer: `Alpha-1.0.${i}.dmg`,
        released: `2026-10-${String(i + 1).padStart(2, "0")}T00:00:00+00:00`,
      });
    await s.holder.rescan();
    await s.holder.verified();
    const res = await s.site.request("GET", "/feeds/electron/alpha/stable/latest-mac.yml", { token: await s.token() });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('path: "Alpha-0.9.0-mac.zip"');
  });
});

// electron-builder's packages/electron-updater/src/providers/Provider.ts, getChannelFilePrefix:
// `const archSuffix = arch === "x64" ? "" : `-${arch}``, arch being Node's process.arch (ia32, arm, arm64).
describe("electron-updater names 32-bit architectures as Node does", () => {
  const platforms = ["win-x64", "win-x86", "linux-x64", "linux-arm64", "linux-armv7", "linux-x86"];
  test("its channel files of the site's Tauri-named platforms: latest-linux-arm.yml is linux-armv7, latest-linux-ia32.yml linux-x86", () => {
    expect(electronChannelFile("latest-linux-arm.yml", "stable", platforms)).toEqual(["linux-armv7"]);
    expect(electronChannelFile("latest-linux-ia32.yml", "stable", platforms)).toEqual(["linux-x86"]);
    expect(electronChannelFile("latest-linux-arm64.yml", "stable", platforms)).toEqual(["linux-arm64"]);
    expect(electronChannelFile("latest-linux.yml", "stable", platforms)).toEqual(["linux-x64"]);
    expect(electronChannelFile("latest-linux-armv7.yml", "stable", platforms)).toBeNull();
  });
  test("?arch=${process.arch}: ia32 picks win-x86, x64 win-x64, arm linux-armv7", () => {
    expect(platforms.filter((p) => p.startsWith("win-") && electronArchIs(p, "ia32"))).toEqual(["win-x86"]);
    expect(platforms.filter((p) => p.startsWith("win-") && electronArchIs(p, "x64"))).toEqual(["win-x64"]);
    expect(platforms.filter((p) => electronArchIs(p, "arm"))).toEqual(["linux-armv7"]);
  });
});

describe("Velopack channel files (peers.md 4.1)", () => {
  const platforms = ["win-x64", "mac-arm64", "mac-x64", "linux-x64"];
  const q = (query = "") => new URLSearchParams(query);
  test("an OS channel is its platforms; an OS-arch channel its platform; anything else none of this site", () => {
    expect(velopackFeedPlatforms("win", platforms, q())).toEqual(["win-x64"]);
    expect(velopackFeedPlatforms("linux", platforms, q())).toEqual(["linux-x64"]);
    expect(velopackFeedPlatforms("osx", platforms, q())).toEqual(["mac-arm64", "mac-x64"]);
    expect(velopackFeedPlatforms("osx-arm64", platforms, q())).toEqual(["mac-arm64"]);
    expect(velopackFeedPlatforms("osx-arm64-beta", platforms, q())).toBeNull();
    expect(velopackFeedPlatforms("beta", platforms, q())).toBeNull();
    expect(velopackFeedPlatforms("win-arm64", platforms, q())).toBeNull();
  });
  test("the C# client's rid, else its arch, picks what the machine runs: its own, else what it emulates, else nothing", () => {
    expect(velopackFeedPlatforms("osx", platforms, q("rid=osx-x64&arch=arm64"))).toEqual(["mac-x64"]);
    expect(velopackFeedPlatforms("osx", platforms, q("arch=arm64"))).toEqual(["mac-arm64"]);
    // Windows on ARM runs the x64 build of a site that has no arm64 one.
    expect(velopackFeedPlatforms("win", platforms, q("arch=arm64&rid=win-arm64"))).toEqual(["win-x64"]);
    // An Intel Mac never gets an arm64 package, a 32-bit Windows never an x64 one.
    expect(velopackFeedPlatforms("osx", ["mac-arm64"], q("rid=osx-x64&arch=x64"))).toEqual([]);
    expect(velopackFeedPlatforms("win", platforms, q("arch=x86"))).toEqual([]);
    // An architecture the client cannot tell (rid=win-Unknown, no arch) names nothing: the channel's platforms.
    expect(velopackFeedPlatforms("win", platforms, q("rid=win-Unknown"))).toEqual(["win-x64"]);
    // A channel named for its platform answers it, whatever machine asks.
    expect(velopackFeedPlatforms("osx-x64", platforms, q("arch=arm64"))).toEqual(["mac-x64"]);
  });
  test("a listing of two platforms' packages is refused, naming the channel to pack with; one platform's is not", () => {
    const release = (platform: string) => ({ manifest: manifest(platform, "Alpha-1.0.0-full.nupkg"), folder: platform, installerPath: "" });
    expect(() => refuseMixedVelopack("osx", [release("mac-x64"), release("mac-x64")])).not.toThrow();
    let error: unknown;
    try {
      refuseMixedVelopack("osx", [release("mac-arm64"), release("mac-x64")]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(KeyturnError);
    expect((error as KeyturnError).code).toBe("not_found");
    expect((error as KeyturnError).message).toContain("(vpk pack --channel osx-arm64), read from releases.osx-arm64.json.");
  });
});
