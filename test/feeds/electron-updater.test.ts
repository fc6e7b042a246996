import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createApp } from "../../src/http/app";
import { tempDir } from "../helpers";
import { feedFileEntry, releaseSite } from "../release-tree";
import { appBuilder, electronUpdater, listen } from "./electron-updaters";

/**
 * electron-updater's own code (NsisUpdater, its GenericProvider, DownloadedUpdateHelper and
 * differential downloader, builder-util-runtime's download with its sha512 check) against a real
 * keyturn over HTTP, as electron-builder's own tests drive it (./electron-updaters.ts). No module is
 * stubbed: none of these needs `electron` until an install or a notification.
 */
const require = createRequire(import.meta.url);
const { NsisUpdater } = require("electron-updater/out/NsisUpdater");

const dir = tempDir("keyturn-electron-");
/** app-builder's blockmap command, electron-builder's own generator (its package does not mark the binary executable). */
function blockmap(installer: string): { size: number; sha512: string } {
  const tool = appBuilder(dir);
  const run = Bun.spawnSync([tool, "blockmap", "--input", installer, "--output", `${installer}.blockmap`]);
  if (run.exitCode !== 0) throw new Error(`app-builder blockmap: ${run.stderr.toString()}`);
  return JSON.parse(run.stdout.toString());
}

/** Two installers that differ in three small places, so a differential update needs only a few blocks. */
function installers(): [Buffer, Buffer] {
  const v1 = Buffer.from(crypto.getRandomValues(new Uint8Array(3 << 20)));
  const v2 = Buffer.from(v1);
  for (const at of [400_000, 1_500_000, 2_700_000]) v2.fill(0x5a, at, at + 300);
  return [v1, v2];
}

describe("electron-updater against keyturn's electron feed", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let server: ReturnType<typeof Bun.serve>;
  let base: string;
  let token: string;
  const seen: { path: string; range: string | null; status: number }[] = [];
  const [v1, v2] = installers();
  const tool: Record<string, { size: number; sha512: string }> = {};

  beforeAll(async () => {
    s = await releaseSite("alpha");
    for (const [version, bytes] of [
      ["1.0.0", v1],
      ["1.1.0", v2],
    ] as const) {
      const name = `alpha-${version}-win-x64.exe`;
      const work = join(dir, version);
      mkdirSync(work, { recursive: true });
      writeFileSync(join(work, name), bytes);
      tool[version] = blockmap(join(work, name));
      const map = readFileSync(join(work, `${name}.blockmap`));
      s.tree.add({
        version,
        released: version === "1.0.0" ? "2026-09-01T00:00:00+00:00" : "2026-10-01T00:00:00+00:00",
        installer: name,
        installerBytes: bytes,
        files: { [`${name}.blockmap`]: map },
        fields: { notes: `Notes of ${version}`, feeds: { electron: { blockmap: feedFileEntry(`${name}.blockmap`, map) } } },
      });
    }
    await s.holder.rescan();
    await s.holder.verified();
    token = await s.token(["stable"]);
    const app = createApp(s.site.composed.services);
    // Every request electron-updater makes, as keyturn answered it.
    server = listen(
      (request) => app.handle(request),
      (request, res) => seen.push({ path: new URL(request.url).pathname, range: request.headers.get("range"), status: res.status }),
    );
    base = `http://127.0.0.1:${server.port}/api/v1/feeds/electron/alpha/stable`;
  });
  afterAll(async () => {
    await server.stop(true);
    await s.close();
  });

  function updater(cacheName: string, oldInstaller: Buffer | null, authorization: string | null) {
    // Differential when there is an installer to start from (in test mode its failures are thrown, not hidden by a full download).
    const { u, log, cache } = electronUpdater(NsisUpdater, dir, {
      name: cacheName,
      version: "1.0.0",
      url: base,
      platform: "win32",
      differential: oldInstaller !== null,
      authorization,
    });
    // The installer of the running version, where electron-updater keeps it after an update.
    if (oldInstaller) writeFileSync(join(cache, "installer.exe"), oldInstaller);
    return { u, log, pending: join(cache, "pending") };
  }

  test("reads latest.yml: the newest version, base64 SHA-512 and size as electron-builder's own tool computed them", async () => {
    const { u } = updater("check", null, `Bearer ${token}`);
    const result = await u.checkForUpdates();
    expect(result.isUpdateAvailable).toBe(true);
    const info = result.updateInfo;
    expect(info.version).toBe("1.1.0");
    expect(info.files).toEqual([{ url: "alpha-1.1.0-win-x64.exe", sha512: tool["1.1.0"]!.sha512, size: v2.length }]);
    expect(info.path).toBe("alpha-1.1.0-win-x64.exe");
    expect(info.sha512).toBe(tool["1.1.0"]!.sha512);
    expect(info.releaseDate).toBe("2026-10-01T00:00:00.000Z");
    expect(info.releaseNotes).toBe("Notes of 1.1.0");
    expect(info.stagingPercentage).toBeUndefined();
  });

  test("a differential update: both blockmaps, then only the changed blocks in ONE multi-range request; the file verifies", async () => {
    seen.length = 0;
    const { u, log, pending } = updater("differential", v1, `Bearer ${token}`);
    await u.checkForUpdates();
    const files: string[] = await u.downloadUpdate();
    expect(readFileSync(files[0]!).equals(v2)).toBe(true);
    expect(files[0]).toBe(join(pending, "alpha-1.1.0-win-x64.exe"));
    const installerRequests = seen.filter((r) => r.path.endsWith(".exe"));
    expect(installerRequests.length).toBe(1);
    const only = installerRequests[0]!;
    expect(only.status).toBe(206);
    const ranges = only.range!.replace(/^bytes=/, "").split(", ");
    expect(ranges.length).toBeGreaterThanOrEqual(2);
    const fetched = ranges.reduce((n, r) => n + Number(r.split("-")[1]) - Number(r.split("-")[0]) + 1, 0);
    expect(fetched).toBeLessThan(v2.length / 4);
    expect(seen.map((r) => r.path.split("/").at(-1))).toEqual([
      "latest.yml",
      "alpha-1.1.0-win-x64.exe.blockmap",
      "alpha-1.0.0-win-x64.exe.blockmap",
      "alpha-1.1.0-win-x64.exe",
    ]);
    expect(log.join("\n")).not.toContain("fallback to full download");
  });

  test("without a cached installer: one whole download, verified against the feed's sha512", async () => {
    seen.length = 0;
    const { u } = updater("full", null, `Bearer ${token}`);
    await u.checkForUpdates();
    const files: string[] = await u.downloadUpdate();
    expect(readFileSync(files[0]!).equals(v2)).toBe(true);
    const download = seen.find((r) => r.path.endsWith(".exe"))!;
    expect([download.status, download.range]).toEqual([200, null]);
  });

  test("without the token: the feed refuses, and electron-updater reports it", async () => {
    const { u } = updater("no-token", null, null);
    let error: Error | undefined;
    u.on("error", () => {});
    await u.checkForUpdates().catch((e: Error) => (error = e));
    expect(error?.message).toContain("401");
    expect(error?.message).toContain("entitlement_invalid");
  });
});
