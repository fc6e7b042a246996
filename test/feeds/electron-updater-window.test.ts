import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createApp } from "../../src/http/app";
import { createLicense, device, tempDir } from "../helpers";
import { releaseSite } from "../release-tree";

/**
 * The maintenance window through electron-updater's own code (NsisUpdater, GenericProvider,
 * builder-util-runtime's download and sha512 check), as test/feeds/electron-updater.test.ts drives
 * it: a perpetual licence whose updates ended before 1.1.0 was released is offered 1.0.0, and
 * downloads and verifies it; the same program with a licence in its window is offered 1.1.0.
 */
const require = createRequire(import.meta.url);
const { NsisUpdater } = require("electron-updater/out/NsisUpdater");
const { ElectronHttpExecutor } = require("electron-updater/out/electronHttpExecutor");

class NodeHttpExecutor extends ElectronHttpExecutor {
  createRequest(options: RequestOptions, callback: (response: IncomingMessage) => void): ClientRequest {
    const request = httpRequest(options);
    request.on("response", callback);
    return request;
  }
}

const dir = tempDir("keyturn-electron-window-");

describe("electron-updater and a licence's maintenance window", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let server: ReturnType<typeof Bun.serve>;
  let base: string;
  const tokens: Record<string, string> = {};
  const installers: Record<string, Buffer> = {};
  const seen: { path: string; status: number }[] = [];

  beforeAll(async () => {
    s = await releaseSite("alpha");
    for (const [version, released] of [
      ["1.0.0", "2026-09-01T00:00:00+00:00"],
      ["1.1.0", "2026-10-01T00:00:00+00:00"],
    ] as const) {
      installers[version] = Buffer.from(crypto.getRandomValues(new Uint8Array(200_000)));
      s.tree.add({
        version,
        released,
        installer: `alpha-${version}-win-x64.exe`,
        installerBytes: installers[version],
        fields: { notes: `Notes of ${version}` },
      });
    }
    await s.holder.rescan();
    await s.holder.verified();
    for (const [who, extra] of [
      ["perpetual", { expires: null, updatesUntil: "2026-09-15T00:00:00Z" }],
      ["current", { expires: null, updatesUntil: "2027-09-15T00:00:00Z" }],
    ] as const) {
      const { key } = await createLicense(s.site, { channels: ["stable"], ...extra });
      const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
      tokens[who] = ((await res.json()) as { token: string }).token;
    }
    const app = createApp(s.site.composed.services);
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (request) => {
        const res = await app.handle(request);
        seen.push({ path: new URL(request.url).pathname, status: res.status });
        return res;
      },
    });
    base = `http://127.0.0.1:${server.port}/api/v1/feeds/electron/alpha/stable`;
  });
  afterAll(async () => {
    await server.stop(true);
    await s.close();
  });

  function updater(cacheName: string, version: string, token: string) {
    const root = join(dir, cacheName);
    const config = join(root, "app-update.yml");
    mkdirSync(join(root, "cache", cacheName), { recursive: true });
    writeFileSync(config, `provider: generic\nurl: ${base}\nupdaterCacheDirName: ${cacheName}\n`);
    const app = {
      version,
      name: "alpha",
      isPackaged: true,
      appUpdateConfigPath: config,
      userDataPath: join(root, "user-data"),
      baseCachePath: join(root, "cache"),
      whenReady: () => Promise.resolve(),
      relaunch() {},
      quit() {},
      onQuit() {},
    };
    const u = new NsisUpdater(null, app);
    u.httpExecutor = new NodeHttpExecutor();
    u._testOnlyOptions = { platform: "win32", isUseDifferentialDownload: false };
    u.autoDownload = false;
    u.logger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };
    u.setFeedURL({ provider: "generic", url: base });
    u.addAuthHeader(`Bearer ${token}`);
    return u;
  }

  test("a licence whose updates ended before 1.1.0: offered 1.0.0, which it downloads and verifies", async () => {
    seen.length = 0;
    const u = updater("perpetual", "0.9.0", tokens.perpetual!);
    const result = await u.checkForUpdates();
    expect(result.isUpdateAvailable).toBe(true);
    expect(result.updateInfo.version).toBe("1.0.0");
    expect(result.updateInfo.releaseNotes).toBe("Notes of 1.0.0");
    const files: string[] = await u.downloadUpdate();
    expect(readFileSync(files[0]!).equals(installers["1.0.0"]!)).toBe(true);
    expect(seen.map((r) => `${r.path.split("/").at(-1)} ${r.status}`)).toEqual(["latest.yml 200", "alpha-1.0.0-win-x64.exe 200"]);
  });

  test("the same licence already on 1.0.0: no update (1.1.0 is not offered)", async () => {
    const result = await updater("perpetual-on-1.0", "1.0.0", tokens.perpetual!).checkForUpdates();
    expect(result.isUpdateAvailable).toBe(false);
  });

  test("a licence within its window: offered 1.1.0", async () => {
    const u = updater("current", "1.0.0", tokens.current!);
    const result = await u.checkForUpdates();
    expect(result.updateInfo.version).toBe("1.1.0");
    const files: string[] = await u.downloadUpdate();
    expect(readFileSync(files[0]!).equals(installers["1.1.0"]!)).toBe(true);
  });
});
