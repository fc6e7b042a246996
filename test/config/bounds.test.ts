import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { decodeJwt } from "jose";
import { toConfig } from "../../src/config/config";
import { ConfigError } from "../../src/config/parse";
import { BASE_URL, createLicense, device, tempDir, testSite } from "../helpers";
import { runCli, siteArgs, siteDirs } from "../processes";

// Issue 13, item 8: "--token-ttl has no upper bound (with 999999999w every activation takes a seat
// then answers 500): refuse at start (exit 2 with one line naming the setting ...). Also check
// other durations/numbers in config for the same class of bug."

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configWith(settings: Record<string, string>) {
  return () => toConfig({ variant: "gamma", "base-url": BASE_URL, data: join(dir, "data"), ...settings }, "admin");
}

function refusal(settings: Record<string, string>): ConfigError {
  try {
    configWith(settings)();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(settings)}`);
}

test("serve --token-ttl 999999999w exits 2 with one line naming the setting", async () => {
  const dirs = siteDirs(join(dir, "site"), "gamma");
  const r = await runCli(["serve", ...siteArgs("gamma", dirs), "--port", "0", "--token-ttl", "999999999w"]);
  expect(r.code).toBe(2);
  expect(r.stderr.trim().split("\n")).toEqual([`keyturn: --token-ttl: must be at most 366d (got "999999999w")`]);
});

test("token-ttl: up to 366 days, and a token of that lifetime is issued and formatted", async () => {
  expect(configWith({ "token-ttl": "366d" })().tokenTtlSeconds).toBe(366 * 86400);
  for (const text of ["367d", "53w", "31622401s", "999999999w"]) expect(refusal({ "token-ttl": text }).setting).toBe("token-ttl");
  const site = await testSite("gamma", { settings: { "token-ttl": "366d" } });
  try {
    const { key } = await createLicense(site);
    const r = await site.request("POST", "/licenses/activate", { body: { key, device: device("gamma") } });
    expect(r.status).toBe(200);
    const { token, entitlement } = (await r.json()) as { token: string; entitlement: { expires: string } };
    expect(decodeJwt(token).exp! - decodeJwt(token).iat!).toBe(366 * 86400);
    expect(entitlement.expires).toBe("2027-11-22T12:00:00+00:00");
  } finally {
    await site.close();
  }
});

test("every other duration setting has a maximum, named in the refusal", () => {
  const cases: [string, string, string][] = [
    ["identity-max-age", "366d", "367d"],
    ["audit-retention", "3660d", "3661d"],
    ["shutdown-timeout", "1h", "3601s"],
    ["idle-timeout", "255s", "256s"],
    ["rate-limit-signin", "20/1d", "20/86401s"],
    ["rate-limit-api", "600/1d", "600/2d"],
  ];
  for (const [setting, max, over] of cases) {
    expect(configWith({ [setting]: max })).not.toThrow();
    const e = refusal({ [setting]: over });
    expect(e.setting).toBe(setting);
    expect(e.message).toContain("at most");
    expect(refusal({ [setting]: setting.startsWith("rate") ? "1/999999999w" : "999999999w" }).setting).toBe(setting);
  }
});

test("serve --help states the maxima", async () => {
  const r = await runCli(["serve", "--help"]);
  expect(r.stdout).toContain("lifetime of entitlement tokens, at most 366d");
  expect(r.stdout).toContain("at most 1h");
});
