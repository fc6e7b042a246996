import { afterAll, beforeAll, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { createHash, createPublicKey } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { buildClient } from "../../build";
import { generateKeyFiles } from "../../src/domain/keys";
import { device, tempDir } from "../helpers";
import { ReleaseTree, type WrittenRelease } from "../release-tree";
import { makeCertificate, startServe, type ServeProcess } from "../serve-process";

// Issue 15: the vendor and the mirror as two real keyturn processes, each with its own data
// directory; the vendor serves HTTPS on its base URL (its tokens' iss), the mirror holds only
// public keys and follows the vendor's feed with an admin token of scope feed:read.

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const POLL_MS = 250;
const kid = VARIANTS.alpha.defaultLicenseKid;

let vendor: ServeProcess;
let mirror: ServeProcess;
let tree: ReleaseTree;
let release: WrittenRelease;
let vendorUrl: string;
/** The vendor certificate's file: the mirror trusts it through NODE_EXTRA_CA_CERTS, as an operator with a private CA would. */
let ca: string;
let feedToken: string;
const vendorDir = tempDir("keyturn-vendor-");
const mirrorDir = tempDir("keyturn-mirror-");

function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

function cli(...args: string[]): string {
  return execFileSync(process.execPath, [MAIN, ...args, "--variant", "alpha", "--data", join(vendorDir, "data")], { encoding: "utf8" });
}

const vendorFetch = (path: string, init: RequestInit = {}) => fetch(`${vendorUrl}${path}`, { ...init, tls: { ca: readFileSync(ca, "utf8") } } as RequestInit);
const mirrorGet = (path: string, token: string) => fetch(`${mirror.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

async function activate(key: string): Promise<string> {
  const res = await vendorFetch("/api/v1/licenses/activate", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key, device: device("alpha") }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}

/** Polls until the mirror answers `path` for `token` with the wanted error (null: success); gives up after `ms` (patience on a busy runner, not a claim). */
async function mirrorSays(path: string, token: string, wanted: string | null, ms = 20_000): Promise<void> {
  const start = performance.now();
  for (;;) {
    const res = await mirrorGet(path, token);
    const error = res.status === 200 ? null : ((await res.json()) as { error: string }).error;
    if (error === wanted) return;
    if (performance.now() - start > ms) throw new Error(`mirror still answers ${error} for ${path}, not ${wanted}`);
    await Bun.sleep(25);
  }
}

beforeAll(async () => {
  tree = new ReleaseTree("alpha");
  release = tree.add({ version: "2.0.0" });
  const port = freePort();
  vendorUrl = `https://127.0.0.1:${port}`;
  const tls = makeCertificate(vendorDir, "vendor");
  ca = tls.cert;
  generateKeyFiles(join(vendorDir, "keys"), kid);
  copyFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), join(vendorDir, "keys", `${tree.kid}.pub.pem`));
  vendor = await startServe(
    "alpha",
    ["--base-url", vendorUrl, "--port", String(port), "--tls-cert", tls.cert, "--tls-key", tls.key, "--keys", join(vendorDir, "keys"), "--releases", tree.root],
    vendorDir,
  );
  if (new URL(vendor.url).port !== String(port)) throw new Error(`vendor listens at ${vendor.url}, not on ${port}`);
  // The mirror operator's copy: the tree as it is, and only the public halves of the keys.
  const mirrorKeys = join(mirrorDir, "keys");
  mkdirSync(mirrorKeys, { recursive: true });
  copyFileSync(join(vendorDir, "keys", `${kid}.pub.pem`), join(mirrorKeys, `${kid}.pub.pem`));
  copyFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), join(mirrorKeys, `${tree.kid}.pub.pem`));
  feedToken = (JSON.parse(cli("admin-token", "create", "--name", "mirror", "--scopes", "feed:read", "--json")) as { secret: string }).secret;
  mirror = await startMirror();
});

function startMirror(): Promise<ServeProcess> {
  return startServe(
    "alpha",
    [
      "--base-url",
      "https://mirror.example.com",
      "--keys",
      join(mirrorDir, "keys"),
      "--releases",
      tree.root,
      "--mirror-of",
      vendorUrl,
      "--mirror-poll",
      `${POLL_MS}ms`,
    ],
    mirrorDir,
    { KEYTURN_MIRROR_TOKEN: feedToken, NODE_EXTRA_CA_CERTS: ca },
  );
}
afterAll(async () => {
  await mirror?.cleanup();
  await vendor?.cleanup();
  tree?.remove();
});

test("the vendor's tokens read updates at the mirror; a deactivation, a revocation and a withdrawn release at the vendor reach it within a poll", async () => {
  const created = JSON.parse(
    cli(
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
      "3",
      "--channels",
      "stable",
      "--json",
    ),
  ) as { key: string; id: string };
  const kept = await activate(created.key);
  const leaving = await activate(created.key);
  const manifest = `/api/v1/updates/${release.lane}/alpha-update.json`;
  expect((await mirrorGet(manifest, kept)).status).toBe(200);
  expect(Buffer.from(await (await mirrorGet(manifest, leaving)).arrayBuffer()).equals(release.manifestBytes)).toBe(true);
  expect((await mirrorGet(`/api/v1/releases`, kept)).status).toBe(200);

  const off = await vendorFetch("/api/v1/entitlements/deactivate", { method: "POST", headers: { authorization: `Bearer ${leaving}` } });
  expect(off.status).toBe(200);
  // Outcome and order, not elapsed time (mirror-process.test.ts counts the polls it takes).
  await mirrorSays(manifest, leaving, "entitlement_revoked");
  expect((await mirrorGet(manifest, kept)).status).toBe(200);

  const other = JSON.parse(
    cli(
      "license",
      "create",
      "--licensee",
      "Bob",
      "--organization",
      "B",
      "--plan",
      "pro",
      "--plan-title",
      "Pro",
      "--seats",
      "2",
      "--channels",
      "stable",
      "--json",
    ),
  ) as { key: string; id: string };
  const a = await activate(other.key);
  const b = await activate(other.key);
  expect((await mirrorGet(manifest, a)).status).toBe(200);
  cli("license", "revoke", other.id);
  await mirrorSays(manifest, a, "license_revoked");
  await mirrorSays(manifest, b, "license_revoked");
  expect((await mirrorGet(manifest, kept)).status).toBe(200);

  // A release withdrawn at the vendor is withdrawn at the mirror (the lane has nothing else), and restored.
  cli("release", "withdraw", "--lane", release.lane, "--version", "2.0.0");
  await mirrorSays(manifest, kept, "no_release");
  cli("release", "restore", "--lane", release.lane, "--version", "2.0.0");
  await mirrorSays(manifest, kept, null);

  const health = (await (await fetch(`${mirror.url}/api/v1/health`)).json()) as { mirror: { of: string; lastSync: string | null } };
  expect(health.mirror.of).toBe(vendorUrl);
  expect(health.mirror.lastSync).not.toBeNull();
}, 30_000);

const spki = (pem: string) => (createPublicKey(readFileSync(pem, "utf8")).export({ type: "spki", format: "der" }) as Buffer).toString("base64");

test("the client kit under node, as docs/clients.md configures it: licensing at the vendor (private CA), updates and the installer from the mirror", async () => {
  const dir = tempDir("keyturn-kit-at-mirror-");
  try {
    await kitAtMirror(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

async function kitAtMirror(dir: string): Promise<void> {
  const kit = await buildClient(join(dir, "kit"));
  const key = (
    JSON.parse(
      cli(
        "license",
        "create",
        "--licensee",
        "Di",
        "--organization",
        "D",
        "--plan",
        "pro",
        "--plan-title",
        "Pro",
        "--seats",
        "2",
        "--channels",
        "stable",
        "--json",
      ),
    ) as { key: string }
  ).key;
  const run = (extra: Record<string, string>) => {
    const p = Bun.spawnSync(["node", join(import.meta.dir, "kit-at-mirror.mjs")], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        KIT: kit,
        KEY: key,
        VENDOR_URL: vendorUrl,
        MIRROR_URL: mirror.url,
        DIR: dir,
        LICENSE_KEYS: JSON.stringify({ [kid]: spki(join(vendorDir, "keys", `${kid}.pub.pem`)) }),
        RELEASE_KEYS: JSON.stringify({ [tree.kid]: spki(join(tree.keysDir, `${tree.kid}.pub.pem`)) }),
        ...extra,
      },
    });
    expect(p.stderr.toString()).toBe("");
    return JSON.parse(p.stdout.toString());
  };
  // Without the CA, node cannot reach the vendor; with it, the whole flow works.
  expect(run({})).toEqual({ activate: "network" });
  expect(run({ NODE_EXTRA_CA_CERTS: ca })).toEqual({
    activate: "ok",
    update: { available: true, version: "2.0.0" },
    sha256: createHash("sha256").update(release.installerBytes).digest("hex"),
    activateAtMirror: { code: "licensing_unavailable", status: 503 },
  });
}

test("restarted with the vendor down, the mirror still refuses what it learnt and serves the rest", async () => {
  const created = JSON.parse(
    cli(
      "license",
      "create",
      "--licensee",
      "Cy",
      "--organization",
      "C",
      "--plan",
      "pro",
      "--plan-title",
      "Pro",
      "--seats",
      "2",
      "--channels",
      "stable",
      "--json",
    ),
  ) as { key: string };
  const stays = await activate(created.key);
  const goes = await activate(created.key);
  const manifest = `/api/v1/updates/${release.lane}/alpha-update.json`;
  await vendorFetch("/api/v1/entitlements/deactivate", { method: "POST", headers: { authorization: `Bearer ${goes}` } });
  await mirrorSays(manifest, goes, "entitlement_revoked");

  vendor.proc.kill("SIGTERM");
  expect(await vendor.proc.exited).toBe(0);
  mirror.proc.kill("SIGTERM");
  expect(await mirror.proc.exited).toBe(0);
  mirror = await startMirror();
  await mirrorSays(manifest, goes, "entitlement_revoked");
  expect((await mirrorGet(manifest, stays)).status).toBe(200);
}, 30_000);
