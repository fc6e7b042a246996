import { afterAll, beforeAll, describe, expect, mock, test } from "bun:test";
import { EventEmitter } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { tempDir } from "../helpers";
import { releaseSite } from "../release-tree";
import { appBuilder, electronUpdater as updaterOf, listen } from "./electron-updaters";
import { minisignKey, sparkleKey } from "./signers";
import { velopackApp } from "./velopack-client";

/**
 * Issue 31's numbered cases, each with the updater's own code unmodified or its rules replayed
 * from its source: electron-updater 6.8.10's AppImageUpdater and MacUpdater (with app-builder's
 * embedded blockmaps), Velopack's Rust core through its npm binding, Tauri's plugin rule (204 is
 * "no update", any other non-2xx an error: plugins-workspace updater.rs) and Sparkle's appcast
 * reading (SUAppcastItem.m: sparkle:version, the enclosure, <sparkle:criticalUpdate/>; the best
 * item is the highest version, SUAppcastDriver.m). Case 1 (Velopack downloads) is in
 * feed-credential.test.ts, through the credential URL its core needs.
 */

// MacUpdater takes Electron's native autoUpdater (Squirrel.Mac, the OS part that installs the zip
// electron-updater downloaded and hands it on 127.0.0.1); there is none off macOS, so it is an
// emitter that records the hand-over. Everything that reads the feed and picks the file is real.
const nativeUpdater = Object.assign(new EventEmitter(), {
  feedUrl: null as string | null,
  setFeedURL(o: { url: string }) {
    nativeUpdater.feedUrl = o.url;
  },
  checkForUpdates() {},
  quitAndInstall() {},
});
mock.module("electron", () => ({ autoUpdater: nativeUpdater }));

const require = createRequire(import.meta.url);
const { AppImageUpdater } = require("electron-updater/out/AppImageUpdater");
const { MacUpdater } = require("electron-updater/out/MacUpdater");

const dir = tempDir("keyturn-updaters-");
const tauriKey = minisignKey();
const sparkle = sparkleKey();
const random = (n: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(n)));
const sha = (alg: "sha1" | "sha256", b: Uint8Array) => new Bun.CryptoHasher(alg).update(b).digest("hex");

/** Two AppImages that differ in a few places, each with its blockmap embedded by app-builder (as electron-builder's AppImage target does). */
function appImages(): { bytes: Buffer; blockMapSize: number }[] {
  const tool = appBuilder(dir);
  const v1 = random(3 << 20);
  const v2 = Buffer.from(v1);
  for (const at of [300_000, 2_000_000]) v2.fill(0x5a, at, at + 200);
  return [v1, v2].map((bytes, i) => {
    const file = join(dir, `v${i}.AppImage`);
    writeFileSync(file, bytes);
    const run = Bun.spawnSync([tool, "blockmap", "--input", file, "--compression", "deflate"]);
    if (run.exitCode !== 0) throw new Error(`app-builder blockmap: ${run.stderr.toString()}`);
    const printed = JSON.parse(run.stdout.toString()) as { blockMapSize: number };
    return { bytes: readFileSync(file), blockMapSize: printed.blockMapSize };
  });
}

/** A Tauri/Sparkle-signed release of a macOS or Windows platform. */
function signed(version: string, platform: string, installer: string, o: { channel?: string; released: string; fields?: Record<string, unknown> }) {
  const bytes = random(8000);
  const sig = tauriKey.sign(bytes, installer);
  return {
    version,
    platform,
    installer,
    channel: o.channel ?? "stable",
    released: o.released,
    installerBytes: bytes,
    files: { [`${installer}.sig`]: sig },
    fields: {
      notes: `Notes of ${version}`,
      feeds: {
        electron: {},
        tauri: { signature: { file: `${installer}.sig`, size: Buffer.byteLength(sig), sha256: sha("sha256", Buffer.from(sig)) } },
        ...(platform.startsWith("mac-") ? { sparkle: { edSignature: sparkle.sign(bytes), bundleVersion: version.split("-")[0]!.replaceAll(".", "") } } : {}),
      },
      ...o.fields,
    },
  };
}

function velopackRelease(version: string, o: { product?: string; channel?: string; released: string; fields?: Record<string, unknown> }) {
  const bytes = random(6000);
  return {
    product: o.product,
    version,
    channel: o.channel ?? "stable",
    platform: "linux-x64",
    installer: `Alpha-${version}-full.nupkg`,
    released: o.released,
    installerBytes: bytes,
    fields: { notes: `Notes of ${version}`, feeds: { velopack: { packageId: "Alpha", sha1: sha("sha1", bytes) } }, ...o.fields },
  };
}

/**
 * Sparkle's reading of an appcast, replayed with an independent XML parser (Python's): per item,
 * sparkle:version (item element), sparkle:shortVersionString, the enclosure's url, length and
 * sparkle:edSignature, <description>, and whether <sparkle:criticalUpdate> is present.
 */
function sparkleItems(xml: string): { version: string; url: string; length: number; edSignature: string; notes: string | null; critical: boolean }[] {
  const script = `
import json, sys, xml.etree.ElementTree as ET
S = "{http://www.andymatuschak.org/xml-namespaces/sparkle}"
out = []
for item in ET.fromstring(sys.stdin.read()).iter("item"):
    e = item.find("enclosure")
    out.append({"version": item.findtext(S + "version"), "url": e.get("url"), "length": int(e.get("length")),
                "edSignature": e.get(S + "edSignature"), "notes": item.findtext("description"),
                "critical": item.find(S + "criticalUpdate") is not None})
print(json.dumps(out))`;
  const run = Bun.spawnSync(["python3", "-c", script], { stdin: Buffer.from(xml) });
  if (run.exitCode !== 0) throw new Error(run.stderr.toString());
  return JSON.parse(run.stdout.toString());
}

/** SUStandardVersionComparator for the all-digit bundle versions used here; the best item is the highest. */
const bestItem = <T extends { version: string }>(items: T[]) => items.reduce((a, b) => (BigInt(b.version) > BigInt(a.version) ? b : a));

describe("issue 31: each updater, unmodified, across the numbered cases", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let server: ReturnType<typeof Bun.serve>;
  let origin: string;
  let token: string;
  const seen: { path: string; query: string; range: string | null; status: number }[] = [];
  const images = appImages();
  const r: Record<string, { installerBytes: Uint8Array }> = {};

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,mac-arm64,mac-x64,linux-x64", channels: "stable,preview" });
    // 2: AppImages with their blockmap embedded; the manifest says its size, as app-builder printed it.
    images.forEach(({ bytes, blockMapSize }, i) =>
      s.tree.add({
        version: `1.${i}.0`,
        platform: "linux-x64",
        installer: `alpha-1.${i}.0-x86_64.AppImage`,
        released: `2026-09-0${i + 1}T00:00:00+00:00`,
        installerBytes: bytes,
        fields: { feeds: { electron: { blockMapSize } } },
      }),
    );
    // A blockMapSize the AppImage does not end with: the scan skips the folder, as for any feed file that does not verify.
    s.tree.add({
      version: "0.9.0",
      platform: "linux-x64",
      folder: "wrong-blockmap",
      installer: "alpha-0.9.0-x86_64.AppImage",
      installerBytes: images[0]!.bytes,
      fields: { feeds: { electron: { blockMapSize: images[0]!.blockMapSize + 1 } } },
    });
    // 3, 4: arm64 has 2.0.0 (critical); Intel's newest is 1.9.0; 1.9.1 for Intel reaches nobody yet (7).
    r.arm = s.tree.add(signed("2.0.0", "mac-arm64", "alpha-2.0.0-mac-arm64.zip", { released: "2026-10-01T00:00:00+00:00", fields: { critical: true } }));
    r.intel = s.tree.add(signed("1.9.0", "mac-x64", "alpha-1.9.0-mac-x64.zip", { released: "2026-09-20T00:00:00+00:00" }));
    s.tree.add(signed("1.9.1", "mac-x64", "alpha-1.9.1-mac-x64.zip", { released: "2026-09-25T00:00:00+00:00", fields: { rollout: { percent: 0 } } }));
    // 3: a disk image after 1.9.0, which MacUpdater cannot install ("ZIP file not provided"): never in latest-mac.yml.
    s.tree.add({
      version: "1.9.2",
      platform: "mac-x64",
      installer: "Alpha-1.9.2.dmg",
      released: "2026-09-22T00:00:00+00:00",
      fields: { feeds: { electron: {} } },
    });
    // 6: an older preview on arm64; stable 2.0.0 came after it.
    s.tree.add(signed("1.9.5-beta.1", "mac-arm64", "alpha-1.9.5-beta.1-mac-arm64.zip", { channel: "preview", released: "2026-09-15T00:00:00+00:00" }));
    // 6, 7: Velopack on Linux: stable 3.0.0, 3.1.0 staged to nobody, an older preview 2.9.0-beta.1.
    r.velopack = s.tree.add(velopackRelease("3.0.0", { product: "alpha-cli", released: "2026-10-01T00:00:00+00:00" }));
    s.tree.add(velopackRelease("3.1.0", { product: "alpha-cli", released: "2026-10-10T00:00:00+00:00", fields: { rollout: { percent: 0 } } }));
    s.tree.add(velopackRelease("2.9.0-beta.1", { product: "alpha-cli", channel: "preview", released: "2026-09-01T00:00:00+00:00" }));
    await s.holder.rescan();
    await s.holder.verified();
    token = await s.token(["stable", "preview"]);
    server = listen(
      (request) => s.site.app.handle(request, "127.0.0.1"),
      (request, res) => {
        const url = new URL(request.url);
        seen.push({ path: url.pathname, query: url.search, range: request.headers.get("range"), status: res.status });
      },
    );
    origin = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.stop(true);
    await s.close();
  });

  /** An electron-updater of `kind` for an app at `version`, on the feed URL `url`, with the token as its header. */
  function electronUpdater(Kind: any, name: string, version: string, url: string, platform: string) {
    return updaterOf(Kind, dir, { name, version, url, platform, differential: true, authorization: `Bearer ${token}` });
  }

  test("2. AppImageUpdater updates differentially: latest-linux.yml has blockMapSize, the embedded blockmap and the changed blocks come as ranges", async () => {
    const old = join(dir, "installed.AppImage");
    writeFileSync(old, images[0]!.bytes);
    const before = process.env.APPIMAGE;
    process.env.APPIMAGE = old;
    try {
      seen.length = 0;
      const { u, log } = electronUpdater(AppImageUpdater, "appimage", "1.0.0", `${origin}/api/v1/feeds/electron/alpha/stable`, "linux");
      const check = await u.checkForUpdates();
      expect(check.updateInfo.version).toBe("1.1.0");
      expect(check.updateInfo.files[0].blockMapSize).toBe(images[1]!.blockMapSize);
      const [file] = (await u.downloadUpdate()) as string[];
      expect(readFileSync(file!).equals(images[1]!.bytes)).toBe(true);
      expect(log.join("\n")).not.toContain("Cannot download differentially");
      const downloads = seen.filter((q) => q.path.endsWith(".AppImage"));
      expect(downloads.every((q) => q.range !== null && q.status === 206)).toBe(true);
      const fetched = downloads
        .flatMap((q) => q.range!.replace("bytes=", "").split(", "))
        .reduce((n, x) => n + Number(x.split("-")[1]) - Number(x.split("-")[0]) + 1, 0);
      expect(fetched).toBeLessThan(images[1]!.bytes.length / 4);
      const skipped = [...s.holder.skipped].find(([folder]) => folder.includes("wrong-blockmap"));
      expect(skipped?.[1]).toContain("does not end with an embedded blockmap");
    } finally {
      if (before === undefined) delete process.env.APPIMAGE;
      else process.env.APPIMAGE = before;
    }
  });

  test("3. MacUpdater on an Intel Mac with ?arch=x64 in its feed URL gets Intel's own newest zip (1.9.0), not ERR_UPDATER_NO_FILES_PROVIDED nor the newer .dmg", async () => {
    // This machine is x86_64 (uname has no ARM, process.arch x64): MacUpdater treats it as an Intel Mac.
    expect(process.arch).toBe("x64");
    seen.length = 0;
    const { u } = electronUpdater(MacUpdater, "mac-intel", "1.8.0", `${origin}/api/v1/feeds/electron/alpha/stable?arch=x64`, "darwin");
    const check = await u.checkForUpdates();
    expect(check.updateInfo.version).toBe("1.9.0");
    await u.downloadUpdate();
    const zip = seen.find((q) => q.path.endsWith(".zip"))!;
    expect([zip.path.split("/").at(-1), zip.query, zip.status]).toEqual(["alpha-1.9.0-mac-x64.zip", "?arch=x64", 200]);
    expect(nativeUpdater.feedUrl).toStartWith("http://127.0.0.1:");
    // The arm64 build's own feed offers arm64's newest.
    const arm = electronUpdater(MacUpdater, "mac-arm", "1.8.0", `${origin}/api/v1/feeds/electron/alpha/stable?arch=arm64`, "darwin");
    expect((await arm.u.checkForUpdates()).updateInfo.files.map((f: { url: string }) => f.url)).toEqual(["alpha-2.0.0-mac-arm64.zip"]);
  });

  test("4. Sparkle: each architecture's appcast holds only its own archives, so each Mac's best item is its own newest; critical becomes <sparkle:criticalUpdate/>", async () => {
    const appcast = async (file: string) => {
      const res = await s.site.request("GET", `/feeds/sparkle/alpha/stable/${file}`, { token });
      expect(res.status).toBe(200);
      return sparkleItems(await res.text());
    };
    const intel = await appcast("appcast-x64.xml");
    expect(intel.every((i) => i.url.endsWith("-mac-x64.zip"))).toBe(true);
    const intelBest = bestItem(intel);
    expect([intelBest.version, intelBest.critical]).toEqual(["190", false]);
    const arm = bestItem(await appcast("appcast-arm64.xml"));
    expect([arm.version, arm.url.split("/").at(-1), arm.critical]).toEqual(["200", "alpha-2.0.0-mac-arm64.zip", true]);
    // The archive Sparkle downloads verifies with the vendor's key (the enclosure is on keyturn's origin).
    const download = await s.site.request("GET", new URL(intelBest.url).pathname.replace("/api/v1", ""), { token });
    const bytes = Buffer.from(await download.arrayBuffer());
    expect([bytes.length, sparkle.verify(bytes, intelBest.edSignature)]).toEqual([intelBest.length, true]);
  });

  test("5. Tauri: a lane with nothing released for the platform answers 204, which the plugin reads as no update", async () => {
    const res = await s.site.request("GET", "/feeds/tauri/alpha/stable/windows/x86_64/1.0.0", { token });
    // updater.rs: `if StatusCode::NO_CONTENT == res.status() { return Ok(None) }`; any other non-2xx is an error.
    expect([res.status, await res.text()]).toEqual([204, ""]);
  });

  test("6. preview lanes offer a newer stable release: Tauri, Sparkle and Velopack (its core) as electron-updater does", async () => {
    const tauri = await s.site.request("GET", "/feeds/tauri/alpha/preview/darwin/aarch64/1.9.5-beta.1", { token });
    expect(tauri.status).toBe(200);
    const update = (await tauri.json()) as { version: string; url: string; signature: string };
    expect(update.version).toBe("2.0.0");
    const archive = Buffer.from(await (await s.site.request("GET", new URL(update.url).pathname.replace("/api/v1", ""), { token })).arrayBuffer());
    expect(tauriKey.verify(archive, update.signature)).toBe(true);

    const sparkleRes = await s.site.request("GET", "/feeds/sparkle/alpha/preview/appcast-arm64.xml", { token });
    expect(bestItem(sparkleItems(await sparkleRes.text())).version).toBe("200");

    const feedUrl = `${origin}/api/v1/feeds/credential/${((await (await s.site.request("POST", "/feeds/credential", { token })).json()) as { credential: string }).credential}/velopack/alpha-cli/preview`;
    const { manager } = velopackApp({ id: "Alpha", version: "2.9.0-beta.1", channel: "linux", feedUrl });
    expect((await manager.checkForUpdatesAsync())?.TargetFullRelease.Version).toBe("3.0.0");
  });

  test("7. outside a rollout, the previous release keeps its notes: Velopack (its core) and Sparkle", async () => {
    const feedUrl = `${origin}/api/v1/feeds/credential/${((await (await s.site.request("POST", "/feeds/credential", { token })).json()) as { credential: string }).credential}/velopack/alpha-cli/stable`;
    const { manager } = velopackApp({ id: "Alpha", version: "2.0.0", channel: "linux", feedUrl });
    const update = await manager.checkForUpdatesAsync();
    expect([update?.TargetFullRelease.Version, update?.TargetFullRelease.NotesMarkdown]).toEqual(["3.0.0", "Notes of 3.0.0"]);
    const items = sparkleItems(await (await s.site.request("GET", "/feeds/sparkle/alpha/stable/appcast-x64.xml", { token })).text());
    expect(items.map((i) => [i.version, i.notes])).toEqual([["190", "Notes of 1.9.0"]]);
  });
});
