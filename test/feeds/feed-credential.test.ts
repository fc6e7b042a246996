import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { KeyturnClient } from "../../src/client";
import { createLogger } from "../../src/config/log";
import { BASE_URL } from "../helpers";
import { releaseSite } from "../release-tree";
import { velopackApp, velopackLog } from "./velopack-client";

/**
 * design.md "Feed credentials in the URL": for updaters that send no Authorization header, a feed
 * URL carrying a credential derived from the installation's token: same expiry, revoked with it,
 * refused for any other installation, masked in logs. Velopack's own Rust core (its npm binding)
 * checks and downloads through it.
 */
const sha = (alg: string, b: Uint8Array) => new Bun.CryptoHasher(alg as "sha1").update(b).digest("hex");
const nupkg = randomBytes(30_000);
const logLines: string[] = [];

describe("a feed URL that carries its own credential", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let server: ReturnType<typeof Bun.serve>;
  let origin: string;
  const get = (path: string, token?: string) => s.site.request("GET", path, { token });
  const issue = async (token: string) => {
    const res = await s.site.request("POST", "/feeds/credential", { token });
    expect(res.status).toBe(200);
    return (await res.json()) as { ok: true; credential: string; expires: string; url: string };
  };
  const errorOf = async (res: Response) => [res.status, ((await res.json()) as { error: string }).error];

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,linux-x64" }, { log: createLogger("json", "info", (line) => logLines.push(line)) });
    s.tree.add({
      version: "2.0.0",
      platform: "linux-x64",
      installer: "Alpha-2.0.0-full.nupkg",
      installerBytes: nupkg,
      fields: { notes: "Faster start", feeds: { velopack: { packageId: "Alpha", sha1: sha("sha1", nupkg) } } },
    });
    await s.holder.rescan();
    await s.holder.verified();
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => s.site.app.handle(request, "127.0.0.1") });
    origin = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.stop(true);
    await s.close();
  });

  test("POST /feeds/credential: a credential ending with the token, and the base URL that carries it", async () => {
    const activated = (await (
      await s.site.request("POST", "/licenses/activate", {
        body: {
          key: (
            await s.site.admin.createLicense({ licensee: "A", organization: "O", plan: "p", planTitle: "P", seats: 1, channels: ["stable"], expires: null })
          ).key,
          device: { hash: "h".repeat(43), name: "PC", platform: "linux-x64", version: "1.0.0", product: "alpha" },
        },
      })
    ).json()) as { token: string; entitlement: { expires: string } };
    const issued = await issue(activated.token);
    expect(issued.expires).toBe(activated.entitlement.expires);
    expect(issued.url).toBe(`${BASE_URL}/api/v1/feeds/credential/${issued.credential}`);
    // It names the installation, its licence and channels, and nothing of the licensee.
    const header = JSON.parse(Buffer.from(issued.credential.split(".")[0]!, "base64url").toString());
    const claims = JSON.parse(Buffer.from(issued.credential.split(".")[1]!, "base64url").toString());
    const tokenClaims = JSON.parse(Buffer.from(activated.token.split(".")[1]!, "base64url").toString());
    expect(header.typ).toBe("al-feed+jwt");
    expect([claims.sub, claims.dev, claims.lic, claims.iat, claims.nbf, claims.exp]).toEqual([
      tokenClaims.sub,
      tokenClaims.dev,
      tokenClaims.lic,
      tokenClaims.iat,
      tokenClaims.nbf,
      tokenClaims.exp,
    ]);
    expect(claims.name).toBeUndefined();
    expect(claims.org).toBeUndefined();
  });

  test("Velopack's core, unmodified, checks and downloads through the credential URL the kit hands out (no header); without it every request is 401", async () => {
    const token = await s.token(["stable"]);
    const kit = new KeyturnClient({
      variant: "alpha",
      issuer: BASE_URL,
      baseUrl: origin,
      licenseKeys: {},
      product: "alpha",
      channel: "stable",
      platform: "linux-x64",
    });
    const credential = await kit.feedCredential(token);
    const feedUrl = kit.feedUrl(credential, "velopack");
    expect(feedUrl).toBe(`${origin}/api/v1/feeds/credential/${credential.credential}/velopack/alpha/stable`);
    const { manager, packages } = velopackApp({ id: "Alpha", version: "1.0.0", channel: "linux", feedUrl });
    velopackLog.length = 0;
    const update = await manager.checkForUpdatesAsync();
    expect(update?.TargetFullRelease.Version).toBe("2.0.0");
    expect(update?.TargetFullRelease.FileName).toBe("Alpha-2.0.0-full.nupkg");
    expect(update?.TargetFullRelease.NotesMarkdown).toBe("Faster start");
    await manager.downloadUpdateAsync(update).catch((e: Error) => {
      throw new Error(`${e.message}\n${velopackLog.join("\n")}`);
    });
    expect(readFileSync(join(packages, "Alpha-2.0.0-full.nupkg")).equals(nupkg)).toBe(true);

    const plain = velopackApp({ id: "Alpha", version: "1.0.0", channel: "linux", feedUrl: `${origin}/api/v1/feeds/velopack/alpha/stable` });
    let error: Error | undefined;
    await plain.manager.checkForUpdatesAsync().catch((e: Error) => (error = e));
    expect(String(error)).toContain("401");
  });

  test("same expiry: the credential stops when the token's exp passes", async () => {
    const token = await s.token(["stable"]);
    const { credential, expires } = await issue(token);
    const path = `/feeds/credential/${credential}/velopack/alpha/stable/releases.linux.json`;
    expect((await get(path)).status).toBe(200);
    const now = s.site.clock();
    s.site.clock.set(Date.parse(expires));
    try {
      expect(await errorOf(await get(path))).toEqual([401, "entitlement_expired"]);
      expect(await errorOf(await get("/feeds/velopack/alpha/stable/releases.linux.json", token))).toEqual([401, "entitlement_expired"]);
    } finally {
      s.site.clock.set(now);
    }
  });

  test("revoked with it: deactivating the installation refuses its credential at once", async () => {
    const token = await s.token(["stable"]);
    const { credential } = await issue(token);
    const path = `/feeds/credential/${credential}/velopack/alpha/stable/Alpha-2.0.0-full.nupkg`;
    expect(Buffer.from(await (await get(path)).arrayBuffer()).equals(nupkg)).toBe(true);
    expect((await s.site.request("POST", "/entitlements/deactivate", { token })).status).toBe(200);
    expect(await errorOf(await get(path))).toEqual([401, "entitlement_revoked"]);
  });

  test("refused for any other installation: another's claims under this signature, a token in its place, the credential as a bearer", async () => {
    const a = await issue(await s.token(["stable"]));
    const bToken = await s.token(["stable"]);
    const b = await issue(bToken);
    const [header, , signature] = a.credential.split(".");
    const forged = `${header}.${b.credential.split(".")[1]}.${signature}`;
    const feed = (credential: string) => get(`/feeds/credential/${credential}/velopack/alpha/stable/releases.linux.json`);
    expect((await feed(a.credential)).status).toBe(200);
    expect(await errorOf(await feed(forged))).toEqual([401, "entitlement_invalid"]);
    // The entitlement token is no feed credential (another typ), and the credential opens no bearer endpoint.
    expect(await errorOf(await feed(bToken))).toEqual([401, "entitlement_invalid"]);
    expect(await errorOf(await get("/feeds/velopack/alpha/stable/releases.linux.json", b.credential))).toEqual([401, "entitlement_invalid"]);
    expect(await errorOf(await get("/entitlements/current", b.credential))).toEqual([401, "entitlement_invalid"]);
    expect(await errorOf(await s.site.request("POST", "/feeds/credential", { token: b.credential }))).toEqual([401, "entitlement_invalid"]);
  });

  test("masked in logs: the request log names the path without the credential; the audit trail never holds it", async () => {
    const { credential } = await issue(await s.token(["stable"]));
    logLines.length = 0;
    await get(`/feeds/credential/${credential}/velopack/alpha/stable/releases.linux.json`);
    await get(`/feeds/credential/${credential}x/velopack/alpha/stable/releases.linux.json`);
    const requests = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    expect(requests.map((l) => l.path)).toEqual([
      `/api/v1/feeds/credential/…${credential.slice(-4)}/velopack/alpha/stable/releases.linux.json`,
      `/api/v1/feeds/credential/…${credential.slice(-3)}x/velopack/alpha/stable/releases.linux.json`,
    ]);
    for (const line of logLines) expect(line).not.toContain(credential.slice(0, 40));
    const audit = await s.site.composed.store.listAudit({ limit: 1000 });
    expect(audit.some((line) => line.error === "entitlement_invalid")).toBe(true);
    expect(JSON.stringify(audit)).not.toContain(credential.slice(0, 40));
  });
});
