import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readSettings, toConfig } from "../../src/config/config";
import { BASE_URL, createLicense, device, deviceHash, tempDir } from "../helpers";
import { releaseSite, type WrittenRelease } from "../release-tree";
import { squirrelMacCheck } from "./squirrel-clients";

const bytesOf = async (r: Response) => Buffer.from(await r.arrayBuffer());
const WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

describe("--public-lanes", () => {
  test("names product/channel of the site (gamma: channel), each once", () => {
    const base = { variant: "alpha", "base-url": "https://x.example.com", data: "/tmp" };
    expect(toConfig({ ...base, "public-lanes": "alpha/preview, alpha-cli/stable" }, "admin").publicLanes).toEqual(["alpha/preview", "alpha-cli/stable"]);
    expect(() => toConfig({ ...base, "public-lanes": "alpha/nightly" }, "admin")).toThrow('"alpha/nightly" is not product/channel');
    expect(() => toConfig({ ...base, "public-lanes": "preview" }, "admin")).toThrow("is not product/channel");
    expect(() => toConfig({ ...base, "public-lanes": "alpha/preview,alpha/preview" }, "admin")).toThrow("names a lane twice");
    expect(toConfig({ ...base, variant: "gamma", "public-lanes": "preview" }, "admin").publicLanes).toEqual(["preview"]);
    expect(toConfig(base, "admin").publicLanes).toEqual([]);
  });

  test('the TOML file takes a list: public-lanes = ["alpha/preview", "alpha-cli/stable"]', () => {
    const file = join(tempDir(), "keyturn.toml");
    writeFileSync(file, 'variant = "alpha"\npublic-lanes = ["alpha/preview", "alpha-cli/stable"]\n');
    const { settings } = readSettings(["--config", file, "--base-url", "https://x.example.com", "--data", tempDir()], {});
    expect(toConfig(settings, "admin").publicLanes).toEqual(["alpha/preview", "alpha-cli/stable"]);
  });
});

describe("a public lane (alpha/preview) beside a private one (alpha/stable)", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  const r: Record<string, WrittenRelease> = {};
  const get = (path: string, o: { token?: string; headers?: Record<string, string> } = {}) => s.site.request("GET", path, o);
  const error = async (res: Response) => [res.status, ((await res.json()) as { error: string }).error];
  const manifestVersion = async (res: Response) => ((await res.json()) as { version: string }).version;

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,mac-arm64,linux-x64", "public-lanes": "alpha/preview" });
    r.base = s.tree.add({ version: "1.0.0", channel: "preview", released: "2026-10-01T00:00:00+00:00" });
    r.staged = s.tree.add({ version: "1.1.0", channel: "preview", released: "2026-10-02T00:00:00+00:00", fields: { rollout: { percent: 50 } } });
    r.mac = s.tree.add({ version: "1.0.0", channel: "preview", platform: "mac-arm64", installer: "alpha-1.0.0-mac-arm64.zip", fields: { notes: "Mac trial" } });
    r.linux = s.tree.add({ version: "1.0.0", channel: "preview", platform: "linux-x64", installer: "alpha-1.0.0-linux-x64.AppImage" });
    r.private = s.tree.add({ version: "2.0.0", channel: "stable", released: "2026-10-03T00:00:00+00:00" });
    await s.holder.rescan();
  });
  afterAll(() => s.close());

  test("without a bearer: the manifest and its .sig are the signed bytes a licence holder gets, and the installer downloads", async () => {
    const lane = "/updates/alpha/preview/win-x64";
    const anonymous = await get(`${lane}/alpha-update.json`);
    expect(anonymous.status).toBe(200);
    const token = await s.token(["preview"]);
    const sig = await (await get(`${lane}/alpha-update.json.sig`)).text();
    expect(sig).toBe(readFileSync(`${r.base!.manifestPath}.sig`, "utf8"));
    expect(sig).toBe(await (await get(`${lane}/alpha-update.json.sig?version=1.0.0`, { token })).text());
    // With no device hash, only releases rolled out to everyone: 1.0.0, never the 50 % 1.1.0.
    expect(await manifestVersion(anonymous)).toBe("1.0.0");
    const installer = await get(`${lane}/${r.base!.installer}`);
    expect((await bytesOf(installer)).equals(Buffer.from(r.base!.installerBytes))).toBe(true);
    expect(await error(await get(`${lane}/${r.staged!.installer}`))).toEqual([404, "not_found"]);
  });

  test("the private lane still refuses without a bearer: manifest, installer, every feed", async () => {
    for (const path of [
      "/updates/alpha/stable/win-x64/alpha-update.json",
      `/updates/alpha/stable/win-x64/${r.private!.installer}`,
      "/feeds/electron/alpha/stable/latest.yml",
      "/feeds/tauri/alpha/stable/windows/x86_64/0.1.0",
      "/feeds/squirrel-mac/alpha/stable/mac-arm64/0.1.0",
      "/releases",
    ])
      expect([path, ...(await error(await get(path)))]).toEqual([path, 401, "entitlement_invalid"]);
    // Another product's preview is not public either.
    expect(await error(await get("/updates/alpha-cli/preview/win-x64/alpha-update.json"))).toEqual([401, "entitlement_invalid"]);
  });

  test("rollouts admit a visitor by the device hash it sends (header or ?device=) exactly as they admit an installation with that hash", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 16; i++) {
      const hash = deviceHash("alpha");
      const { key } = await createLicense(s.site, { channels: ["preview"] });
      const activated = await s.site.request("POST", "/licenses/activate", { body: { key, device: { ...device("alpha"), hash } } });
      const { token } = (await activated.json()) as { token: string };
      const byToken = await manifestVersion(await get("/updates/alpha/preview/win-x64/alpha-update.json", { token }));
      const byHeader = await manifestVersion(await get("/updates/alpha/preview/win-x64/alpha-update.json", { headers: { "keyturn-device": hash } }));
      const byQuery = await manifestVersion(await get(`/updates/alpha/preview/win-x64/alpha-update.json?device=${hash}`));
      expect([byHeader, byQuery]).toEqual([byToken, byToken]);
      seen.add(byToken);
    }
    // 16 installations at 50 %: both releases are served (all on one side: 2^-15).
    expect([...seen].sort()).toEqual(["1.0.0", "1.1.0"]);
    expect(await error(await get("/updates/alpha/preview/win-x64/alpha-update.json", { headers: { "keyturn-device": "short" } }))).toEqual([
      400,
      "invalid_request",
    ]);
    expect(await error(await get("/updates/alpha/preview/win-x64/alpha-update.json?device=a&device=b"))).toEqual([400, "invalid_request"]);
  });

  test("the feeds answer without a bearer on the public lane: electron-updater's channel file, Tauri, Squirrel.Mac (its url downloads with no header at all)", async () => {
    const yml = await (await get("/feeds/electron/alpha/preview/latest.yml")).text();
    expect(yml).toContain('version: "1.0.0"');
    const installer = await get(`/feeds/electron/alpha/preview/${r.base!.installer}`);
    expect(installer.status).toBe(200);
    expect((await get("/feeds/tauri/alpha/preview/windows/x86_64/0.1.0")).status).toBe(204); // no Tauri signature: not offered to Tauri
    const update = (await squirrelMacCheck(await get("/feeds/squirrel-mac/alpha/preview/mac-arm64/0.1.0")))!;
    expect(update.updateURL.href).toBe(`${BASE_URL}/api/v1/updates/alpha/preview/mac-arm64/alpha-1.0.0-mac-arm64.zip`);
    expect(update.releaseNotes).toBe("Mac trial");
    const zip = await get(update.updateURL.href.slice(`${BASE_URL}/api/v1`.length));
    expect((await bytesOf(zip)).equals(Buffer.from(r.mac!.installerBytes))).toBe(true);
    // A bearer sent on a public lane is checked as anywhere: a bad one is refused.
    expect(await error(await get("/feeds/electron/alpha/preview/latest.yml", { token: "a.b.c" }))).toEqual([401, "entitlement_invalid"]);
  });

  test("/download/alpha/preview: the visitor's platform from its User-Agent first, the others listed; each link downloads without a token; a private lane has no page", async () => {
    const page = async (agent: string) => {
      const res = await s.site.app.handle(new Request("http://localhost/download/alpha/preview", { headers: { "user-agent": agent } }));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("text/html");
      return res.text();
    };
    const windows = await page(WINDOWS);
    const primary = (html: string) => /id="download" href="([^"]+)"[^>]*data-platform="([^"]+)"/.exec(html);
    expect(primary(windows)?.slice(1)).toEqual([`/api/v1/updates/alpha/preview/win-x64/${r.base!.installer}`, "win-x64"]);
    expect([...windows.matchAll(/<li><a href="[^"]+" download data-platform="([^"]+)"/g)].map((m) => m[1])).toEqual(["mac-arm64", "linux-x64"]);
    expect(primary(await page(MAC))?.[2]).toBe("mac-arm64");
    const other = await page("curl/8.0");
    expect(primary(other)).toBeNull();
    expect([...other.matchAll(/data-platform="([^"]+)"/g)].map((m) => m[1])).toEqual(["win-x64", "mac-arm64", "linux-x64"]);
    const link = primary(windows)![1]!;
    const download = await s.site.app.handle(new Request(`http://localhost${link}`));
    expect((await bytesOf(download)).equals(Buffer.from(r.base!.installerBytes))).toBe(true);
    const privatePage = await s.site.app.handle(new Request("http://localhost/download/alpha/stable", { headers: { "user-agent": WINDOWS } }));
    expect(privatePage.status).toBe(404);
    expect(await privatePage.text()).toContain("There is no public download here.");
  });
});

describe("gamma (no products): --public-lanes preview", () => {
  test("its preview lane answers without a bearer at /updates/preview/… and /download/preview; stable refuses", async () => {
    const s = await releaseSite("gamma", { "public-lanes": "preview" });
    try {
      const preview = s.tree.add({ version: "1.0.0", channel: "preview" });
      s.tree.add({ version: "1.0.0", channel: "stable" });
      await s.holder.rescan();
      const manifest = await s.site.request("GET", "/updates/preview/win-x64/gamma-update.json");
      expect(Buffer.from(await manifest.arrayBuffer()).equals(preview.manifestBytes)).toBe(true);
      expect((await s.site.request("GET", "/updates/stable/win-x64/gamma-update.json")).status).toBe(401);
      const page = await s.site.app.handle(new Request("http://localhost/download/preview", { headers: { "user-agent": WINDOWS } }));
      expect(await page.text()).toContain(`href="/api/v1/updates/preview/win-x64/${preview.installer}"`);
      expect((await s.site.app.handle(new Request("http://localhost/download/stable"))).status).toBe(404);
    } finally {
      await s.close();
    }
  });
});
