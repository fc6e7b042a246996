import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { toConfig } from "../src/config/config";
import { ConfigError } from "../src/config/parse";
import { VARIANTS, withLanes } from "../src/config/variants";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createAdminToken } from "../src/domain/admin/tokens";
import { parseManifest } from "../src/domain/releases/manifest";
import { ReleaseProblem } from "../src/domain/releases/problem";
import { createLicense, device, tempDir } from "./helpers";
import { releaseSite, ReleaseTree } from "./release-tree";

/**
 * design.md "Platforms and channels beyond the spec's": the spec's win-x64 and stable/preview are
 * the default; a site adds its own by --platforms and --channels, and every check follows the list.
 */
const LANES = { platforms: "win-x64,mac-arm64,linux-x64", channels: "stable,preview,beta" };

describe("--channels and --platforms", () => {
  const config = (settings: Record<string, string>) => toConfig({ variant: "alpha", "base-url": "https://x.example.com", data: "/tmp", ...settings }, "admin");

  test("default: exactly the spec's values", () => {
    const v = config({}).variant;
    expect([...v.channels]).toEqual(["stable", "preview"]);
    expect([...v.platforms]).toEqual(["win-x64"]);
    expect(v.manifestFile).toBe(VARIANTS.alpha.manifestFile);
  });

  test("a site's own lists replace them", () => {
    const v = config(LANES).variant;
    expect([...v.platforms]).toEqual(["win-x64", "mac-arm64", "linux-x64"]);
    expect([...v.channels]).toEqual(["stable", "preview", "beta"]);
  });

  test.each([
    ["platforms", "win-x64,Mac"],
    ["platforms", "win-x64,../etc"],
    ["platforms", "win_x64"],
    ["channels", "stable,stable"],
    ["channels", " , "],
    ["channels", Array.from({ length: 17 }, (_, i) => `c${i}`).join(",")],
    ["platforms", "a".repeat(33)],
  ])("--%s %s is refused, naming the setting", (flag, value) => {
    let caught: unknown;
    try {
      config({ [flag]: value });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).setting).toBe(flag);
  });
});

describe("manifests", () => {
  const bytes = (platform: string, channel = "stable") =>
    Buffer.from(
      JSON.stringify({
        product: "alpha",
        channel,
        platform,
        version: "1.0.0",
        released: "2026-10-01T00:00:00+00:00",
        installer: "a.zip",
        size: 1,
        sha256: "0".repeat(64),
      }),
    );
  test("mac-arm64 and beta are refused by the spec's lists, accepted by a site that configures them", () => {
    const site = withLanes(VARIANTS.alpha, { platforms: ["win-x64", "mac-arm64"], channels: ["stable", "beta"] });
    expect(() => parseManifest(bytes("mac-arm64"), VARIANTS.alpha, { product: "alpha", channel: "stable", platform: "mac-arm64" })).toThrow(
      new ReleaseProblem("manifest platform must be one of win-x64"),
    );
    expect(parseManifest(bytes("mac-arm64", "beta"), site, { product: "alpha", channel: "beta", platform: "mac-arm64" }).platform).toBe("mac-arm64");
    expect(() => parseManifest(bytes("win-x64", "preview"), site, { product: "alpha", channel: "preview", platform: "win-x64" })).toThrow(
      new ReleaseProblem("manifest channel must be one of stable, beta"),
    );
  });
});

describe.each([
  ["spec's defaults", {}],
  ["a site with its own lanes", LANES],
] as const)("a site with %s", (_name, settings) => {
  const configured = "platforms" in settings;
  let s: Awaited<ReturnType<typeof releaseSite>>;
  beforeAll(async () => {
    s = await releaseSite("alpha", { ...settings });
    s.tree.add({ version: "1.0.0" });
    s.tree.add({ version: "2.0.0", platform: "mac-arm64", installer: "alpha-2.0.0-mac-arm64.zip" });
    s.tree.add({ version: "3.0.0-beta.1", channel: "beta" });
    await s.holder.rescan();
  });
  afterAll(() => s.close());

  test("the scan: folders of other platforms and channels are live only when configured, else skipped with the reason", () => {
    const lanes = s.holder.current!.all.map((r) => `${r.manifest.channel}/${r.manifest.platform}`).sort();
    expect(lanes).toEqual(configured ? ["beta/win-x64", "stable/mac-arm64", "stable/win-x64"] : ["stable/win-x64"]);
    // Unconfigured directories are reported as not belonging to the tree.
    if (!configured) expect([...s.holder.skipped.keys()].sort()).toEqual(["alpha/beta", "alpha/stable/mac-arm64"]);
  });

  test("licences' channels (admin): beta only where configured", async () => {
    const create = () => createLicense(s.site, { channels: ["stable", "beta"] });
    if (configured) expect((await create()).license.channels).toEqual(["stable", "beta"]);
    else await expect(create()).rejects.toThrow("channels must be among stable, preview");
  });

  test("activation's device.platform and the update path follow the list", async () => {
    const { key } = await createLicense(s.site, { channels: configured ? ["stable", "beta"] : ["stable"], seats: 5 });
    const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: device("alpha", { platform: "mac-arm64" }) } });
    if (!configured) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { message: string }).message).toBe("device.platform must be one of: win-x64.");
      expect((await s.site.request("GET", "/updates/alpha/stable/mac-arm64/alpha-update.json", { token: await s.token(["stable"]) })).status).toBe(404);
      return;
    }
    expect(res.status).toBe(200);
    const { token } = (await res.json()) as { token: string };
    const mac = await s.site.request("GET", "/updates/alpha/stable/mac-arm64/alpha-update.json", { token });
    expect(mac.status).toBe(200);
    expect(((await mac.json()) as { version: string }).version).toBe("2.0.0");
    const zip = await s.site.request("GET", "/updates/alpha/stable/mac-arm64/alpha-2.0.0-mac-arm64.zip", { token });
    expect(zip.status).toBe(200);
    const beta = await s.site.request("GET", "/updates/alpha/beta/win-x64/alpha-update.json", { token });
    expect(((await beta.json()) as { version: string }).version).toBe("3.0.0-beta.1");
    // A configured channel the licence does not carry: the spec's refusal.
    const preview = await s.site.request("GET", "/updates/alpha/preview/win-x64/alpha-update.json", { token });
    expect(preview.status).toBe(403);
    expect(((await preview.json()) as { error: string }).error).toBe("channel_not_allowed");
  });

  test("rollout controls take a configured lane, refuse another", async () => {
    const { secret } = await createAdminToken(s.site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["releases:write"] });
    const res = await s.site.request("POST", `/admin/releases/${encodeURIComponent("alpha/stable/mac-arm64")}/2.0.0/halt`, { token: secret });
    const body = (await res.json()) as { changed?: boolean; message?: string };
    if (configured) expect([res.status, body.changed]).toEqual([200, true]);
    else expect([res.status, body.message]).toEqual([400, "lane must be product/channel/platform of alpha."]);
  });
});

describe("keyturn license create: the licence's --channels among the site's (KEYTURN_CHANNELS)", () => {
  test("beta is refused by default and accepted where the site lists it; the command's --channels is the licence's, not the site's", () => {
    const dir = tempDir("keyturn-lanes-cli-");
    try {
      const create = (env: Record<string, string>) =>
        Bun.spawnSync(
          [
            process.execPath,
            resolve(import.meta.dir, "../src/main.ts"),
            "license",
            "create",
            "--licensee",
            "Ada",
            "--organization",
            "Engines",
            "--plan",
            "pro",
            "--plan-title",
            "Pro",
            "--seats",
            "2",
            "--channels",
            "stable,beta",
            "--json",
          ],
          { cwd: dir, env: { PATH: process.env.PATH ?? "", KEYTURN_VARIANT: "alpha", ...env } },
        );
      const refused = create({});
      expect(refused.exitCode).toBeGreaterThan(0);
      expect(refused.stderr.toString()).toContain("channels must be among stable, preview");
      const made = create({ KEYTURN_CHANNELS: "stable,preview,beta" });
      expect(made.stderr.toString()).toBe("");
      expect(JSON.parse(made.stdout.toString()).channels).toEqual(["stable", "beta"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("keyturn release sign|check", () => {
  const ROOT = resolve(import.meta.dir, "..");
  const tree = new ReleaseTree("gamma");
  afterAll(() => tree.remove());
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), ...args], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, KEYTURN_VARIANT: undefined, KEYTURN_PLATFORMS: undefined, KEYTURN_CHANNELS: undefined, ...env },
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  };

  test("sign refuses a linux-x64 manifest by default and signs it with --platforms; check reads KEYTURN_PLATFORMS", async () => {
    const r = tree.add({ version: "1.0.0", platform: "linux-x64", installer: "gamma-1.0.0.AppImage", sign: false });
    const refused = await run(["release", "sign", "--key", tree.privateKeyFile, r.manifestPath]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("not signed");
    const signed = await run(["release", "sign", "--key", tree.privateKeyFile, "--platforms", "win-x64,linux-x64", r.manifestPath]);
    expect(signed.stderr).toBe("");
    expect(signed.code).toBe(0);
    expect(readFileSync(`${r.manifestPath}.sig`, "utf8")).toStartWith("ey");
    mkdirSync(join(tree.root, "stable", "win-x64"), { recursive: true });
    const checkDefault = await run(["release", "check", "--releases", tree.root, "--keys", tree.keysDir, "--variant", "gamma"]);
    expect(checkDefault.code).toBe(1);
    const check = await run(["release", "check", "--releases", tree.root, "--keys", tree.keysDir, "--variant", "gamma"], {
      KEYTURN_PLATFORMS: "win-x64,linux-x64",
    });
    expect(check.stdout).toContain("live     stable/linux-x64/1.0.0  (1.0.0)");
    expect(check.code).toBe(0);
    const bad = await run(["release", "check", "--releases", tree.root, "--variant", "gamma", "--platforms", "Linux"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--platforms");
    rmSync(join(tree.root, "stable", "win-x64"), { recursive: true });
  });
});
