import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { readSettings, toConfig } from "../src/config/config";
import { envName, resolveSetting, settingDefault, SETTINGS } from "../src/config/settings";
import { tempDir } from "./helpers";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const EXAMPLE = join(import.meta.dir, "..", "releases.example");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function workdir(): string {
  const d = tempDir("keyturn-settings-");
  dirs.push(d);
  return d;
}

function paths(dir: string) {
  return { variant: "alpha", "base-url": "https://x.example", data: join(dir, "data"), keys: dir, releases: dir };
}

describe("SETTINGS is the one source of defaults", () => {
  test("toConfig given no value of a setting takes the table's default: the same Config as with every default spelled out", () => {
    const dir = workdir();
    const spelled: Record<string, string> = {};
    for (const s of SETTINGS) if (s.default !== undefined) spelled[s.flag] = s.default;
    const implicit = toConfig(paths(dir), "admin");
    const explicit = toConfig({ ...spelled, ...paths(dir) }, "admin");
    expect(implicit).toEqual(explicit);
    // and the defaults mean what the table says
    expect(implicit.port).toBe(Number(settingDefault("port")));
    expect(implicit.host).toBe(settingDefault("host"));
    expect(implicit.tokenTtlSeconds).toBe(7 * 86400);
    expect(implicit.rateLimit.signin).toEqual({ limit: 20, windowSeconds: 60 });
  });

  test("a default changed in the table changes the Config (no second copy behind it)", () => {
    const dir = workdir();
    const port = SETTINGS.find((s) => s.flag === "port")! as { default?: string };
    const before = port.default;
    try {
      port.default = "9191";
      expect(toConfig(paths(dir), "admin").port).toBe(9191);
      expect(readSettings([], {}).settings.port).toBe("9191");
    } finally {
      port.default = before;
    }
  });

  test("resolveSetting: flag over environment over file over default", () => {
    const env = { [envName("log-level")]: "warn" };
    const file = { "log-level": "error" };
    expect(resolveSetting("log-level", { given: "debug", env, file })).toBe("debug");
    expect(resolveSetting("log-level", { env, file })).toBe("warn");
    expect(resolveSetting("log-level", { env: {}, file })).toBe("error");
    expect(resolveSetting("log-level", { env: {} })).toBe("info");
    expect(resolveSetting("variant", { env: {} })).toBeUndefined();
    expect(() => resolveSetting("no-such-setting", { env: {} })).toThrow("no setting --no-such-setting");
    expect(() => settingDefault("variant")).toThrow("has no default");
  });
});

describe("keys generate and release check read KEYTURN_* through the table", () => {
  const run = (cwd: string, args: string[], env: Record<string, string>) => {
    const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd, env: { PATH: process.env.PATH ?? "", ...env } });
    return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
  };

  test("keys generate writes into KEYTURN_KEYS, and into the table's ./keys without it", () => {
    const cwd = workdir();
    const elsewhere = join(cwd, "elsewhere");
    const a = run(cwd, ["keys", "generate", "--kid", "alpha-license-2026-01", "--json"], { KEYTURN_VARIANT: "alpha", KEYTURN_KEYS: elsewhere });
    expect(a.code).toBe(0);
    expect(existsSync(join(elsewhere, "alpha-license-2026-01.pem"))).toBe(true);
    const b = run(cwd, ["keys", "generate", "--kid", "alpha-license-2026-02"], { KEYTURN_VARIANT: "alpha" });
    expect(b.code).toBe(0);
    expect(existsSync(join(cwd, settingDefault("keys"), "alpha-license-2026-02.pem"))).toBe(true);
  });

  test("release check takes the tree, the keys and the variant from KEYTURN_RELEASES, KEYTURN_KEYS and KEYTURN_VARIANT", () => {
    const cwd = workdir();
    const env = { KEYTURN_RELEASES: join(EXAMPLE, "gamma"), KEYTURN_KEYS: join(EXAMPLE, "keys"), KEYTURN_VARIANT: "gamma" };
    const ok = run(cwd, ["release", "check"], env);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("live");
    expect(ok.stdout).not.toContain("signatures not checked");
    // the variant from the environment is believed: alpha's rules on gamma's tree find problems
    const wrong = run(cwd, ["release", "check"], { ...env, KEYTURN_VARIANT: "alpha" });
    expect(wrong.code).not.toBe(0);
  });
});

describe("--base-url: the site's public origin", () => {
  test("https anywhere; plain http only on a loopback address; the demo's default is the address it serves", () => {
    const dir = workdir();
    const base = (url: string) => toConfig({ ...paths(dir), "base-url": url }, "admin").baseUrl;
    expect(base("https://updates.example.com/")).toBe("https://updates.example.com");
    for (const local of ["http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"]) expect(base(local)).toBe(local);
    for (const remote of ["http://updates.example.com", "http://10.0.0.5:8080", "http://0.0.0.0:8080"])
      expect(() => base(remote)).toThrow("must be an https URL");
    const demo = (extra: Record<string, string>) => toConfig({ data: join(dir, "data"), demo: "true", ...extra }, "serve").baseUrl;
    expect(demo({ port: "8081" })).toBe("http://127.0.0.1:8081");
    expect(demo({ port: "8081", host: "::1" })).toBe("http://[::1]:8081");
  });
});
