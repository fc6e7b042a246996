/** The operator files in deploy/ are what keyturn and systemd actually accept. */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readSettings, toConfig } from "../src/config/config";
import { tempDir } from "./helpers";

const DEPLOY = join(import.meta.dir, "..", "deploy");
const toml = readFileSync(join(DEPLOY, "keyturn.toml"), "utf8");
const unit = readFileSync(join(DEPLOY, "keyturn.service"), "utf8");
const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The machine paths of the example, swapped for this test's own (flags win over the file). */
function localPaths(): string[] {
  for (const d of ["data", "keys", "releases"]) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, "cert.pem"), "");
  return ["--data", join(root, "data"), "--keys", join(root, "keys"), "--releases", join(root, "releases")];
}

function unitValues(key: string): string[] {
  return [...unit.matchAll(new RegExp(`^${key}=(.*)$`, "gm"))].map((m) => m[1]!.trim());
}

test("keyturn.toml passes keyturn's own config loader for serve", () => {
  const file = join(root, "keyturn.toml");
  writeFileSync(file, toml);
  const read = readSettings(["--config", file], {});
  expect(read.settings).toMatchObject({ data: "/var/lib/keyturn", keys: "/etc/keyturn/keys", releases: "/srv/keyturn/releases" });

  const cert = join(root, "cert.pem");
  const config = toConfig(readSettings(["--config", file, ...localPaths(), "--tls-cert", cert, "--tls-key", cert], {}).settings, "serve");
  expect(config.variant.name).toBe("alpha");
  expect(config.baseUrl).toBe("https://licenses.example.com");
  expect(config).toMatchObject({ host: "0.0.0.0", port: 8443, tls: { certFile: cert, keyFile: cert }, logFormat: "json", logLevel: "info" });
  expect(config.tokenTtlSeconds).toBe(7 * 86400);
  expect(config.auditRetentionSeconds).toBe(90 * 86400);
  expect(config.rateLimit.signin).toEqual({ limit: 20, windowSeconds: 60 });
  expect(config.rateLimit.api).toEqual({ limit: 600, windowSeconds: 60 });
});

test("the proxy alternative written in keyturn.toml's comments parses too", () => {
  const proxied = toml
    .split("\n")
    .filter((l) => !l.startsWith("tls-") && !/^(host|port) =/.test(l))
    .map((l) => l.replace(/^#   /, ""))
    .join("\n");
  const file = join(root, "proxied.toml");
  writeFileSync(file, proxied);
  const config = toConfig(readSettings(["--config", file, ...localPaths()], {}).settings, "serve");
  expect(config).toMatchObject({ host: "127.0.0.1", port: 8080, tls: null, trustProxy: ["127.0.0.1/32", "::1/128"] });
});

test("keyturn.service runs keyturn unprivileged and sandboxed, on the example's paths", () => {
  expect(unitValues("ExecStart")).toEqual(["/usr/local/bin/keyturn serve --config /etc/keyturn/keyturn.toml"]);
  expect(unitValues("ExecReload")).toEqual(["/bin/kill -HUP $MAINPID"]);
  expect(unitValues("User")).toEqual(["keyturn"]);
  const data = /^data = "(.*)"$/m.exec(toml)![1]!;
  const releases = /^releases = "(.*)"$/m.exec(toml)![1]!;
  // The records, and the tree that release push publishes into (docs/releasing-from-ci.md).
  // The tree's "-": the service starts before the tree is made.
  expect(unitValues("ReadWritePaths")).toEqual([data, `-${releases}`]);
  expect(unitValues("StateDirectory").map((d) => `/var/lib/${d}`)).toEqual([data]);
  for (const [key, value] of [
    ["NoNewPrivileges", "yes"],
    ["CapabilityBoundingSet", ""],
    ["AmbientCapabilities", ""],
    ["ProtectSystem", "strict"],
    ["ProtectHome", "yes"],
    ["PrivateTmp", "yes"],
    ["PrivateDevices", "yes"],
    ["RestrictSUIDSGID", "yes"],
    ["KillSignal", "SIGTERM"],
  ] as const)
    expect([key, unitValues(key)]).toEqual([key, [value]]);
});

test.skipIf(!Bun.which("systemd-analyze"))("systemd accepts every line of keyturn.service", async () => {
  // verify also wants the executable to exist; the rest of the unit is checked as written.
  const file = join(root, "keyturn.service");
  writeFileSync(file, unit.replace("/usr/local/bin/keyturn ", `${Bun.which("true")} `));
  const p = Bun.spawn(["systemd-analyze", "verify", file], { stdout: "pipe", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  expect(stderr).toBe("");
  expect(code).toBe(0);
});
