import { afterAll, beforeAll, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { clientVariant, KeySet, verifyEntitlementToken } from "../../src/client/index";
import { device, tempDir } from "../helpers";
import { ReleaseTree, type WrittenRelease } from "../release-tree";
import { makeCertificate, startServe, type ServeProcess } from "../serve-process";

// Issue 33 item 4: the license signing key rotated at a vendor with a mirror and installed builds.
// Two real keyturn processes; the vendor sits behind a TLS-terminating proxy (this test's, which
// can hold back the mirror's feed requests, as a network partition would). The rotation goes the
// way docs/operating.md "Rotating the license key" tells an operator: keys rotate, SIGHUP, keys
// promote, SIGHUP, with no restart of the vendor.

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const OLD = VARIANTS.alpha.defaultLicenseKid;
const vendorDir = tempDir("keyturn-rot-vendor-");
const mirrorDir = tempDir("keyturn-rot-mirror-");
let vendor: ServeProcess;
let mirror: ServeProcess;
let proxy: ReturnType<typeof Bun.serve>;
let tree: ReleaseTree;
let release: WrittenRelease;
let ca: string;
let feedToken: string;
let vendorUrl: string;
/** Whether the proxy lets the mirror's feed requests through. */
let feedOpen = true;

const cli = (...args: string[]) =>
  execFileSync(process.execPath, [MAIN, ...args, "--variant", "alpha", "--data", join(vendorDir, "data"), "--keys", join(vendorDir, "keys")], {
    encoding: "utf8",
  });
const tls = () => ({ tls: { ca: readFileSync(ca, "utf8") } }) as RequestInit;
const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()) as { kid: string }).kid;
const mirrorGet = (path: string, token?: string) => fetch(`${mirror.url}/api/v1${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
const json = async <T>(res: Response | Promise<Response>) => (await (await res).json()) as T;
type Health = { status: string; degraded?: string[]; mirror: { degraded: string[] } };
type Meta = { keys: { kid: string; purpose: string; spki: string; role?: string }[] };

async function activate(key: string): Promise<string> {
  const res = await fetch(`${vendorUrl}/api/v1/licenses/activate`, {
    ...tls(),
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key, device: device("alpha") }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}

/** Waits until `probe` holds (the mirror polls every 250 ms; a failed poll backs off up to 2 s). */
async function eventually(what: string, probe: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const start = performance.now();
  while (!(await probe())) {
    if (performance.now() - start > ms) throw new Error(`still not: ${what}`);
    await Bun.sleep(50);
  }
}

async function sighupVendor(): Promise<void> {
  const before = vendor.lines.filter((l) => l.includes('"keys reloaded"')).length;
  vendor.proc.kill("SIGHUP");
  await eventually("the vendor reloaded its keys", async () => vendor.lines.filter((l) => l.includes('"keys reloaded"')).length > before);
}

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
      "250ms",
    ],
    mirrorDir,
    { KEYTURN_MIRROR_TOKEN: feedToken, NODE_EXTRA_CA_CERTS: ca },
  );
}

beforeAll(async () => {
  tree = new ReleaseTree("alpha");
  release = tree.add({ version: "3.0.0" });
  const cert = makeCertificate(vendorDir, "proxy");
  ca = cert.cert;
  let upstream = "";
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(cert.cert), key: Bun.file(cert.key) },
    async fetch(r) {
      const url = new URL(r.url);
      if (!feedOpen && url.pathname === "/api/v1/admin/feed") return new Response("partitioned", { status: 502 });
      const body = r.method === "GET" || r.method === "HEAD" ? undefined : await r.arrayBuffer();
      return fetch(`${upstream}${url.pathname}${url.search}`, { method: r.method, headers: r.headers, body });
    },
  });
  vendorUrl = `https://127.0.0.1:${proxy.port}`;
  mkdirSync(join(vendorDir, "keys"), { recursive: true });
  copyFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), join(vendorDir, "keys", `${tree.kid}.pub.pem`));
  vendor = await startServe("alpha", ["--base-url", vendorUrl, "--keys", join(vendorDir, "keys"), "--releases", tree.root], vendorDir);
  upstream = vendor.url;
  const mirrorKeys = join(mirrorDir, "keys");
  mkdirSync(mirrorKeys, { recursive: true });
  copyFileSync(join(vendorDir, "keys", `${OLD}.pub.pem`), join(mirrorKeys, `${OLD}.pub.pem`));
  copyFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), join(mirrorKeys, `${tree.kid}.pub.pem`));
  feedToken = (JSON.parse(cli("admin-token", "create", "--name", "mirror", "--scopes", "feed:read", "--json")) as { secret: string }).secret;
  mirror = await startMirror();
}, 30_000);

afterAll(async () => {
  await mirror?.cleanup();
  await vendor?.cleanup();
  proxy?.stop(true);
  tree?.remove();
});

test("a rotation: the next key is published before it signs, a mirror that missed it says degraded naming it, learns it from the feed, and builds carrying both keys verify tokens of either", async () => {
  const manifest = `/updates/${release.lane}/alpha-update.json`;
  const licence = JSON.parse(
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
      "5",
      "--channels",
      "stable",
      "--json",
    ),
  ) as { key: string };
  const before = await activate(licence.key);
  expect(kidOf(before)).toBe(OLD);
  await eventually("the mirror serves the vendor's token", async () => (await mirrorGet(manifest, before)).status === 200);
  expect((await json<Health>(mirrorGet("/health"))).status).toBe("ok");

  // 1. The next key, made and published ahead: /meta and the feed carry it; the old key keeps signing.
  const next = JSON.parse(cli("keys", "rotate", "--json")) as { kid: string; spki: string; signing: string };
  expect(next.signing).toBe(OLD);
  await sighupVendor();
  const meta = await json<Meta>(fetch(`${vendorUrl}/api/v1/meta`, tls()));
  expect(meta.keys.filter((k) => k.purpose === "license").map((k) => [k.kid, k.role])).toEqual([
    [OLD, "signing"],
    [next.kid, "next"],
  ]);
  const feed = await json<{ site: { channels: string[]; platforms: string[]; keys: { kid: string; spki: string; role: string }[] } }>(
    fetch(`${vendorUrl}/api/v1/admin/feed?limit=1`, { ...tls(), headers: { authorization: `Bearer ${feedToken}` } }),
  );
  expect([feed.site.channels, feed.site.platforms]).toEqual([["stable", "preview"], ["win-x64"]]);
  expect(feed.site.keys).toEqual([
    { kid: OLD, spki: expect.any(String), role: "signing" },
    { kid: next.kid, spki: next.spki, role: "next" },
  ]);
  expect(kidOf(await activate(licence.key))).toBe(OLD);
  // A mirror following its feed has the next key before it signs anything.
  await eventually("the mirror learnt the next key ahead", async () => (await json<Meta>(mirrorGet("/meta"))).keys.some((k) => k.kid === next.kid));

  // 2. Promoted: the vendor signs with it from the SIGHUP on, and the mirror serves its tokens at once.
  cli("keys", "promote", next.kid);
  await sighupVendor();
  const after = await activate(licence.key);
  expect(kidOf(after)).toBe(next.kid);
  expect((await mirrorGet(manifest, after)).status).toBe(200);
  expect((await mirrorGet(manifest, before)).status).toBe(200);

  // 3. The next rotation happens while the mirror is cut off from the feed: it never heard of the key.
  feedOpen = false;
  await eventually(
    "the mirror notices the feed is away",
    async () => (await json<{ mirror: { problem: string | null } }>(mirrorGet("/health"))).mirror.problem !== null,
  );
  const third = JSON.parse(cli("keys", "rotate", "--json")) as { kid: string; signing: string };
  expect(third.signing).toBe(next.kid);
  cli("keys", "promote", third.kid);
  await sighupVendor();
  const latest = await activate(licence.key);
  expect(kidOf(latest)).toBe(third.kid);
  const refused = await mirrorGet(manifest, latest);
  expect(refused.status).toBe(401);
  expect(((await refused.json()) as { error: string }).error).toBe("entitlement_invalid");
  const degraded = await mirrorGet("/health");
  expect(degraded.status).toBe(200);
  const said = (await degraded.json()) as Health;
  expect(said.status).toBe("degraded");
  expect(said.degraded!.join(" ")).toContain(`Tokens signed by ${third.kid} cannot be verified`);
  expect((await mirrorGet(manifest, before)).status).toBe(200);
  expect((await mirrorGet(manifest, after)).status).toBe(200);

  // 4. The feed is back: the mirror learns the key from it and serves the new token; health is ok again.
  feedOpen = true;
  await eventually("the mirror serves a token of the newest key", async () => (await mirrorGet(manifest, latest)).status === 200);
  expect((await json<Health>(mirrorGet("/health"))).status).toBe("ok");

  // 5. Restarted while the vendor is away, the mirror still knows the keys it learnt.
  feedOpen = false;
  mirror.proc.kill("SIGTERM");
  expect(await mirror.proc.exited).toBe(0);
  mirror = await startMirror();
  expect((await mirrorGet(manifest, latest)).status).toBe(200);
  expect((await mirrorGet(manifest, after)).status).toBe(200);
  feedOpen = true;

  // 6. Installed builds: one carrying the old and the next key verifies tokens of both; one
  //    carrying only the old key refuses the new token (why builds ship the next key first).
  const check = (keys: Record<string, string>, token: string) =>
    verifyEntitlementToken(token, {
      variant: clientVariant("alpha"),
      issuer: vendorUrl,
      keys: new KeySet(keys),
      deviceHash: (JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { dev: string }).dev,
      now: Date.now(),
      toleranceSec: 60,
    });
  const both = { [OLD]: feed.site.keys[0]!.spki, [next.kid]: next.spki };
  expect((await check(both, before)).claims.lic).toBeTruthy();
  expect((await check(both, after)).claims.lic).toBeTruthy();
  await expect(check({ [OLD]: feed.site.keys[0]!.spki }, after)).rejects.toMatchObject({ code: "entitlement_invalid" });
}, 60_000);
