import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";

/**
 * electron-updater's own code driven off Electron, as electron-builder's own tests drive it: an
 * AppAdapter instead of Electron's app, and an HttpExecutor whose createRequest is Node's
 * http.request instead of Electron's net (ElectronHttpExecutor's own download code is kept). Its
 * `electron` require is lazy, so this module loads before a test's mock.module("electron").
 */
const require = createRequire(import.meta.url);
const { ElectronHttpExecutor } = require("electron-updater/out/electronHttpExecutor");
const { appBuilderPath } = require("app-builder-bin");

class NodeHttpExecutor extends ElectronHttpExecutor {
  createRequest(options: RequestOptions, callback: (response: IncomingMessage) => void): ClientRequest {
    const request = httpRequest(options);
    request.on("response", callback);
    return request;
  }
}

/** app-builder, electron-builder's own blockmap generator, copied into `dir` (its package does not mark the binary executable). */
export function appBuilder(dir: string): string {
  const tool = join(dir, "app-builder");
  copyFileSync(appBuilderPath, tool);
  chmodSync(tool, 0o755);
  return tool;
}

export interface UpdaterOptions {
  /** The app's folder below `dir`, and its updater's cache name. */
  readonly name: string;
  readonly version: string;
  /** The generic provider's feed URL. */
  readonly url: string;
  /** electron-updater's platform: win32, darwin, linux. */
  readonly platform: string;
  /** Differential download (in test mode its failures are thrown, not hidden by a full download). */
  readonly differential: boolean;
  /** The Authorization header, or null for none. */
  readonly authorization: string | null;
}

/**
 * An updater of class `Kind` (NsisUpdater, AppImageUpdater, MacUpdater …) for the app `alpha` at
 * `version`, configured with app-update.yml on the feed URL as docs/releases.md configures it; what
 * it logs is kept in `log`. Its cache is `root`/cache/`name`.
 */
export function electronUpdater(Kind: any, dir: string, o: UpdaterOptions) {
  const root = join(dir, o.name);
  const config = join(root, "app-update.yml");
  mkdirSync(join(root, "cache", o.name), { recursive: true });
  writeFileSync(config, `provider: generic\nurl: ${o.url}\nupdaterCacheDirName: ${o.name}\n`);
  const app = {
    version: o.version,
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
  const u = new Kind(null, app);
  u.httpExecutor = new NodeHttpExecutor();
  u._testOnlyOptions = { platform: o.platform, isUseDifferentialDownload: o.differential };
  u.autoDownload = false;
  u.autoInstallOnAppQuit = false;
  const log: string[] = [];
  u.logger = { info: (m: unknown) => log.push(String(m)), warn: (m: unknown) => log.push(String(m)), error: (m: unknown) => log.push(String(m)), debug() {} };
  u.setFeedURL({ provider: "generic", url: o.url });
  if (o.authorization !== null) u.addAuthHeader(o.authorization);
  return { u, log, root, cache: join(root, "cache", o.name) };
}

/** keyturn (`handle`, its Elysia instance's) on a loopback port, each request told to `seen` with keyturn's answer. */
export function listen(handle: (request: Request) => Promise<Response>, seen: (request: Request, res: Response) => void): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const res = await handle(request);
      seen(request, res);
      return res;
    },
  });
}
