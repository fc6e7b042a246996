import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { offlineRequestCode } from "../../src/client";
import { createLogger } from "../../src/config/log";
import { VARIANTS } from "../../src/config/variants";
import { CLI_CALLER, SCOPES, type Scope } from "../../src/domain/admin/deps";
import { createLicense as adminCreateLicense, revokeLicense } from "../../src/domain/admin/licenses";
import { createAdminToken, revokeAdminToken } from "../../src/domain/admin/tokens";
import { isoTime } from "../../src/domain/clock";
import { newId } from "../../src/domain/ids";
import { addWebhookEndpoint } from "../../src/domain/webhooks/endpoints";
import type { Endpoint } from "../../src/http/endpoint";
import { createPrivateKey } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { generateKeyFiles } from "../../src/domain/keys";
import { signManifest } from "../../src/domain/releases/signature";
import { device, tempDir, testSite, type TestSite } from "../helpers";

// The scope matrix, derived from the route table: every endpoint whose `auth` is an admin scope is
// refused without a good admin token (401) or without its scope (403), and answered with exactly its
// scope or with `admin`. Every admin write is an audit line naming the token, never its secret.

let site: TestSite;
const logLines: string[] = [];
const secrets: string[] = [];
let admins: Endpoint[];

const licenseBody = { licensee: "Ada", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 3, channels: ["stable"] };
const keyOf = (e: Endpoint) => `${e.method} ${e.path}`;

async function mint(name: string, scopes: Scope[], expires?: string): Promise<{ id: string; secret: string }> {
  const { token, secret } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name, scopes, expires });
  secrets.push(secret);
  return { id: token.id, secret };
}

function call(e: Endpoint, path: string, token: string | undefined, body?: unknown, headers?: Record<string, string>) {
  return site.request(e.method, path, { token, body: e.body ? (body ?? {}) : body, headers });
}

const d = () => site.composed.services.admin;
const freshLicense = async () => adminCreateLicense(d(), CLI_CALLER, licenseBody);
const freshActivation = async () => {
  const { key, license } = await freshLicense();
  const r = await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
  expect(r.status).toBe(200);
  const { token } = (await r.json()) as { token: string };
  const [act] = await site.composed.store.listActivations(license.id);
  return { id: act!.id, licenseId: license.id, token };
};
const freshHook = async () => (await addWebhookEndpoint(d(), CLI_CALLER, { url: "https://hooks.example/k", events: ["license.created"] })).endpoint.id;
const freshDelivery = async () => {
  const hook = await freshHook();
  await freshLicense();
  const now = site.clock();
  await site.composed.store.fanOutEvents(now, 1000, () => newId("dlv", now));
  const [delivery] = await site.composed.store.listDeliveries({ endpointId: hook, limit: 1 });
  return delivery!.id;
};

// Release controls are kept for any version of a lane of the variant (applied should it appear), so
// each fixture takes a version of its own: a control that changes nothing writes no audit line.
let versions = 0;
// A control is refused for a release this site does not know: each version is recorded as known (live at a scan).
const freshVersion = async () => {
  const version = `9.${++versions}.0`;
  await site.composed.store.recordKnownReleases([{ lane: "alpha/stable/win-x64", version }], site.clock());
  return version;
};
const LANE = encodeURIComponent("alpha/stable/win-x64");
const controlPath = (version: string, op: string) => `/admin/releases/${LANE}/${version}/${op}`;
const controlled = async (op: "halt" | "withdraw") => {
  const version = await freshVersion();
  await site.composed.services.selection.controls.apply(op, "alpha/stable/win-x64", version);
  return version;
};

// Release uploads: folders signed with the site's release key, uploaded through the domain (as the
// command line would: no audit line of the tokens under test); each takes a version of its own.
const RELEASE_KID = "alpha-release-2026-11";
const sha = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
let uploads = 0;
const freshUpload = async (complete: boolean) => {
  const version = `8.${++uploads}.0`;
  const installer = `alpha-${version}-win-x64.exe`;
  const bytes = Buffer.from(`installer ${version}`);
  const manifest = Buffer.from(
    JSON.stringify({
      product: "alpha",
      channel: "stable",
      platform: "win-x64",
      version,
      released: "2026-11-01T00:00:00+00:00",
      installer,
      size: bytes.length,
      sha256: sha(bytes),
    }),
  );
  const privateKey = createPrivateKey(readFileSync(join(keysDir, `${RELEASE_KID}.pem`), "utf8"));
  const files = {
    [installer]: bytes,
    "alpha-update.json": manifest,
    "alpha-update.json.sig": Buffer.from(signManifest(manifest, { kid: RELEASE_KID, privateKey }, VARIANTS.alpha)),
  };
  const service = site.composed.services.uploads;
  const listing = Object.entries(files).map(([name, b]) => ({ name, size: b.length, sha256: sha(b) }));
  const { upload } = await service.create({ lane: "alpha/stable/win-x64", folder: version, files: listing }, CLI_CALLER);
  if (complete)
    for (const [name, b] of Object.entries(files))
      await service.write(upload.id, name, { start: 0, end: b.length - 1, total: b.length }, new Blob([b]).stream());
  return { id: upload.id, manifest };
};

/**
 * For each admin endpoint: a request its scope should have answered (fresh records, so a write can
 * run again). The matrix fails for an admin endpoint added without one here.
 */
const FIXTURES: Record<string, () => Promise<{ path: string; body?: unknown; headers?: Record<string, string> }>> = {
  "POST /admin/licenses": async () => ({ path: "/admin/licenses", body: licenseBody }),
  "GET /admin/licenses": async () => ({ path: "/admin/licenses?status=active&limit=5" }),
  "GET /admin/licenses/{id}": async () => ({ path: `/admin/licenses/${(await freshLicense()).license.id}` }),
  "PATCH /admin/licenses/{id}": async () => ({ path: `/admin/licenses/${(await freshLicense()).license.id}`, body: { seats: 5 } }),
  "POST /admin/licenses/{id}/revoke": async () => ({ path: `/admin/licenses/${(await freshLicense()).license.id}/revoke` }),
  "POST /admin/licenses/{id}/rekey": async () => ({ path: `/admin/licenses/${(await freshLicense()).license.id}/rekey` }),
  "GET /admin/plans": async () => ({ path: "/admin/plans" }),
  "POST /admin/licenses/{id}/renew": async () => ({
    path: `/admin/licenses/${(await adminCreateLicense(d(), CLI_CALLER, { ...licenseBody, plan: "maintained" })).license.id}/renew`,
  }),
  "POST /admin/licenses/{id}/reinstate": async () => {
    const { license } = await freshLicense();
    await revokeLicense(d(), CLI_CALLER, license.id);
    return { path: `/admin/licenses/${license.id}/reinstate` };
  },
  "GET /admin/activations": async () => ({ path: `/admin/activations?license=${(await freshActivation()).licenseId}` }),
  "POST /admin/activations/offline": async () => {
    const { key } = await freshLicense();
    return { path: "/admin/activations/offline", body: { code: offlineRequestCode({ device: device("alpha"), key }) } };
  },
  "POST /admin/activations/{id}/deactivate": async () => ({ path: `/admin/activations/${(await freshActivation()).id}/deactivate` }),
  "GET /admin/audit": async () => ({ path: "/admin/audit?limit=3" }),
  "GET /admin/feed": async () => ({ path: "/admin/feed?after=0&limit=3" }),
  "POST /admin/webhooks": async () => ({ path: "/admin/webhooks", body: { url: "https://hooks.example/new", events: ["license.revoked"] } }),
  "GET /admin/webhooks": async () => ({ path: "/admin/webhooks" }),
  "PATCH /admin/webhooks/{id}": async () => ({ path: `/admin/webhooks/${await freshHook()}`, body: { enabled: true } }),
  "DELETE /admin/webhooks/{id}": async () => ({ path: `/admin/webhooks/${await freshHook()}` }),
  "POST /admin/webhooks/{id}/rotate-secret": async () => ({ path: `/admin/webhooks/${await freshHook()}/rotate-secret` }),
  "GET /admin/webhook-deliveries": async () => ({ path: "/admin/webhook-deliveries?status=pending" }),
  "GET /admin/webhook-deliveries/{id}": async () => ({ path: `/admin/webhook-deliveries/${await freshDelivery()}` }),
  "POST /admin/webhook-deliveries/{id}/retry": async () => ({ path: `/admin/webhook-deliveries/${await freshDelivery()}/retry` }),
  "GET /admin/releases": async () => ({ path: "/admin/releases" }),
  "POST /admin/releases/{lane}/{version}/halt": async () => ({ path: controlPath(await freshVersion(), "halt") }),
  "POST /admin/releases/{lane}/{version}/resume": async () => ({ path: controlPath(await controlled("halt"), "resume") }),
  "POST /admin/releases/{lane}/{version}/withdraw": async () => ({ path: controlPath(await freshVersion(), "withdraw") }),
  "POST /admin/releases/{lane}/{version}/restore": async () => ({ path: controlPath(await controlled("withdraw"), "restore") }),
  "GET /admin/stats": async () => ({ path: "/admin/stats" }),
  "GET /admin/trials": async () => ({ path: "/admin/trials" }),
  "GET /admin/bridge-events": async () => ({ path: "/admin/bridge-events?limit=5" }),
  "GET /admin/releases/why": async () => ({ path: `/admin/releases/why?activation=${(await freshActivation()).id}` }),
  "POST /admin/uploads": async () => ({
    path: "/admin/uploads",
    body: {
      lane: "alpha/stable/win-x64",
      folder: `7.${++uploads}.0`,
      files: ["alpha-update.json", "alpha-update.json.sig"].map((name) => ({ name, size: 1, sha256: sha(Buffer.from("x")) })),
    },
  }),
  "GET /admin/uploads/{id}": async () => ({ path: `/admin/uploads/${(await freshUpload(false)).id}` }),
  "PUT /admin/uploads/{id}/files/{name}": async () => {
    const { id, manifest } = await freshUpload(false);
    return {
      path: `/admin/uploads/${id}/files/alpha-update.json`,
      body: manifest.subarray(0, 1).toString("latin1"),
      headers: { "content-type": "application/octet-stream", "content-range": `bytes 0-0/${manifest.length}` },
    };
  },
  "DELETE /admin/uploads/{id}": async () => ({ path: `/admin/uploads/${(await freshUpload(false)).id}` }),
  "POST /admin/uploads/{id}/publish": async () => ({ path: `/admin/uploads/${(await freshUpload(true)).id}/publish` }),
  "GET /admin/mail": async () => ({ path: "/admin/mail" }),
  "POST /admin/mail/{id}/resend": async () => {
    const { license } = await adminCreateLicense(d(), CLI_CALLER, { ...licenseBody, email: "ada@engines.example" });
    const [mail] = await d().mail!.d.store.listMail({ licenseId: license.id, limit: 1 });
    return { path: `/admin/mail/${mail!.id}/resend` };
  },
  "GET /admin/console-sessions": async () => ({ path: "/admin/console-sessions" }),
  "POST /admin/console-sessions/{id}/end": async () => {
    const { session } = await site.composed.services.consoleSessions.signInWithToken((await mint("console", ["licenses:read"])).secret);
    return { path: `/admin/console-sessions/${session.id}/end` };
  },
};

let expired: { secret: string };
let revoked: { secret: string };
let entitlementToken: string;

const keysDir = join(tempDir("keyturn-scopes-keys-"), "keys");

beforeAll(async () => {
  // The licence key, and a release key whose public half lets the site check uploaded folders.
  generateKeyFiles(keysDir, VARIANTS.alpha.defaultLicenseKid);
  generateKeyFiles(keysDir, RELEASE_KID);
  site = await testSite("alpha", {
    log: createLogger("json", "debug", (line) => logLines.push(line)),
    withKey: false,
    // The mail outbox is written (nothing sends it here), for the admin mail operations.
    settings: { keys: keysDir, "smtp-url": "smtp://127.0.0.1:9", "mail-from": "licences@example.com" },
    tables: { plans: { maintained: { updatesFor: "365d" } } },
  });
  await site.app.allAreas();
  admins = site.app.endpoints.filter((e) => typeof e.auth === "object");
  expired = await mint("expiring", ["admin"], isoTime(site.clock() + 1000));
  site.clock.advance(2000);
  revoked = await mint("revoked", ["admin"]);
  const revokedId = (await site.composed.store.listAdminTokens()).find((t) => t.name === "revoked")!.id;
  await revokeAdminToken(site.composed.services.admin, CLI_CALLER, revokedId);
  entitlementToken = (await freshActivation()).token;
});
afterAll(async () => {
  await site.close();
  rmSync(join(keysDir, ".."), { recursive: true, force: true });
});

describe("the admin scope matrix (derived from the route table)", () => {
  test("every admin endpoint has a fixture, and every fixture an endpoint", () => {
    expect(admins.length).toBeGreaterThanOrEqual(17);
    expect(admins.map(keyOf).sort()).toEqual(Object.keys(FIXTURES).sort());
  });

  test("no token, a bad one, an entitlement token, an expired or revoked admin token: 401 admin_token_invalid with WWW-Authenticate", async () => {
    const cases: [string, string | undefined, string][] = [
      ["no token", undefined, "Bearer"],
      ["not an admin token", "kta_" + "A".repeat(43), 'Bearer error="invalid_token"'],
      ["an entitlement token", entitlementToken, 'Bearer error="invalid_token"'],
      ["an expired admin token", expired.secret, 'Bearer error="invalid_token"'],
      ["a revoked admin token", revoked.secret, 'Bearer error="invalid_token"'],
    ];
    for (const e of admins) {
      const { path, body, headers } = await FIXTURES[keyOf(e)]!();
      for (const [label, token, challenge] of cases) {
        const res = await call(e, path, token, body, headers);
        const answer = (await res.json()) as { error: string };
        expect({ endpoint: keyOf(e), label, status: res.status, error: answer.error, challenge: res.headers.get("www-authenticate") }).toEqual({
          endpoint: keyOf(e),
          label,
          status: 401,
          error: "admin_token_invalid",
          challenge,
        });
      }
    }
  });

  test("every scope but the one needed (and not admin): 403 insufficient_scope; exactly the scope, or admin: answered", async () => {
    const writes: { e: Endpoint; tokenId: string; name: string }[] = [];
    for (const e of admins) {
      const scope = (e.auth as { scope: Scope }).scope;
      const others = await mint(
        `all-but-${scope}`,
        SCOPES.filter((s) => s !== scope && s !== "admin"),
      );
      const { path, body, headers } = await FIXTURES[keyOf(e)]!();
      const refused = await call(e, path, others.secret, body, headers);
      expect({ endpoint: keyOf(e), status: refused.status, error: ((await refused.json()) as { error: string }).error }).toEqual({
        endpoint: keyOf(e),
        status: 403,
        error: "insufficient_scope",
      });
      for (const scopes of [[scope], ["admin"]] as Scope[][]) {
        const name = `store ${scopes[0]}`;
        const holder = await mint(name, scopes);
        const fixture = await FIXTURES[keyOf(e)]!();
        const res = await call(e, fixture.path, holder.secret, fixture.body, fixture.headers);
        const text = await res.text();
        expect({ endpoint: keyOf(e), scopes, status: res.status }, text).toEqual({ endpoint: keyOf(e), scopes, status: e.status ?? 200 });
        expect(JSON.parse(text).ok).toBe(true);
        if (e.method !== "GET") writes.push({ e, tokenId: holder.id, name });
      }
    }

    // Every write above is an audit line of its endpoint's action naming the token by id and name.
    const lines = await site.composed.store.listAudit({ limit: 10_000 });
    for (const { e, tokenId, name } of writes) {
      const mine = lines.filter((l) => l.actor === `${tokenId} (${name})`);
      expect({ endpoint: keyOf(e), actions: mine.map((l) => l.action) }).toEqual({ endpoint: keyOf(e), actions: [e.audit] });
      expect(mine[0]!.outcome).toBe("ok");
      expect(mine[0]!.address).toBe("203.0.113.7");
    }
    expect(writes.length).toBe(2 * admins.filter((e) => e.method !== "GET").length);
    // No secret in any audit line or log line (its random part is enough to give it away).
    const records = JSON.stringify(lines);
    expect(logLines.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      expect(records).not.toContain(secret.slice(4));
      for (const line of logLines) expect(line).not.toContain(secret.slice(4));
    }
  });

  test("an admin token on an entitlement path is refused like any bad token: 401 entitlement_invalid", async () => {
    const holder = await mint("everything", ["admin"]);
    const product = VARIANTS.alpha.products[0];
    const manifest = `/updates/${[product, "stable", "win-x64"].filter(Boolean).join("/")}/${VARIANTS.alpha.manifestFile}`;
    for (const [method, path, body] of [
      ["GET", "/entitlements/current", undefined],
      ["GET", "/releases", undefined],
      ["GET", manifest, undefined],
      ["POST", "/entitlements/refresh", { device: device("alpha") }],
      ["POST", "/entitlements/deactivate", undefined],
    ] as const) {
      const res = await site.request(method, path, { token: holder.secret, body });
      const answer = (await res.json()) as { error: string };
      expect({ method, path, status: res.status, error: answer.error, challenge: res.headers.get("www-authenticate") }).toEqual({
        method,
        path,
        status: 401,
        error: "entitlement_invalid",
        challenge: 'Bearer error="invalid_token"',
      });
    }
  });
});

describe("the admin rate budget (--rate-limit-admin)", () => {
  test("admin requests count against their own budget: past it 429 with Retry-After, while the address's other requests still pass", async () => {
    const tight = await testSite("alpha", { settings: { "rate-limit-admin": "2/60s" } });
    try {
      const { secret } = await createAdminToken(tight.composed.services.admin, CLI_CALLER, { name: "tight", scopes: ["admin"] });
      const statuses: number[] = [];
      let last: Response | null = null;
      for (let i = 0; i < 3; i++) {
        last = await tight.request("GET", "/admin/licenses", { token: secret });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      expect(((await last!.json()) as { error: string }).error).toBe("rate_limited");
      expect(last!.headers.get("ratelimit-policy")).toBe('"admin";q=2;w=60');
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
      // Refused before the token is read: a bad token is limited too, not answered 401.
      expect((await tight.request("POST", "/admin/licenses", { body: {} })).status).toBe(429);
      // The same address's non-admin requests are on the api budget.
      const health = await tight.request("GET", "/meta");
      expect(health.status).toBe(200);
      expect(health.headers.get("ratelimit-policy")).toStartWith('"api";');
      // The next window admits admin requests again.
      tight.clock.advance(61_000);
      expect((await tight.request("GET", "/admin/licenses", { token: secret })).status).toBe(200);
    } finally {
      await tight.close();
    }
  });
});
