import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { importSPKI, jwtVerify } from "jose";
import { device, tempDir } from "./helpers";
import { freePort } from "./processes";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function workdir(): string {
  const d = tempDir("keyturn-cli-");
  dirs.push(d);
  return d;
}

/** Runs `keyturn ...` from source in `cwd` as a real process. */
function keyturn(cwd: string, args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd, env: { PATH: process.env.PATH ?? "", ...env } });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

const LICENSE = ["--licensee", "Ada", "--organization", "Engines", "--plan", "pro", "--plan-title", "Pro", "--seats", "2", "--channels", "stable,preview"];

describe("bad settings stop keyturn with exit code 2 and one line naming the setting", () => {
  const cwd = workdir();
  const cases: Array<[string[], Record<string, string>, string]> = [
    [["serve", "--variant", "delta", "--base-url", "https://x.example"], {}, "--variant"],
    [["serve", "--variant", "alpha", "--base-url", "http://x.example"], {}, "--base-url"],
    [["serve", "--variant", "alpha", "--base-url", "https://x.example", "--keys", "/nonexistent/keys"], {}, "--keys"],
    [["serve", "--variant", "alpha", "--base-url", "https://x.example", "--token-ttl", "7 days"], {}, "--token-ttl"],
    [["serve", "--base-url", "https://x.example"], { KEYTURN_VARIANT: "omega" }, "--variant"],
    [["serve", "--variant", "alpha", "--base-url", "https://x.example", "--bogus"], {}, "--arguments"],
    [["serve", "--variant", "alpha", "--base-url", "https://x.example", "--host", "0.0.0.0"], {}, "--host"],
    [["serve", "--variant", "alpha", "--base-url", "https://x.example", "--trust-proxy", "10.0.0.0/8,1:2"], {}, "--trust-proxy"],
    [["serve", "--variant", "alpha", "--base-url", "https://x.example", "--trust-proxy", ":::"], {}, "--trust-proxy"],
  ];
  for (const [args, env, setting] of cases)
    test(`${args.slice(1).join(" ")} ${JSON.stringify(env)}`, () => {
      // readable defaults first; a case's own flag comes later and wins
      const r = keyturn(cwd, [args[0]!, "--keys", cwd, "--releases", cwd, ...args.slice(1)], env);
      expect(r.code).toBe(2);
      const lines = r.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(`keyturn: ${setting}`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    });

  test("a TOML file is read, and flags win over environment over file", () => {
    const file = join(cwd, "keyturn.toml");
    writeFileSync(file, `variant = "alpha"\nbase-url = "https://from-file.example"\ntoken-ttl = "nonsense"\n`);
    // the file's bad token-ttl is reported…
    expect(keyturn(cwd, ["serve", "--config", file, "--keys", cwd, "--releases", cwd]).stderr).toStartWith("keyturn: --token-ttl");
    // …unless the environment overrides it, and then a flag overrides the environment's bad variant
    const r = keyturn(cwd, ["serve", "--config", file, "--keys", cwd, "--releases", cwd, "--variant", "zzz"], { KEYTURN_TOKEN_TTL: "1d" });
    expect(r.stderr).toStartWith('keyturn: --variant: unknown variant "zzz"');
  });
});

describe("keys generate", () => {
  test("writes a P-256 PKCS#8 PEM with mode 0600, prints kid and SPKI; refuses to overwrite", async () => {
    const cwd = workdir();
    const r = keyturn(cwd, ["keys", "generate", "--variant", "gamma", "--kid", "gamma-license-2026-09", "--keys", "k", "--json"]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.kid).toBe("gamma-license-2026-09");
    const pem = readFileSync(join(cwd, "k", "gamma-license-2026-09.pem"), "utf8");
    expect(pem).toStartWith("-----BEGIN PRIVATE KEY-----");
    expect(statSync(join(cwd, "k", "gamma-license-2026-09.pem")).mode & 0o777).toBe(0o600);
    // the printed SPKI is the public half: DER SubjectPublicKeyInfo of a P-256 key
    const key = await crypto.subtle.importKey("spki", Buffer.from(out.spki, "base64"), { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]);
    expect(key.algorithm).toMatchObject({ name: "ECDSA", namedCurve: "P-256" });
    const again = keyturn(cwd, ["keys", "generate", "--variant", "gamma", "--kid", "gamma-license-2026-09", "--keys", "k"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already exists");
    expect(readFileSync(join(cwd, "k", "gamma-license-2026-09.pem"), "utf8")).toBe(pem);
  });

  test("a kid of another variant or purpose is a usage error", () => {
    const r = keyturn(workdir(), ["keys", "generate", "--variant", "alpha", "--kid", "beta-license-2026-10"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage: keyturn keys generate");
  });
});

describe("license and activation commands", () => {
  test("create prints the key once; list, show, revoke; bad arguments exit 2 with a usage line", () => {
    const cwd = workdir();
    const env = { KEYTURN_VARIANT: "alpha" };
    const created = keyturn(cwd, ["license", "create", ...LICENSE, "--json"], env);
    expect(created.code).toBe(0);
    const lic = JSON.parse(created.stdout);
    expect(lic.key).toMatch(/^AL(-[0-9A-HJKMNP-TV-Z]{5}){5}$/);
    expect(lic.id).toMatch(/^lic_/);
    expect(lic.seats).toBe(2);
    // the key is stored hashed: it appears nowhere in the records
    const db = readFileSync(join(cwd, "data", "keyturn.sqlite"));
    expect(db.includes(Buffer.from(lic.key))).toBe(false);

    const list = JSON.parse(keyturn(cwd, ["license", "list", "--json"], env).stdout);
    expect(list.licenses.map((l: any) => l.id)).toEqual([lic.id]);
    expect(JSON.stringify(list)).not.toContain(lic.key);
    const shown = JSON.parse(keyturn(cwd, ["license", "show", lic.key.toLowerCase(), "--json"], env).stdout);
    expect(shown).toMatchObject({ id: lic.id, seats: { used: 0, total: 2 }, revoked: null });
    const revoked = keyturn(cwd, ["license", "revoke", lic.id, "--json"], env);
    expect(JSON.parse(revoked.stdout).revoked).toMatch(/\+00:00$/);
    expect(keyturn(cwd, ["license", "revoke", lic.id], env).code).toBe(1);

    for (const bad of [
      ["license"],
      ["license", "create", "--seats", "2"],
      ["license", "create", ...LICENSE.slice(0, -2), "--channels", "nightly"],
      ["license", "frobnicate"],
      ["license", "show"],
    ]) {
      const r = keyturn(cwd, bad, env);
      expect(r.code).toBeGreaterThan(0);
      expect(r.stderr).toMatch(/^keyturn: /);
    }
    expect(keyturn(cwd, ["license", "create", "--seats", "2"], env).stderr).toContain("usage: keyturn license create");
  });

  test("admin commands work while serve runs on the same data: deactivation applies at once", async () => {
    const cwd = workdir();
    const env = { KEYTURN_VARIANT: "beta" };
    expect(keyturn(cwd, ["keys", "generate", "--variant", "beta", "--kid", "beta-license-2026-10"]).code).toBe(0);
    const lic = JSON.parse(keyturn(cwd, ["license", "create", ...LICENSE, "--json"], env).stdout);
    const port = await freePort();
    const server = Bun.spawn([process.execPath, MAIN, "serve", "--base-url", "https://licenses.example.com", "--port", String(port), "--releases", "."], {
      cwd,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const url = `http://127.0.0.1:${port}/api/v1`;
      await answering(url + "/licenses/activate", server);
      const d = device("beta");
      const activated = (await (
        await fetch(url + "/licenses/activate", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key: lic.key, device: d }),
        })
      ).json()) as any;
      expect(activated.ok).toBe(true);
      // the program verifies the token itself with the public key
      const pub = await importSPKI(readFileSync(join(cwd, "keys", "beta-license-2026-10.pub.pem"), "utf8"), "ES256");
      await jwtVerify(activated.token, pub, { audience: "beta", typ: "be-ent+jwt" });

      const list = JSON.parse(keyturn(cwd, ["activation", "list", "--license", lic.key, "--json"], env).stdout);
      expect(list.activations).toHaveLength(1);
      expect(list.activations[0]).toMatchObject({ id: activated.entitlement.id, product: "beta", deactivated: null });
      const current = () => fetch(url + "/entitlements/current", { headers: { authorization: `Bearer ${activated.token}` } });
      expect((await current()).status).toBe(200);
      const off = keyturn(cwd, ["activation", "deactivate", activated.entitlement.id, "--json"], env);
      expect(off.code).toBe(0);
      const after = await current();
      expect(after.status).toBe(401);
      expect(((await after.json()) as any).error).toBe("entitlement_revoked");
    } finally {
      server.kill();
      await server.exited;
    }
  });
});

/**
 * Resolves once `url` answers; fails at once, with the server's stderr, if the server exits first.
 * The minute only ends a hang: a busy runner may take seconds to start a server from the sources.
 */
async function answering(url: string, server: Bun.Subprocess<"ignore" | "pipe" | "inherit", "pipe", "pipe">): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    if (server.exitCode !== null) throw new Error(`the server exited (${server.exitCode}): ${await new Response(server.stderr).text()}`);
    try {
      await fetch(url);
      return;
    } catch {
      await Bun.sleep(50);
    }
  }
  throw new Error(`server at ${url} did not answer within a minute`);
}

test('--version prints the package version, from the sources with the build "source"', () => {
  const r = keyturn(workdir(), ["--version"]);
  expect(r.stdout.trim()).toBe(`keyturn ${JSON.parse(readFileSync(join(import.meta.dir, "..", "package.json"), "utf8")).version}+source`);
  expect(existsSync(MAIN)).toBe(true);
});
