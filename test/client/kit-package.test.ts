/**
 * The client kit as a vendor gets it: the tarball `bun build.ts` writes, installed into a fresh Node
 * project with no registry and an empty npm cache, imported (ESM), required (CommonJS) and
 * type-checked by its package name, and run under node against a real keyturn site.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildClient, KIT_NAME, packClient } from "../../build";
import { executable } from "../executable";
import pkg from "../../package.json" with { type: "json" };
import { tempDir } from "../helpers";
import { ISSUER, startKitSite, type KitSite } from "./kit-site";

const REPO = join(import.meta.dir, "..", "..");
const vectors = JSON.parse(readFileSync(join(REPO, "docs", "clients", "vectors", "index.json"), "utf8")) as {
  device: { variant: string; id: string; hash: string };
};
const dir = tempDir("keyturn-kit-package-");
const project = join(dir, "vendor-app");
let tarball: string;
let site: KitSite;

function run(cmd: string[], cwd: string, env: Record<string, string> = {}) {
  const p = Bun.spawnSync(cmd, { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, ...env } });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

beforeAll(async () => {
  const exe = await executable();
  tarball = packClient(join(await buildClient(join(dir, "kit")), ".."), dir);
  site = await startKitSite(exe, "alpha");
  site.tree.add({ product: "alpha", channel: "stable", version: "1.1.0" });
  await site.rescan();
}, 120_000);

afterAll(async () => {
  await site?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("the packed client kit", () => {
  test("the tarball is a package named keyturn-client at keyturn's version, with no dependencies, its types, README and notices", () => {
    expect(tarball).toBe(join(dir, `${KIT_NAME}-${pkg.version}.tgz`));
    const listing = run(["tar", "-tzf", tarball], dir).stdout.split("\n").filter(Boolean).sort();
    expect(listing).toEqual(
      expect.arrayContaining([
        "package/package.json",
        "package/index.js",
        "package/index.cjs",
        "package/index.d.ts",
        "package/client.d.ts",
        "package/README.md",
        "package/THIRD-PARTY-NOTICES.md",
      ]),
    );
    expect(listing.filter((f) => !f.startsWith("package/") || (f.endsWith(".ts") && !f.endsWith(".d.ts")))).toEqual([]);
    const manifest = JSON.parse(run(["tar", "-xzOf", tarball, "package/package.json"], dir).stdout);
    expect(manifest).toMatchObject({
      name: "keyturn-client",
      version: pkg.version,
      type: "module",
      engines: { node: ">=20" },
      exports: { ".": { types: "./index.d.ts", import: "./index.js", require: "./index.cjs" } },
    });
    expect(typeof manifest.license).toBe("string");
    expect(manifest.dependencies).toBeUndefined();
    expect(run(["tar", "-xzOf", tarball, "package/THIRD-PARTY-NOTICES.md"], dir).stdout).toContain("Filip Skokan");
    // jose is bundled: both modules load only Node built-ins.
    for (const file of ["package/index.js", "package/index.cjs"]) {
      const js = run(["tar", "-xzOf", tarball, file], dir).stdout;
      const loaded = [...js.matchAll(/(?:^import .* from |\brequire\()"([^"]+)"/gm)].map((m) => m[1]!);
      expect(loaded.length).toBeGreaterThan(0);
      expect(loaded.filter((name) => !name.startsWith("node:"))).toEqual([]);
      expect(js).not.toMatch(/\bBun\./);
    }
  });

  test("installs offline into a fresh Node project and runs under node: ESM, CommonJS and TypeScript", async () => {
    rmSync(project, { recursive: true, force: true });
    run(["mkdir", "-p", project], dir);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "vendor-app", private: true, type: "module" }));
    // An unreachable registry and an empty cache: the tarball alone must be enough.
    const install = run(["npm", "install", tarball, "--offline", "--no-audit", "--no-fund"], project, {
      npm_config_cache: join(dir, "npm-cache"),
      npm_config_registry: "http://127.0.0.1:9/",
    });
    expect(install.stderr).not.toContain("ERR");
    expect(install.code).toBe(0);
    expect(JSON.parse(readFileSync(join(project, "node_modules", "keyturn-client", "package.json"), "utf8")).version).toBe(pkg.version);

    copyFileSync(join(import.meta.dir, "vendor-app.mjs"), join(project, "app.mjs"));
    copyFileSync(join(import.meta.dir, "vendor-app.cjs"), join(project, "app.cjs"));
    const env = {
      VARIANT: "alpha",
      PRODUCT: "alpha",
      ISSUER,
      SITE_URL: site.url,
      DEVICE_ID: vectors.device.id,
      LICENSE_KEYS: JSON.stringify(site.licenseKeys),
      RELEASE_KEYS: JSON.stringify(site.releaseKeys),
    };
    const key = await site.createLicense();
    const esm = run(["node", "app.mjs"], project, { ...env, KEY: key });
    expect(esm.stderr).toBe("");
    expect(esm.code).toBe(0);
    const out = JSON.parse(esm.stdout);
    expect(out.runtime).toMatch(/^node v2\d\./);
    // The device hash agrees with the published test vectors, and the site's token carries it.
    expect(vectors.device.variant).toBe("alpha");
    expect(out.hash).toBe(vectors.device.hash);
    expect(out).toMatchObject({ iss: ISSUER, dev: vectors.device.hash, update: { available: true, version: "1.1.0" }, otherDevice: "device" });

    const cjs = run(["node", "app.cjs"], project, { ...env, TOKEN: out.token });
    expect(cjs.stderr).toBe("");
    expect(JSON.parse(cjs.stdout)).toEqual({ hash: vectors.device.hash, sub: expect.stringMatching(/^act_/) });

    // A TypeScript program type-checks against the installed declarations (an unknown export does not).
    writeFileSync(
      join(project, "app.ts"),
      [
        'import { KeyturnClient, deviceHash, type Device } from "keyturn-client";',
        'const device: Device = { hash: await deviceHash("alpha", "id"), name: "PC", platform: "win-x64", version: "1.0.0", product: "alpha" };',
        'export const activation = new KeyturnClient({ variant: "alpha", issuer: "https://a.example", licenseKeys: {} }).activate("AL-1", device);',
      ].join("\n"),
    );
    writeFileSync(join(project, "bad.ts"), 'import { KeyturnClientt } from "keyturn-client";\nexport { KeyturnClientt };\n');
    const tsc = (file: string) =>
      run(
        [
          join(REPO, "node_modules", ".bin", "tsc"),
          "--ignoreConfig",
          "--noEmit",
          "--strict",
          "--module",
          "nodenext",
          "--moduleResolution",
          "nodenext",
          "--target",
          "esnext",
          "--types",
          "node",
          "--typeRoots",
          join(REPO, "node_modules", "@types"),
          file,
        ],
        project,
      );
    expect(tsc("app.ts")).toMatchObject({ code: 0, stdout: "" });
    expect(tsc("bad.ts").stdout).toContain("has no exported member named 'KeyturnClientt'");
  }, 60_000);
});
