/**
 * A real keyturn site for the client kit's end-to-end tests: the compiled executable serving a
 * release tree on loopback, with a license created by its own CLI. The site's keys directory holds
 * only the license key: release signatures are checked by the kit (its compiled-in release key),
 * so the site serves tampered manifests as they are and the kit must refuse them.
 */
import { createPrivateKey, createPublicKey } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildClient, buildExecutable } from "../../build";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { generateKeyFiles } from "../../src/domain/keys";
import { signManifest } from "../../src/domain/releases/signature";
import { ReleaseTree } from "../release-tree";
import { untilListening } from "../executable";
import { tempDir } from "../helpers";

export const ISSUER = "https://licenses.example.com";

export function spkiOf(pemFile: string): string {
  return (createPublicKey(readFileSync(pemFile, "utf8")).export({ type: "spki", format: "der" }) as Buffer).toString("base64");
}

/** The executable and the built kit (self-contained: jose is bundled in), made once per test file in `dir`. */
export async function buildAll(dir: string): Promise<{ exe: string; kit: string }> {
  return { exe: await buildExecutable(join(dir, "keyturn")), kit: await buildClient(join(dir, "client")) };
}

export interface KitSite {
  readonly url: string;
  readonly variant: VariantName;
  readonly tree: ReleaseTree;
  readonly licenseKeys: Record<string, string>;
  readonly releaseKeys: Record<string, string>;
  readonly proc: Bun.Subprocess;
  createLicense(seats?: number): Promise<string>;
  /** `keyturn activation offline CODE --key KEY` with the site's settings, as docs/clients.md has it: the answer code. */
  answerOffline(code: string, key: string): Promise<string>;
  /**
   * Asks the site to read the release tree again (as an operator's SIGHUP does) and resolves once
   * that scan is done and every installer it found is hashed (until then their releases are not served).
   */
  rescan(): Promise<void>;
  stop(): Promise<void>;
}

async function run(exe: string, args: string[]): Promise<string> {
  const p = Bun.spawn([exe, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`keyturn ${args[0]} exited ${code}: ${err}`);
  return out;
}

export async function startKitSite(exe: string, variant: VariantName, dir = tempDir("keyturn-kit-")): Promise<KitSite> {
  const v = VARIANTS[variant];
  const tree = new ReleaseTree(variant);
  const keys = join(dir, "keys");
  const data = join(dir, "data");
  mkdirSync(data, { recursive: true });
  generateKeyFiles(keys, v.defaultLicenseKid);
  const common = ["--variant", variant, "--data", data];
  const proc = Bun.spawn(
    [
      exe,
      "serve",
      ...common,
      "--base-url",
      ISSUER,
      "--keys",
      keys,
      "--releases",
      tree.root,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--log-format",
      "json",
      "--rate-limit-signin",
      "100000/60s",
      "--rate-limit-api",
      "100000/60s",
    ],
    { stdout: "ignore", stderr: "pipe", stdin: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
  );
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  const { url, log: err } = await untilListening(reader);
  let scans = err.split("\n").filter((l) => l.includes('"release index built"')).length;
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      scans += new TextDecoder().decode(value).split('"release index built"').length - 1;
    }
  })();
  return {
    url,
    variant,
    tree,
    licenseKeys: { [v.defaultLicenseKid]: spkiOf(join(keys, `${v.defaultLicenseKid}.pub.pem`)) },
    releaseKeys: { [tree.kid]: spkiOf(join(tree.keysDir, `${tree.kid}.pub.pem`)) },
    proc,
    async createLicense(seats = 10) {
      const out = await run(exe, [
        "license",
        "create",
        ...common,
        "--licensee",
        "Kit Tester",
        "--organization",
        "Kit Org",
        "--plan",
        "pro",
        "--plan-title",
        "Pro",
        "--seats",
        String(seats),
        "--channels",
        "stable,preview",
        "--json",
      ]);
      return (JSON.parse(out) as { key: string }).key;
    },
    async answerOffline(code: string, key: string) {
      return run(exe, ["activation", "offline", code, "--key", key, ...common, "--base-url", ISSUER, "--keys", keys]);
    },
    async rescan() {
      const before = scans;
      proc.kill("SIGHUP");
      const deadline = Date.now() + 20_000;
      for (;;) {
        if (scans > before) {
          const health = await fetch(`${url}/api/v1/health`);
          if (health.ok && !("installersVerifying" in ((await health.json()) as object))) return;
        }
        if (Date.now() > deadline) throw new Error("the site did not finish re-reading its release tree");
        await Bun.sleep(25);
      }
    },
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      tree.remove();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Re-signs a release's manifest with another key under the same kid (a signature by a key the program does not hold). */
export function resignWithOtherKey(tree: ReleaseTree, manifestPath: string): void {
  const other = tempDir("keyturn-otherkey-");
  generateKeyFiles(other, tree.kid);
  const privateKey = createPrivateKey(readFileSync(join(other, `${tree.kid}.pem`), "utf8"));
  writeFileSync(`${manifestPath}.sig`, signManifest(readFileSync(manifestPath), { kid: tree.kid, privateKey }, tree.v));
  rmSync(other, { recursive: true, force: true });
}
