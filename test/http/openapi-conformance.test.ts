import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { copyFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { offlineRequestCode } from "../../src/client";
import { VARIANT_NAMES, VARIANTS, type VariantName } from "../../src/config/variants";
import { CLI_CALLER, SCOPES, type Scope } from "../../src/domain/admin/deps";
import { createAdminToken, revokeAdminToken } from "../../src/domain/admin/tokens";
import { updateLicense } from "../../src/domain/admin/licenses";
import { isoTime } from "../../src/domain/clock";
import { keepStatsIn, StatsCache } from "../../src/domain/stats-cache";
import { newId } from "../../src/domain/ids";
import { generateKeyFiles } from "../../src/domain/keys";
import type { SqliteStore } from "../../src/store/sqlite";
import { BASE, createLicense, device, tempDir, testClock, testSite, type TestSite } from "../helpers";
import { stripe as stripeEvents } from "../commerce-events";
import { STRIPE_SECRET, stripeHeader } from "../commerce-signers";
import { CLIENT_ID, STAFF_GROUP, startIssuer, type LocalIssuer } from "../identity-issuer";
import { feedFileEntry, ReleaseTree } from "../release-tree";
import { signManifest } from "../../src/domain/releases/signature";
import { UPLOAD_LIMITS } from "../../src/domain/releases/upload-model";

// The OpenAPI document tells the truth: every operation of every variant is sent requests that give
// each of its documented answers, and every answer is held to the document (status, headers, body
// under a JSON Schema 2020-12 validator). Coverage of (method, path, status, code) must be complete.

interface DocResponse {
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: Record<string, unknown> }>;
}
interface Doc {
  info: { description: string };
  paths: Record<string, Record<string, { responses: Record<string, DocResponse> }>>;
  components: { responses: { MethodNotAllowed: DocResponse } };
}

/**
 * Codes no request from outside can provoke; each is still checked to be documented.
 * - internal_error: the answer to a fault in keyturn itself (a bug, or an exception it did not
 *   foresee); a request that could cause it would be a bug to fix, not an answer to test.
 */
const UNPROVOKABLE = new Set(["internal_error"]);

const START = Date.parse("2026-11-21T12:00:00Z");
const clock = testClock(START);
let issuer: LocalIssuer;
beforeAll(async () => {
  issuer = await startIssuer(clock);
});
afterAll(() => issuer.stop());

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addFormat("binary", true);
const compiled = new WeakMap<object, ValidateFunction>();
function validate(schema: Record<string, unknown>, value: unknown): string[] {
  let v = compiled.get(schema);
  if (!v) compiled.set(schema, (v = ajv.compile(schema)));
  return v(value) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

/** Holds answers to one variant's document and records what was seen. */
class Conformance {
  readonly seen = new Set<string>();
  constructor(readonly doc: Doc) {}

  /** Checks one answer; gives the error code (for HEAD, `headCode`: the GET's). */
  async check(method: string, template: string, res: Response, label: string, headCode?: string, concretePath?: string): Promise<{ code: string; body: any }> {
    const where = `${method} ${template} (${label}) → ${res.status}`;
    const item = this.doc.paths[template];
    expect(item, `${where}: path not documented`).toBeDefined();
    const op = item![method.toLowerCase()];
    let documented: DocResponse | undefined;
    if (!op) {
      expect(res.status, where).toBe(405);
      documented = this.doc.components.responses.MethodNotAllowed;
      const allow = (res.headers.get("allow") ?? "").split(",").map((m) => m.trim());
      expect(allow.sort(), where).toEqual(this.methodsAt(concretePath ?? template));
    } else documented = op.responses[String(res.status)];
    expect(documented, `${where}: status not documented`).toBeDefined();
    for (const name of Object.keys(documented!.headers ?? {})) expect(res.headers.has(name), `${where}: header ${name}`).toBe(true);

    const text = await res.text();
    let body: any;
    let code = headCode ?? "";
    if (method === "HEAD") expect(text, `${where}: HEAD has no body`).toBe("");
    else if (documented!.content) {
      const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
      const media = documented!.content[type];
      expect(media, `${where}: content type ${type} not documented`).toBeDefined();
      if (type === "application/json") {
        body = JSON.parse(text);
        expect(validate(media!.schema, body), `${where}: ${text.slice(0, 300)}`).toEqual([]);
        if (res.status >= 400) code = body.error;
      } else if (media!.schema.type === "string" && media!.schema.format !== "binary") expect(validate(media!.schema, text), where).toEqual([]);
      else expect(text.length, where).toBeGreaterThan(0);
    } else expect(text, `${where}: a body the document does not describe`).toBe("");
    if (res.status >= 400) expect(code, `${where}: error code`).not.toBe("");
    this.seen.add(key(method, template, res.status, code));
    return { code, body };
  }

  /**
   * The methods a concrete path is answered under: those of every documented template it matches
   * (a literal segment also matches a template's `{param}`, e.g. PATCH /admin/webhook-deliveries is
   * PATCH /admin/webhooks/{id}).
   */
  methodsAt(path: string): string[] {
    const out = new Set<string>();
    for (const [template, item] of Object.entries(this.doc.paths)) {
      const re = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`);
      if (re.test(path)) for (const m of Object.keys(item)) out.add(m.toUpperCase());
    }
    return [...out].sort();
  }

  /** Every (method, path, status[, code]) the document promises; 405 for every path. */
  expected(): Set<string> {
    const out = new Set<string>();
    for (const [path, item] of Object.entries(this.doc.paths)) {
      out.add(key("*", path, 405, "method_not_allowed"));
      for (const [m, op] of Object.entries(item))
        for (const [status, r] of Object.entries(op.responses)) {
          if (Number(status) < 400) out.add(key(m.toUpperCase(), path, Number(status), ""));
          else {
            // A HEAD refusal has no body: its codes are those of the GET's refusal with that status.
            const withBody = m === "head" ? item.get!.responses[status]! : r;
            const codes = (withBody.content!["application/json"]!.schema as any).properties.error.enum as string[];
            for (const c of codes) if (!UNPROVOKABLE.has(c)) out.add(key(m.toUpperCase(), path, Number(status), c));
          }
        }
    }
    return out;
  }
}

const key = (method: string, path: string, status: number, code: string) => `${method} ${path} ${status}${code ? ` ${code}` : ""}`;

/** The Stripe bridge, on for the conformance run. */
const BRIDGE = { "stripe-webhook-secret": STRIPE_SECRET, "bridge-products": JSON.stringify({ stripe: { price_conf: { plan: "conf" } } }) };

interface Send {
  token?: string;
  body?: string | object;
  /** Content-Type; null sends none. Defaults to application/json when there is a body. */
  type?: string | null;
  headers?: Record<string, string>;
  peer?: string;
}

function send(site: TestSite, method: string, path: string, o: Send = {}): Promise<Response> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  let body: string | undefined;
  if (o.body !== undefined) body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
  const type = o.type === undefined ? (body !== undefined ? "application/json" : null) : o.type;
  if (type !== null) headers["content-type"] = type;
  const request = new Request(BASE + path, { method, headers, body });
  return o.peer === undefined ? site.app.handle(request) : site.app.handle(request, o.peer);
}

/** Headers a HEAD must share with its GET; the budget's remainder and the framing differ by design. */
function comparable(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((value, name) => {
    if (name !== "ratelimit" && name !== "content-length") out[name] = value;
  });
  return out;
}

async function runVariant(variant: VariantName) {
  const v = VARIANTS[variant];
  const product = v.products[0] ?? null;
  clock.set(START);
  const cleanups: (() => Promise<void> | void)[] = [];
  try {
    const identity = { "identity-issuer": issuer.url, "identity-client-id": CLIENT_ID, "identity-groups": STAFF_GROUP };
    const tree = new ReleaseTree(variant);
    cleanups.push(() => tree.remove());
    generateKeyFiles(tree.keysDir, v.defaultLicenseKid);
    // The older release is also Velopack's full package (its feed serves the package itself).
    // It is Squirrel.Windows' full package too, with a delta.
    const nupkg = Buffer.from("velopack package bytes");
    const sha1Of = (b: Uint8Array | string) => new Bun.CryptoHasher("sha1").update(b).digest("hex");
    const squirrelDelta = "App-0.9.0-delta.nupkg";
    const older = tree.add({
      version: "0.9.0",
      released: "2026-09-01T00:00:00+00:00",
      installer: "App-0.9.0-full.nupkg",
      installerBytes: nupkg,
      files: { [squirrelDelta]: "delta bytes" },
      fields: {
        feeds: {
          velopack: { packageId: "App", sha1: sha1Of(nupkg) },
          squirrel: { sha1: sha1Of(nupkg), deltas: [{ ...feedFileEntry(squirrelDelta, "delta bytes"), sha1: sha1Of("delta bytes") }] },
        },
      },
    });
    // A macOS zip on preview (stable stays without one): Squirrel.Mac's, with a Sparkle delta.
    const macZip = Buffer.from("mac zip bytes");
    const sparkleDelta = "App-1.0.0-from-0.9.delta";
    const edSignature = `${"A".repeat(86)}==`;
    const mac = tree.add({
      version: "1.0.0",
      channel: "preview",
      platform: "mac-arm64",
      installer: "App-1.0.0-mac.zip",
      installerBytes: macZip,
      files: { [sparkleDelta]: "sparkle delta" },
      fields: { feeds: { sparkle: { edSignature, deltas: [{ ...feedFileEntry(sparkleDelta, "sparkle delta"), deltaFrom: "090", edSignature }] } } },
    });
    // Its feed files: a Tauri signature and an electron blockmap (their bytes need only match the manifest here).
    const installerName = `${product ?? v.name}-1.0.0-win-x64.exe`;
    const feedFiles = { [`${installerName}.sig`]: "dGF1cmkgc2lnbmF0dXJl", [`${installerName}.blockmap`]: "blockmap" };
    const release = tree.add({
      version: "1.0.0",
      files: feedFiles,
      fields: {
        feeds: {
          electron: { blockmap: feedFileEntry(`${installerName}.blockmap`, feedFiles[`${installerName}.blockmap`]!) },
          tauri: { signature: feedFileEntry(`${installerName}.sig`, feedFiles[`${installerName}.sig`]!) },
        },
      },
    });
    // A macOS platform besides the spec's, so the Sparkle feed answers (design.md "Platforms and channels beyond the spec's").
    const lanes = { platforms: "win-x64,mac-arm64" };
    const site = await testSite(variant, {
      withKey: false,
      clock,
      // Every operation is provoked here, more admin requests than one address may send a minute by
      // default; the 429 is provoked on a site of its own below.
      settings: {
        keys: tree.keysDir,
        releases: tree.root,
        ...identity,
        ...lanes,
        "staff-seats": "1",
        ...BRIDGE,
        "rate-limit-admin": "100000/60s",
        // Mail written to the outbox (no worker runs here: the server is never reached) for the admin mail operations.
        "smtp-url": "smtp://127.0.0.1:9",
        "mail-from": "licences@example.com",
      },
      // A plan to renew on (POST /admin/licenses/{id}/renew); the licences here name other plans.
      tables: { plans: { maintained: { updatesFor: "365d" } } },
    });
    cleanups.push(
      () => site.close(),
      () => site.composed.services.releases.close(),
    );
    await site.composed.services.releases.ready();
    const db = (site.composed.store as SqliteStore).db;

    const docRes = await send(site, "GET", "/openapi.json");
    const docText = await docRes.clone().text();
    const c = new Conformance(JSON.parse(docText) as Doc);
    await c.check("GET", "/openapi.json", docRes, "the document");
    // What the HTTP server answers before keyturn sees a request (test/http/limits.test.ts sends both over a socket).
    expect(c.doc.info.description).toMatch(/431 with no body.*413 with no body/);

    const GET = async (template: string, path: string, o: Send, label: string, expectStatus: number, expectCode?: string) => {
      const g = await send(site, "GET", path, o);
      const h = await send(site, "HEAD", path, o);
      const gHeaders = comparable(g.headers);
      const hHeaders = comparable(h.headers);
      const { code, body } = await c.check("GET", template, g, label);
      expect({ label, status: g.status, code }).toEqual({ label, status: expectStatus, code: expectCode ?? "" });
      expect(h.status, `HEAD ${label}`).toBe(g.status);
      expect(hHeaders, `HEAD ${label}: headers`).toEqual(gHeaders);
      await c.check("HEAD", template, h, label, code);
      return { get: g, code, body };
    };
    const POST = async (site_: TestSite, template: string, o: Send, label: string, expectStatus: number, expectCode?: string) => {
      const res = await send(site_, "POST", template, o);
      const out = await c.check("POST", template, res, label);
      expect({ label, status: res.status, code: out.code }).toEqual({ label, status: expectStatus, code: expectCode ?? "" });
      return out.body;
    };

    const activate = async (channels = ["stable", "preview"], extra = {}) => {
      const { key: licenseKey, license } = await createLicense(site, { channels, seats: 50, ...extra });
      const dev = device(variant);
      const body = await POST(site, "/licenses/activate", { body: { key: licenseKey, device: dev } }, "activate", 200);
      return { licenseKey, licenseId: license.id, dev, token: body.token as string };
    };

    // --- the site's own GETs
    await GET("/health", "/health", {}, "health", 200);
    await GET("/meta", "/meta", {}, "meta", 200);
    await GET("/openapi.json", "/openapi.json", {}, "openapi", 200);
    await GET("/auth/identity", "/auth/identity", {}, "identity info", 200);

    // --- staff sign-in: issuer down first, while the site has no key set of it yet
    const X = "/auth/identity/exchange";
    const signIn = async (dev: object, claims: Record<string, unknown> = {}, target: TestSite = site) => {
      const ch = await POST(target, "/auth/identity/challenge", { body: { device: dev } }, "challenge", 200);
      return { nonce: ch.nonce as string, idToken: await issuer.mint({ nonce: ch.nonce, ...claims }) };
    };
    const staffDev = device(variant);
    issuer.down = true;
    try {
      const { idToken } = await signIn(staffDev);
      await POST(site, X, { body: { id_token: idToken, device: staffDev } }, "issuer down", 503, "issuer_unavailable");
    } finally {
      issuer.down = false;
    }
    clock.advance(31_000); // past the wait before the issuer's keys are read again
    const exchange = async (claims: Record<string, unknown>, label: string, status: number, code?: string, dev = staffDev) => {
      const { idToken } = await signIn(dev, claims);
      await POST(site, X, { body: { id_token: idToken, device: dev } }, label, status, code);
      return idToken;
    };
    const used = await exchange({}, "staff sign-in", 200);
    await POST(site, X, { body: { id_token: used, device: staffDev } }, "token replayed", 409, "token_replayed");
    await POST(site, X, { body: { id_token: await issuer.mint({ nonce: "never-issued" }), device: staffDev } }, "unknown nonce", 401, "challenge_unknown");
    await POST(site, X, { body: { id_token: "not-a-token", device: staffDev } }, "not a token", 401, "token_invalid");
    await exchange({ auth_time: undefined }, "no auth_time", 401, "stale_authentication");
    await exchange({ amr: ["pwd"] }, "no second factor", 403, "mfa_required");
    await exchange({ groups: ["everyone"] }, "no group", 403, "not_in_required_group");
    await exchange({}, "second computer, one staff seat", 409, "seat_limit", device(variant));
    // The records say the staff license expired (an operator's edit, or a restored backup).
    db.query("UPDATE licenses SET expires = ? WHERE id = ?").run(clock() - 1000, "staff:00u-grace");
    await exchange({}, "staff license expired", 403, "license_expired");
    db.query("UPDATE licenses SET expires = NULL WHERE id = ?").run("staff:00u-grace");
    await site.composed.store.revokeLicense("staff:00u-grace", clock());
    await exchange({}, "staff license revoked", 403, "license_revoked");
    for (const path of ["/auth/identity/challenge", X]) {
      await POST(site, path, { body: {} }, "empty object", 400, "invalid_request");
      await POST(site, path, {}, "no body", 400, "invalid_request");
      await POST(site, path, { body: "{", type: "application/json" }, "not JSON", 400, "invalid_request");
      await POST(site, path, { body: "device=x", type: "text/plain" }, "text/plain", 415, "unsupported_media_type");
      await POST(site, path, { body: { pad: "x".repeat(17 * 1024) } }, "over 16 KiB", 413, "payload_too_large");
    }

    // --- activate
    const A = "/licenses/activate";
    const dev = device(variant);
    await POST(site, A, { body: { key: "not-a-key", device: dev } }, "unknown key", 403, "license_unknown");
    const revoked = await createLicense(site);
    await site.admin.revokeLicense(revoked.license.id);
    await POST(site, A, { body: { key: revoked.key, device: dev } }, "revoked license", 403, "license_revoked");
    const expiring = await createLicense(site, { expires: clock() + 1000 });
    clock.advance(2000);
    await POST(site, A, { body: { key: expiring.key, device: dev } }, "expired license", 403, "license_expired");
    const oneSeat = await createLicense(site, { seats: 1 });
    await POST(site, A, { body: { key: oneSeat.key, device: device(variant) } }, "first seat", 200);
    await POST(site, A, { body: { key: oneSeat.key, device: device(variant) } }, "no seat left", 409, "seat_limit");
    await POST(site, A, { body: { key: oneSeat.key } }, "no device", 400, "invalid_request");
    await POST(site, A, {}, "no body", 400, "invalid_request");
    await POST(site, A, { body: "key=x", type: "text/plain" }, "text/plain", 415, "unsupported_media_type");
    await POST(site, A, { body: { key: "x".repeat(17 * 1024) } }, "over 16 KiB", 413, "payload_too_large");

    // --- tokens in every state
    const live = await activate();
    const stableOnly = await activate(["stable"]);
    // Feed credentials (POST /feeds/credential), made while their tokens were good.
    const credentialOf = async (token: string) => (await POST(site, "/feeds/credential", { token }, "feed credential", 200)).credential as string;
    const gone = await activate();
    const goneCredential = await credentialOf(gone.token);
    await POST(site, "/entitlements/deactivate", { token: gone.token }, "deactivate", 200);
    const revokedLater = await activate();
    const revokedCredential = await credentialOf(revokedLater.token);
    await site.admin.revokeLicense(revokedLater.licenseId);
    const liveCredential = await credentialOf(live.token);
    const stableOnlyCredential = await credentialOf(stableOnly.token);
    // A licence whose expiry was brought forward after its token was issued (an admin edit, a
    // cancelled subscription): the token's own exp is still ahead, the licence's is past.
    const expiredRecord = await activate();
    const expiredCredential = await credentialOf(expiredRecord.token);
    db.query("UPDATE licenses SET expires = ? WHERE id = ?").run(clock() - 1000, expiredRecord.licenseId);

    const lane = [product, "stable", "win-x64"].filter(Boolean).join("/");
    const preview = [product, "preview", "win-x64"].filter(Boolean).join("/");
    const U = `/updates/${product ? "{product}/" : ""}{channel}/{platform}/{file}`;
    const P = product ? "{product}/" : "";
    const laneOfFeed = [product, "stable"].filter(Boolean).join("/");
    const previewFeed = [product, "preview"].filter(Boolean).join("/");
    const FE = `/feeds/electron/${P}{channel}/{file}`;
    const FT = `/feeds/tauri/${P}{channel}/{target}/{arch}/{current_version}`;
    const FS = `/feeds/sparkle/${P}{channel}/{file}`;
    const FV = `/feeds/velopack/${P}{channel}/{file}`;
    const FVC = `/feeds/credential/{credential}/velopack/${P}{channel}/{file}`;
    const credentialFeed = (credential: string, lane_ = laneOfFeed, file = "releases.win.json") => `/feeds/credential/${credential}/velopack/${lane_}/${file}`;
    // Electron's autoUpdater: Squirrel.Windows (SQ), Squirrel.Mac's check (SM) and zip (SZ), each with its credential twin; Sparkle's deltas (SD).
    const SQ = `/feeds/squirrel/${P}{channel}/{platform}/{file}`;
    const SQC = `/feeds/credential/{credential}/squirrel/${P}{channel}/{platform}/{file}`;
    const SM = `/feeds/squirrel-mac/${P}{channel}/{platform}/{current_version}`;
    const SMC = `/feeds/credential/{credential}/squirrel-mac/${P}{channel}/{platform}/{current_version}`;
    const SZ = `/feeds/squirrel-mac/${P}{channel}/{platform}/zip/{file}`;
    const SZC = `/feeds/credential/{credential}/squirrel-mac/${P}{channel}/{platform}/zip/{file}`;
    const SD = `/feeds/sparkle/${P}{channel}/deltas/{platform}/{file}`;
    const squirrelPath = (file = "RELEASES", lane_ = laneOfFeed) => `/feeds/squirrel/${lane_}/win-x64/${file}`;
    const macCheckPath = `/feeds/squirrel-mac/${previewFeed}/mac-arm64/0.1.0`;
    const zipPath = `/feeds/squirrel-mac/${previewFeed}/mac-arm64/zip/${mac.installer}`;
    const deltaPath = `/feeds/sparkle/${previewFeed}/deltas/mac-arm64/${sparkleDelta}`;
    const withCredential = (credential: string, path: string) => path.replace("/feeds/", `/feeds/credential/${credential}/`);
    const twins: [string, string][] = [
      [SQC, squirrelPath()],
      [SMC, macCheckPath],
      [SZC, zipPath],
    ];
    const bearerGets: [string, string][] = [
      ["/entitlements/current", "/entitlements/current"],
      ["/entitlements/usage", "/entitlements/usage"],
      ["/releases", "/releases"],
      [U, `/updates/${lane}/${v.manifestFile}`],
      [FE, `/feeds/electron/${laneOfFeed}/latest.yml`],
      [FT, `/feeds/tauri/${laneOfFeed}/windows/x86_64/0.1.0`],
      [FS, `/feeds/sparkle/${laneOfFeed}/appcast.xml`],
      [FV, `/feeds/velopack/${laneOfFeed}/releases.win.json`],
      [SQ, squirrelPath()],
      [SM, macCheckPath],
      [SZ, zipPath],
      [SD, deltaPath],
    ];
    const bearerPosts = ["/entitlements/refresh", "/entitlements/deactivate", "/entitlements/usage", "/feeds/credential", "/updates/report"];
    const refreshBody = (d: object) => ({ body: { device: d } });
    const usageBody = (amount: number, idempotencyKey: string = crypto.randomUUID(), meter = "exports") => ({ body: { meter, amount, idempotencyKey } });

    for (const [template, path] of bearerGets) {
      await GET(template, path, {}, "no token", 401, "entitlement_invalid");
      await GET(template, path, { token: "a.b.c" }, "not a token", 401, "entitlement_invalid");
      await GET(template, path, { token: gone.token }, "deactivated", 401, "entitlement_revoked");
      await GET(template, path, { token: revokedLater.token }, "license revoked", 403, "license_revoked");
      await GET(template, path, { token: expiredRecord.token }, "license expired since", 403, "license_expired");
    }
    await GET(FVC, credentialFeed("a.b.c"), {}, "not a credential", 401, "entitlement_invalid");
    await GET(FVC, credentialFeed(live.token), {}, "a token in the credential's place", 401, "entitlement_invalid");
    await GET(FVC, credentialFeed(goneCredential), {}, "deactivated", 401, "entitlement_revoked");
    await GET(FVC, credentialFeed(revokedCredential), {}, "license revoked", 403, "license_revoked");
    await GET(FVC, credentialFeed(expiredCredential), {}, "license expired since", 403, "license_expired");
    for (const [template, path] of twins) {
      await GET(template, withCredential("a.b.c", path), {}, "not a credential", 401, "entitlement_invalid");
      await GET(template, withCredential(goneCredential, path), {}, "deactivated", 401, "entitlement_revoked");
      await GET(template, withCredential(revokedCredential, path), {}, "license revoked", 403, "license_revoked");
      await GET(template, withCredential(expiredCredential, path), {}, "license expired since", 403, "license_expired");
    }
    for (const path of bearerPosts) {
      const body = path.endsWith("refresh") ? refreshBody(live.dev) : path.endsWith("usage") ? usageBody(1) : {};
      await POST(site, path, { ...body }, "no token", 401, "entitlement_invalid");
      await POST(site, path, { ...body, token: "a.b.c" }, "not a token", 401, "entitlement_invalid");
      await POST(site, path, { ...body, token: gone.token }, "deactivated", 401, "entitlement_revoked");
      await POST(site, path, { ...body, token: revokedLater.token }, "license revoked", 403, "license_revoked");
      // Deactivating gives the seat back even so (below, once the token's other uses are done).
      if (!path.endsWith("/deactivate")) await POST(site, path, { ...body, token: expiredRecord.token }, "license expired since", 403, "license_expired");
    }
    // The token expires: every bearer operation answers entitlement_expired.
    clock.advance(8 * 24 * 3600_000);
    for (const [template, path] of bearerGets) await GET(template, path, { token: live.token }, "expired token", 401, "entitlement_expired");
    await POST(site, "/entitlements/refresh", { ...refreshBody(live.dev), token: live.token }, "expired token", 401, "entitlement_expired");
    await POST(site, "/entitlements/deactivate", { token: live.token }, "expired token", 401, "entitlement_expired");
    await POST(site, "/entitlements/usage", { ...usageBody(1), token: live.token }, "expired token", 401, "entitlement_expired");
    await POST(site, "/feeds/credential", { token: live.token }, "expired token", 401, "entitlement_expired");
    await GET(FVC, credentialFeed(liveCredential), {}, "expired credential", 401, "entitlement_expired");
    for (const [template, path] of twins) await GET(template, withCredential(liveCredential, path), {}, "expired credential", 401, "entitlement_expired");
    await POST(site, "/updates/report", { token: live.token, body: {} }, "expired token", 401, "entitlement_expired");
    clock.advance(-8 * 24 * 3600_000);

    // --- metered use (docs/trials-and-meters.md)
    const M = "/entitlements/usage";
    await updateLicense(site.composed.services.admin, CLI_CALLER, live.licenseId, { meters: { exports: { limit: 3, period: "30d" } } });
    await POST(site, M, { ...usageBody(2, "conformance-1"), token: live.token }, "use", 200);
    await GET(M, M, { token: live.token }, "meters left", 200);
    await POST(site, M, { ...usageBody(1, "conformance-1"), token: live.token }, "key used for another amount", 409, "idempotency_conflict");
    await POST(site, M, { ...usageBody(2), token: live.token }, "over the limit", 403, "usage_limit");
    await POST(site, M, { ...usageBody(1, undefined, "imports"), token: live.token }, "no such meter", 404, "not_found");
    await POST(site, M, { token: live.token, body: { meter: "exports", amount: 0, idempotencyKey: "k" } }, "amount 0", 400, "invalid_request");
    await POST(site, M, { token: live.token, body: "exports", type: "text/plain" }, "text/plain", 415, "unsupported_media_type");
    await POST(site, M, { token: live.token, body: { pad: "x".repeat(17 * 1024) } }, "over 16 KiB", 413, "payload_too_large");

    // --- current and refresh
    await GET("/entitlements/current", "/entitlements/current", { token: live.token }, "current", 200);
    await GET("/entitlements/current", "/entitlements/current", { token: expiredRecord.token }, "license record expired", 403, "license_expired");
    const R = "/entitlements/refresh";
    await POST(site, R, { ...refreshBody(live.dev), token: live.token }, "refresh", 200);
    await POST(site, R, { token: live.token, type: null }, "no body at all", 400, "invalid_request");
    await POST(site, R, { token: live.token, body: {} }, "empty object", 400, "invalid_request");
    await POST(site, R, { token: live.token, body: "device", type: "text/plain" }, "text/plain", 415, "unsupported_media_type");
    await POST(site, R, { token: live.token, body: { pad: "x".repeat(17 * 1024) } }, "over 16 KiB", 413, "payload_too_large");
    await POST(site, R, { ...refreshBody(device(variant)), token: live.token }, "another device", 403, "device_mismatch");
    await POST(site, R, { ...refreshBody(expiredRecord.dev), token: expiredRecord.token }, "license record expired", 403, "license_expired");
    await POST(site, "/entitlements/deactivate", { token: expiredRecord.token }, "license expired since: the seat is given back", 200);

    // --- releases
    await GET("/releases", "/releases", { token: live.token }, "releases", 200);
    if (product) await GET("/releases", `/releases?product=${product}`, { token: live.token }, "releases of a product", 200);
    await GET("/releases", "/releases?product=nope", { token: live.token }, "unknown product", 400, "invalid_request");

    // --- update files
    const manifestPath = `/updates/${lane}/${v.manifestFile}`;
    const installerPath = `/updates/${lane}/${release.installer}`;
    const auth = { token: live.token };
    const manifest = await GET(U, manifestPath, auth, "manifest", 200);
    expect(manifest.get.headers.get("accept-ranges")).toBe("none");
    await GET(U, `${manifestPath}.sig`, auth, "signature", 200);
    const installer = await GET(U, installerPath, auth, "installer", 200);
    const etag = installer.get.headers.get("etag")!;
    await GET(U, installerPath, { ...auth, headers: { range: "bytes=0-9" } }, "a range", 206);
    await GET(U, installerPath, { ...auth, headers: { "if-none-match": etag } }, "installer not modified", 304);
    await GET(U, manifestPath, { ...auth, headers: { "if-none-match": manifest.get.headers.get("etag")! } }, "manifest not modified", 304);
    const beyond = await GET(U, installerPath, { ...auth, headers: { range: "bytes=99999999-" } }, "range beyond the end", 416, "range_not_satisfiable");
    expect(beyond.get.headers.get("content-range")).toBe(`bytes */${release.installerBytes.length}`);
    await GET(U, `/updates/${lane}/nothing-here.txt`, auth, "unknown file", 404, "not_found");
    await GET(U, `/updates/${preview}/${v.manifestFile}`, auth, "nothing released on preview", 404, "no_release");
    await GET(U, `/updates/${preview}/${v.manifestFile}`, { token: stableOnly.token }, "channel not in the entitlement", 403, "channel_not_allowed");
    // A maintenance window that ended before 1.0.0 was released (design.md "Licence models").
    const windowed = await activate(["stable"], { updatesUntil: "2026-09-15T00:00:00Z" });
    await GET(U, installerPath, { token: windowed.token }, "installer released after the window", 403, "updates_window_ended");
    await GET(
      FE,
      `/feeds/electron/${laneOfFeed}/${release.installer}`,
      { token: windowed.token },
      "electron installer after the window",
      403,
      "updates_window_ended",
    );

    // --- install outcome reports
    const RP = "/updates/report";
    const report = { from: "0.9.0", to: "1.0.0", outcome: "failed", code: "E1603" };
    await POST(site, RP, { ...auth, body: report }, "install report", 200);
    await POST(site, RP, { ...auth, body: { ...report, to: "7.7.7" } }, "report of no release", 404, "not_found");
    await POST(site, RP, { ...auth, body: { ...report, outcome: "exploded" } }, "unknown outcome", 400, "invalid_request");
    await POST(site, RP, { ...auth, body: "to=1.0.0", type: "text/plain" }, "text/plain", 415, "unsupported_media_type");
    await POST(site, RP, { ...auth, body: { pad: "x".repeat(17 * 1024) } }, "over 16 KiB", 413, "payload_too_large");

    // --- the feeds of existing updaters
    const notModified = async (template: string, path: string, label: string) => {
      const first = await GET(template, path, auth, label, 200);
      await GET(template, path, { ...auth, headers: { "if-none-match": first.get.headers.get("etag")! } }, `${label} not modified`, 304);
    };
    await notModified(FE, `/feeds/electron/${laneOfFeed}/latest.yml`, "electron channel file");
    await GET(FE, `/feeds/electron/${laneOfFeed}/${release.installer}`, auth, "electron installer", 200);
    await GET(FE, `/feeds/electron/${laneOfFeed}/${release.installer}.blockmap`, auth, "electron blockmap", 200);
    await GET(FE, `/feeds/electron/${laneOfFeed}/${release.installer}`, { ...auth, headers: { range: "bytes=0-9, 20-29" } }, "several ranges", 206);
    await GET(
      FE,
      `/feeds/electron/${laneOfFeed}/${release.installer}`,
      { ...auth, headers: { range: "bytes=99999999-" } },
      "range beyond the end",
      416,
      "range_not_satisfiable",
    );
    await GET(FE, `/feeds/electron/${laneOfFeed}/nothing-here.txt`, auth, "unknown file", 404, "not_found");
    await GET(FE, `/feeds/electron/${previewFeed}/latest.yml`, { token: stableOnly.token }, "channel not in the entitlement", 403, "channel_not_allowed");
    // preview's channel file would offer stable's release (electron-builder's cascade): nothing is released for macOS.
    await GET(FE, `/feeds/electron/${laneOfFeed}/latest-mac.yml`, auth, "nothing released for macOS", 404, "no_release");
    await notModified(FT, `/feeds/tauri/${laneOfFeed}/windows/x86_64/0.1.0`, "tauri update");
    await GET(FT, `/feeds/tauri/${laneOfFeed}/windows/x86_64/9.0.0`, auth, "tauri nothing newer", 204);
    await GET(FT, `/feeds/tauri/${laneOfFeed}/windows/x86_64/not%20a%20version`, auth, "tauri bad version", 400, "invalid_request");
    await GET(FT, `/feeds/tauri/${laneOfFeed}/beos/x86_64/1.0.0`, auth, "tauri unknown target", 404, "not_found");
    await GET(FT, `/feeds/tauri/${laneOfFeed}/darwin/aarch64/1.0.0`, auth, "nothing released for macOS: no update", 204);
    await GET(
      FT,
      `/feeds/tauri/${previewFeed}/windows/x86_64/1.0.0`,
      { token: stableOnly.token },
      "channel not in the entitlement",
      403,
      "channel_not_allowed",
    );
    await notModified(FS, `/feeds/sparkle/${laneOfFeed}/appcast.xml`, "appcast");
    await GET(FS, `/feeds/sparkle/${[product, "nightly"].filter(Boolean).join("/")}/appcast.xml`, auth, "unknown channel", 404, "not_found");
    await GET(FS, `/feeds/sparkle/${previewFeed}/appcast.xml`, { token: stableOnly.token }, "channel not in the entitlement", 403, "channel_not_allowed");
    await notModified(FV, `/feeds/velopack/${laneOfFeed}/releases.win.json`, "velopack releases");
    await GET(FV, `/feeds/velopack/${laneOfFeed}/releases.mac.json`, auth, "unknown file", 404, "not_found");
    await GET(
      FV,
      `/feeds/velopack/${previewFeed}/releases.win.json`,
      { token: stableOnly.token },
      "channel not in the entitlement",
      403,
      "channel_not_allowed",
    );
    const packagePath = `/feeds/velopack/${laneOfFeed}/${older.installer}`;
    await GET(FV, packagePath, auth, "velopack package", 200);
    await GET(FV, packagePath, { ...auth, headers: { range: "bytes=0-3" } }, "a range of the package", 206);
    await GET(FV, packagePath, { ...auth, headers: { range: "bytes=99999-" } }, "range beyond the end", 416, "range_not_satisfiable");
    // The same feed with the credential in its path, for Velopack's core (it sends no header).
    const first = await GET(FVC, credentialFeed(liveCredential), {}, "velopack releases by credential", 200);
    await GET(FVC, credentialFeed(liveCredential), { headers: { "if-none-match": first.get.headers.get("etag")! } }, "not modified", 304);
    await GET(FVC, credentialFeed(liveCredential, laneOfFeed, older.installer), {}, "package by credential", 200);
    await GET(FVC, credentialFeed(liveCredential, laneOfFeed, older.installer), { headers: { range: "bytes=0-3" } }, "a range", 206);
    await GET(FVC, credentialFeed(liveCredential, laneOfFeed, older.installer), { headers: { range: "bytes=99999-" } }, "beyond", 416, "range_not_satisfiable");
    await GET(FVC, credentialFeed(liveCredential, laneOfFeed, "nothing.nupkg"), {}, "unknown file", 404, "not_found");
    await GET(FVC, credentialFeed(stableOnlyCredential, previewFeed), {}, "channel not in the entitlement", 403, "channel_not_allowed");
    // Electron's autoUpdater (Squirrel), by bearer and by credential, and Sparkle's deltas.
    for (const [template, credentialTemplate, path] of [
      [SQ, SQC, squirrelPath()],
      [SQ, SQC, squirrelPath(older.installer)],
      [SZ, SZC, zipPath],
    ] as const) {
      await notModified(template, path, `${path} by bearer`);
      const byCredential = await GET(credentialTemplate, withCredential(liveCredential, path), {}, `${path} by credential`, 200);
      await GET(
        credentialTemplate,
        withCredential(liveCredential, path),
        { headers: { "if-none-match": byCredential.get.headers.get("etag")! } },
        "not modified",
        304,
      );
    }
    await notModified(SD, deltaPath, "sparkle delta");
    await GET(SQ, squirrelPath(squirrelDelta), auth, "squirrel delta", 200);
    for (const [template, credentialTemplate, path] of [
      [SQ, SQC, squirrelPath(older.installer)],
      [SZ, SZC, zipPath],
    ] as const) {
      await GET(template, path, { ...auth, headers: { range: "bytes=0-3" } }, "a range", 206);
      await GET(template, path, { ...auth, headers: { range: "bytes=99999-" } }, "range beyond the end", 416, "range_not_satisfiable");
      await GET(credentialTemplate, withCredential(liveCredential, path), { headers: { range: "bytes=0-3" } }, "a range", 206);
      await GET(credentialTemplate, withCredential(liveCredential, path), { headers: { range: "bytes=99999-" } }, "beyond", 416, "range_not_satisfiable");
    }
    // Squirrel.Mac's answer carries a credential made for it: never a 304.
    await GET(SM, macCheckPath, auth, "squirrel.mac update", 200);
    await GET(SMC, withCredential(liveCredential, macCheckPath), {}, "squirrel.mac update by credential", 200);
    await GET(SM, macCheckPath.replace("/0.1.0", "/9.0.0"), auth, "nothing newer", 204);
    await GET(SMC, withCredential(liveCredential, macCheckPath.replace("/0.1.0", "/9.0.0")), {}, "nothing newer", 204);
    // A licence of preview alone: nothing for Squirrel there (the preview feed offers stable's only to a licence that holds stable).
    const previewOnly = await activate(["preview"]);
    const previewOnlyCredential = await credentialOf(previewOnly.token);
    await GET(SQ, squirrelPath("RELEASES", previewFeed), { token: previewOnly.token }, "nothing for Squirrel on preview", 404, "no_release");
    await GET(SQC, withCredential(previewOnlyCredential, squirrelPath("RELEASES", previewFeed)), {}, "nothing for Squirrel on preview", 404, "no_release");
    await GET(SQC, withCredential(liveCredential, squirrelPath("nothing.nupkg")), {}, "unknown file", 404, "not_found");
    await GET(SQ, squirrelPath("nothing.nupkg"), auth, "unknown file", 404, "not_found");
    await GET(SM, macCheckPath.replace("/mac-arm64/", "/win-x64/"), auth, "not a macOS platform", 404, "not_found");
    await GET(SMC, withCredential(liveCredential, macCheckPath.replace("/mac-arm64/", "/win-x64/")), {}, "not a macOS platform", 404, "not_found");
    await GET(SZ, zipPath.replace(mac.installer, "nothing.zip"), auth, "unknown zip", 404, "not_found");
    await GET(SZC, withCredential(liveCredential, zipPath.replace(mac.installer, "nothing.zip")), {}, "unknown zip", 404, "not_found");
    await GET(SD, deltaPath.replace(sparkleDelta, "nothing.delta"), auth, "unknown delta", 404, "not_found");
    for (const [template, path] of [
      [SQ, squirrelPath("RELEASES", previewFeed)],
      [SM, macCheckPath],
      [SZ, zipPath],
      [SD, deltaPath],
    ] as const) {
      await GET(template, path, { token: stableOnly.token }, "channel not in the entitlement", 403, "channel_not_allowed");
      if (template !== SD)
        await GET(
          template.replace("/feeds/", "/feeds/credential/{credential}/"),
          withCredential(stableOnlyCredential, path),
          {},
          "channel not in the entitlement",
          403,
          "channel_not_allowed",
        );
    }
    // A zip or a delta replaced on disk since the scan: unavailable.
    for (const [template, path, file, bytes, o] of [
      [SZ, zipPath, mac.installerPath, macZip, auth],
      [SZC, withCredential(liveCredential, zipPath), mac.installerPath, macZip, {}],
      [SD, deltaPath, join(mac.dir, sparkleDelta), "sparkle delta", auth],
      [SQ, squirrelPath(squirrelDelta), join(older.dir, squirrelDelta), "delta bytes", auth],
      [SQC, withCredential(liveCredential, squirrelPath(squirrelDelta)), join(older.dir, squirrelDelta), "delta bytes", {}],
    ] as const)
      for (const method of ["GET", "HEAD"]) {
        writeFileSync(file, "other");
        const res = await send(site, method, path, o);
        expect(res.status, `${method} ${path}`).toBe(503);
        expect((await c.check(method, template, res, "file replaced", method === "HEAD" ? "unavailable" : undefined)).code).toBe("unavailable");
        writeFileSync(file, bytes);
        await site.composed.services.releases.rescan();
        await site.composed.services.releases.verified();
      }
    // A package replaced on disk since the scan: unavailable (GET, then HEAD, the package put back between).
    for (const [template, path] of [
      [FV, packagePath],
      [FVC, credentialFeed(liveCredential, laneOfFeed, older.installer)],
      [SQ, squirrelPath(older.installer)],
      [SQC, withCredential(liveCredential, squirrelPath(older.installer))],
    ] as const)
      for (const method of ["GET", "HEAD"]) {
        writeFileSync(older.installerPath, "shorter");
        const res = await send(site, method, path, template === FV || template === SQ ? auth : {});
        expect(res.status, `${method} ${path}`).toBe(503);
        expect((await c.check(method, template, res, "package replaced", method === "HEAD" ? "unavailable" : undefined)).code).toBe("unavailable");
        writeFileSync(older.installerPath, nupkg);
        await site.composed.services.releases.rescan();
        await site.composed.services.releases.verified();
      }
    // A feed file changed after signing is not served (GET, then HEAD: each answer starts a re-scan
    // that drops the folder, so the file is put back and the folder read again in between).
    const changed = async (template: string, path: string, name: string, label: string) => {
      for (const method of ["GET", "HEAD"]) {
        writeFileSync(join(release.dir, name), "changed");
        const res = await send(site, method, path, auth);
        expect(res.status, `${method} ${label}`).toBe(503);
        expect((await c.check(method, template, res, label, method === "HEAD" ? "unavailable" : undefined)).code).toBe("unavailable");
        writeFileSync(join(release.dir, name), feedFiles[name]!);
        await site.composed.services.releases.rescan();
      }
    };
    await changed(FE, `/feeds/electron/${laneOfFeed}/${release.installer}.blockmap`, `${release.installer}.blockmap`, "blockmap changed");
    await changed(FT, `/feeds/tauri/${laneOfFeed}/windows/x86_64/0.1.0`, `${release.installer}.sig`, "signature changed");
    await GET(FT, `/feeds/tauri/${laneOfFeed}/windows/x86_64/0.1.0`, auth, "signature put back", 200);

    // --- deactivate (after the others: it ends the live token)
    await POST(site, "/entitlements/deactivate", { token: live.token }, "deactivate", 200);

    // --- the admin API
    const { mint, expiredAdmin } = await adminTokens(site, clock);
    const adminToken = await mint(["admin"]);
    await adminOperations(site, c, GET, { variant, adminToken, mint, expiredAdmin, entitlement: (await activate()).token });
    await uploadOperations(site, c, GET, tree, adminToken, cleanups);

    // --- every path and query over 8 KiB, every method a path does not answer
    const long = `?q=${"x".repeat(8 * 1024)}`;
    const concrete: Record<string, string> = { [U]: manifestPath };
    for (const [template, item] of Object.entries(c.doc.paths)) {
      const path = concrete[template] ?? template;
      if (item.get) await GET(template, path + long, {}, "URL over 8 KiB", 400, "invalid_request");
      for (const method of Object.keys(item)
        .filter((m) => m !== "get" && m !== "head")
        .map((m) => m.toUpperCase())) {
        const res = await send(site, method, path + long, { body: {} });
        const { code } = await c.check(method, template, res, "URL over 8 KiB");
        expect({ method, status: res.status, code }).toEqual({ method, status: 400, code: "invalid_request" });
      }
      for (const method of ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"].filter((m) => !c.methodsAt(path).includes(m))) {
        const res = await send(site, method, path);
        const { code } = await c.check(method, template, res, "method not answered", method === "HEAD" ? "method_not_allowed" : undefined, path);
        expect({ method, status: res.status, code }).toEqual({ method, status: 405, code: "method_not_allowed" });
        c.seen.add(key("*", template, 405, code));
      }
    }

    // --- a site with no signing key sharing these records: licensing_unavailable
    const pubKeys = tempDir("keyturn-pub-");
    cleanups.push(() => rmSync(pubKeys, { recursive: true, force: true }));
    copyFileSync(join(tree.keysDir, `${v.defaultLicenseKid}.pub.pem`), join(pubKeys, `${v.defaultLicenseKid}.pub.pem`));
    const noKey = await testSite(variant, { withKey: false, clock, settings: { data: join(site.dir, "data"), keys: pubKeys, ...identity } });
    cleanups.push(() => noKey.close());
    const keep = await activate();
    await POST(noKey, A, { body: { key: keep.licenseKey, device: keep.dev } }, "no signing key", 503, "licensing_unavailable");
    await POST(noKey, R, { ...refreshBody(keep.dev), token: keep.token }, "no signing key", 503, "licensing_unavailable");
    await POST(noKey, "/feeds/credential", { token: keep.token }, "no signing key", 503, "licensing_unavailable");
    const other = device(variant);
    const { idToken } = await signIn(other, {}, noKey);
    await POST(noKey, X, { body: { id_token: idToken, device: other } }, "no signing key", 503, "licensing_unavailable");
    const noKeyAdmin = (await createAdminToken(noKey.composed.services.admin, CLI_CALLER, { name: "offline", scopes: ["activations:write"] })).secret;
    const offlineCode = offlineRequestCode({ device: device(variant), key: keep.licenseKey });
    await POST(noKey, "/admin/activations/offline", { token: noKeyAdmin, body: { code: offlineCode } }, "no signing key", 503, "licensing_unavailable");

    // --- trials (docs/trials-and-meters.md): off here; on at a site of their own
    const T = "/trials/start";
    await POST(site, T, { body: { device: device(variant) } }, "trials off", 404, "not_found");
    const trialPlans = { plans: { eval: { channels: ["stable"] } } };
    const trials = await testSite(variant, { clock, tables: trialPlans, settings: { "trial-plan": "eval", "trial-length": "14d" } });
    cleanups.push(() => trials.close());
    const trialDev = device(variant);
    const trial = await POST(trials, T, { body: { device: trialDev } }, "trial", 200);
    await POST(trials, T, { body: { device: trialDev } }, "the same trial again", 200);
    await POST(trials, T, {}, "no body", 400, "invalid_request");
    await POST(trials, T, { body: "device=x", type: "text/plain" }, "text/plain", 415, "unsupported_media_type");
    await POST(trials, T, { body: { pad: "x".repeat(17 * 1024) } }, "over 16 KiB", 413, "payload_too_large");
    const trialLicence = JSON.parse(Buffer.from((trial.token as string).split(".")[1]!, "base64url").toString()).lic as string;
    await trials.admin.revokeLicense(trialLicence);
    await POST(trials, T, { body: { device: trialDev } }, "trial revoked", 403, "license_revoked");
    const ending = device(variant);
    await POST(trials, T, { body: { device: ending } }, "another trial", 200);
    clock.advance(15 * 86_400_000);
    await POST(trials, T, { body: { device: ending } }, "trial ended", 403, "license_expired");
    clock.advance(-15 * 86_400_000);
    const noKeyTrials = await testSite(variant, { withKey: false, clock, tables: trialPlans, settings: { keys: pubKeys, "trial-plan": "eval" } });
    cleanups.push(() => noKeyTrials.close());
    await POST(noKeyTrials, T, { body: { device: device(variant) } }, "no signing key", 503, "licensing_unavailable");

    // --- a site with a budget of one request a minute and no staff sign-in
    const tight = await testSite(variant, { clock, settings: { "rate-limit-signin": "1/60s", "rate-limit-api": "1/60s", "rate-limit-admin": "1/60s" } });
    cleanups.push(() => tight.close());
    let peer = 1;
    for (const [template, item] of Object.entries(c.doc.paths)) {
      const path = concrete[template] ?? template;
      const address = `198.51.100.${peer++}`;
      if (item.get) {
        await c.check("GET", template, await send(tight, "GET", path, { peer: address }), "first of the budget");
        const g = await send(tight, "GET", path, { peer: address });
        const h = await send(tight, "HEAD", path, { peer: address });
        expect(comparable(h.headers)).toEqual(comparable(g.headers));
        expect((await c.check("GET", template, g, "over the budget")).code).toBe("rate_limited");
        await c.check("HEAD", template, h, "over the budget", "rate_limited");
        expect(h.status).toBe(429);
      }
      for (const method of Object.keys(item)
        .filter((m) => m !== "get" && m !== "head")
        .map((m) => m.toUpperCase())) {
        const address = `198.51.100.${peer++}`;
        const body = { device: device(variant), key: "x", id_token: "x" };
        const first = await c.check(method, template, await send(tight, method, template, { body, peer: address }), "first of the budget");
        if (template.startsWith("/auth/identity/")) expect(first.code).toBe("identity_disabled");
        if (template.startsWith("/admin/")) expect(first.code).toBe("admin_token_invalid");
        expect((await c.check(method, template, await send(tight, method, template, { body, peer: address }), "over the budget")).code).toBe("rate_limited");
      }
    }

    // --- the installer changed on disk since the scan; then the tree is gone
    // Each answer starts a re-scan, which drops the changed release: the HEAD asks for the older one.
    writeFileSync(release.installerPath, "shorter");
    const g = await send(site, "GET", installerPath, { token: keep.token });
    expect((await c.check("GET", U, g, "installer replaced")).code).toBe("unavailable");
    await site.composed.services.releases.rescan();
    writeFileSync(older.installerPath, "shorter");
    const h = await send(site, "HEAD", `/updates/${lane}/${older.installer}`, { token: keep.token });
    expect(h.status).toBe(503);
    expect(comparable(h.headers)).toEqual(comparable(g.headers));
    await c.check("HEAD", U, h, "installer replaced", "unavailable");
    rmSync(tree.root, { recursive: true, force: true });
    await GET("/health", "/health", {}, "release tree gone", 503, "unavailable");

    return c;
  } finally {
    for (const f of cleanups.reverse()) await f();
  }
}

type Getter = (template: string, path: string, o: Send, label: string, status: number, code?: string) => Promise<{ code: string; body: any }>;

/** Sends a request of any method (a GET through `GET`) and checks its answer against the document: the status and error code expected. */
function sender(site: TestSite, c: Conformance, GET: Getter) {
  return async (method: string, template: string, path: string, o: Send, label: string, status: number, expectCode?: string) => {
    if (method === "GET") return (await GET(template, path, o, label, status, expectCode)).body;
    const res = await send(site, method, path, o);
    const out = await c.check(method, template, res, label);
    expect({ label, method, path, status: res.status, code: out.code }).toEqual({ label, method, path, status, code: expectCode ?? "" });
    return out.body;
  };
}

/** Admin tokens of a site, made through the domain as the CLI does: any scopes, and one already expired. */
async function adminTokens(site: TestSite, clock: ReturnType<typeof testClock>) {
  const d = site.composed.services.admin;
  const mint = async (scopes: Scope[], expires?: string) => (await createAdminToken(d, CLI_CALLER, { name: "conformance", scopes, expires })).secret;
  const expiredAdmin = await mint(["admin"], isoTime(clock() + 1000));
  clock.advance(2000);
  return { mint, expiredAdmin };
}

interface AdminCtx {
  variant: VariantName;
  adminToken: string;
  mint: (scopes: Scope[]) => Promise<string>;
  expiredAdmin: string;
  /** A live entitlement token: refused on admin paths like any bad token. */
  entitlement: string;
}

/** Every admin operation's documented answers. */
async function adminOperations(site: TestSite, c: Conformance, GET: Getter, x: AdminCtx) {
  const A = { token: x.adminToken };
  const SEND = sender(site, c, GET);
  await site.app.allAreas();
  const admins = site.app.endpoints.filter((e) => typeof e.auth === "object");
  expect(admins.length).toBeGreaterThan(0);

  // The bearer check and the scope, on every admin operation (ids need not exist: they are read after).
  const revokedAdmin = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "gone", scopes: ["admin"] });
  await revokeAdminToken(site.composed.services.admin, CLI_CALLER, revokedAdmin.token.id);
  for (const e of admins) {
    const scope = (e.auth as { scope: Scope }).scope;
    const path = e.path.replace("{id}", "x_unknown");
    const body = e.body ? { body: {} } : {};
    for (const [label, token] of [
      ["no token", undefined],
      ["not a token", "kta_nope"],
      ["revoked admin token", revokedAdmin.secret],
      ["expired admin token", x.expiredAdmin],
      ["entitlement token", x.entitlement],
    ] as const)
      await SEND(e.method, e.path, path, { ...body, token }, label, 401, "admin_token_invalid");
    const others = await x.mint(SCOPES.filter((s) => s !== scope && s !== "admin"));
    await SEND(e.method, e.path, path, { ...body, token: others }, "every scope but the one needed", 403, "insufficient_scope");
    if (e.body) {
      await SEND(e.method, e.path, path, { ...A, body: { unknownField: 1 } }, "unknown body field", 400, "invalid_request");
      await SEND(e.method, e.path, path, { ...A, body: "x=1", type: "text/plain" }, "text/plain", 415, "unsupported_media_type");
      await SEND(e.method, e.path, path, { ...A, body: { pad: "x".repeat(17 * 1024) } }, "over 16 KiB", 413, "payload_too_large");
    }
    if (e.querySchema) await SEND(e.method, e.path, `${path}?unknown=1`, A, "unknown query parameter", 400, "invalid_request");
  }

  // --- licences
  const L = "/admin/licenses";
  const LID = "/admin/licenses/{id}";
  const licenseBody = { licensee: "Ada", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 2, channels: ["stable"] };
  const idem = { ...A, headers: { "idempotency-key": "conformance-1" } };
  const created = await SEND("POST", L, L, { ...idem, body: licenseBody }, "create", 201);
  const replay = await SEND("POST", L, L, { ...idem, body: licenseBody }, "same Idempotency-Key, same body", 201);
  expect(replay.key).toBe(created.key);
  await SEND("POST", L, L, { ...idem, body: { ...licenseBody, seats: 3 } }, "same Idempotency-Key, other body", 409, "idempotency_conflict");
  await SEND("POST", L, L, { ...A, body: { ...licenseBody, seats: "2" } }, "seats a string", 400, "invalid_request");
  const id: string = created.license.id;
  await SEND("GET", L, L, A, "search", 200);
  await SEND("GET", L, `${L}?query=Ada&status=active&limit=1`, A, "search a page", 200);
  await SEND("GET", L, `${L}?cursor=forged`, A, "forged cursor", 400, "invalid_request");
  await SEND("GET", LID, `${LID.replace("{id}", id)}`, A, "show", 200);
  await SEND("GET", LID, `${LID.replace("{id}", created.key)}`, A, "show by key", 200);
  await SEND("GET", LID, "/admin/licenses/lic_unknown", A, "unknown license", 404, "not_found");
  await SEND(
    "PATCH",
    LID,
    `/admin/licenses/${id}`,
    { ...A, body: { seats: 3, expires: "2099-01-01T00:00:00Z", email: "ada@engines.example", metadata: { crm: "42" } } },
    "update",
    200,
  );
  await SEND("PATCH", LID, "/admin/licenses/lic_unknown", { ...A, body: { seats: 3 } }, "unknown license", 404, "not_found");
  for (let i = 0; i < 2; i++) {
    const r = await send(site, "POST", "/licenses/activate", { body: { key: created.key, device: device(x.variant) } });
    expect(r.status).toBe(200);
  }
  await SEND("PATCH", LID, `/admin/licenses/${id}`, { ...A, body: { seats: 1 } }, "seats below those in use", 409, "seats_in_use");
  const REV = "/admin/licenses/{id}/revoke";
  const REI = "/admin/licenses/{id}/reinstate";
  await SEND("POST", REV, `/admin/licenses/${id}/revoke`, A, "revoke", 200);
  await SEND("POST", REV, `/admin/licenses/${id}/revoke`, A, "revoke twice", 403, "license_revoked");
  await SEND("POST", REV, "/admin/licenses/lic_unknown/revoke", A, "unknown license", 404, "not_found");
  await SEND("POST", REI, `/admin/licenses/${id}/reinstate`, A, "reinstate", 200);
  await SEND("POST", REI, `/admin/licenses/${id}/reinstate`, A, "reinstate a license not revoked", 400, "invalid_request");
  await SEND("POST", REI, "/admin/licenses/lic_unknown/reinstate", A, "unknown license", 404, "not_found");
  const REK = "/admin/licenses/{id}/rekey";
  const rekeyed = await SEND("POST", REK, `/admin/licenses/${id}/rekey`, A, "rekey", 200);
  expect(rekeyed.key).not.toBe(created.key);
  await SEND("POST", REK, `/admin/licenses/${created.key}/rekey`, A, "rekey by the old key", 404, "not_found");
  await SEND("POST", REK, `/admin/licenses/${encodeURIComponent("staff:00u-grace")}/rekey`, A, "a staff entitlement has no key", 400, "invalid_request");

  // --- plans and renewals (docs/licence-models.md)
  const plans = await SEND("GET", "/admin/plans", "/admin/plans", A, "plans", 200);
  expect(plans.plans.map((p: { name: string }) => p.name)).toEqual(["maintained"]);
  const REN = "/admin/licenses/{id}/renew";
  const maintained = await SEND("POST", L, L, { ...A, body: { ...licenseBody, plan: "maintained" } }, "create on a plan", 201);
  const renewed = await SEND("POST", REN, `/admin/licenses/${maintained.license.id}/renew`, A, "renew", 200);
  expect(renewed.changed).toEqual(["updatesUntil"]);
  await SEND("POST", REN, `/admin/licenses/${id}/renew`, A, "renew a licence whose plan is not configured", 400, "invalid_request");
  await SEND("POST", REN, "/admin/licenses/lic_unknown/renew", A, "unknown license", 404, "not_found");

  // --- activations
  const ACTS = "/admin/activations";
  const listed = await SEND("GET", ACTS, `${ACTS}?license=${id}`, A, "a license's activations", 200);
  expect(listed.activations.length).toBe(2);
  await SEND("GET", ACTS, `${ACTS}?license=lic_unknown`, A, "unknown license", 404, "not_found");
  await SEND("GET", ACTS, ACTS, A, "no license given", 400, "invalid_request");
  const OFF = "/admin/activations/offline";
  const offline = (key: string, dev = device(x.variant)) => ({ ...A, body: { code: offlineRequestCode({ device: dev, key }) } });
  const oneSeat = await createLicense(site, { seats: 1 });
  await SEND("POST", OFF, OFF, offline(oneSeat.key), "offline request answered", 200);
  await SEND("POST", OFF, OFF, offline(oneSeat.key), "offline: no seat left", 409, "seat_limit");
  await SEND("POST", OFF, OFF, offline("not-a-key"), "offline: unknown key", 403, "license_unknown");
  await SEND("POST", OFF, OFF, { ...A, body: { code: "%%%" } }, "offline: not a request code", 400, "invalid_request");
  const revokedOffline = await createLicense(site);
  await site.admin.revokeLicense(revokedOffline.license.id);
  await SEND("POST", OFF, OFF, offline(revokedOffline.key), "offline: revoked license", 403, "license_revoked");
  const endedOffline = await createLicense(site, { expires: site.clock() + 1000 });
  site.clock.advance(2000);
  await SEND("POST", OFF, OFF, offline(endedOffline.key), "offline: expired license", 403, "license_expired");
  const DEACT = "/admin/activations/{id}/deactivate";
  const act = listed.activations[0].id as string;
  await SEND("POST", DEACT, `/admin/activations/${act}/deactivate`, A, "deactivate", 200);
  await SEND("POST", DEACT, `/admin/activations/${act}/deactivate`, A, "deactivate twice", 409, "already_deactivated");
  await SEND("POST", DEACT, "/admin/activations/act_unknown/deactivate", A, "unknown activation", 404, "not_found");

  // --- audit and feed
  await SEND("GET", "/admin/audit", `/admin/audit?license=${id}&since=2026-01-01T00:00:00Z&limit=2`, A, "audit", 200);
  await SEND("GET", "/admin/audit", "/admin/audit?since=yesterday", A, "since not a time", 400, "invalid_request");
  await SEND("GET", "/admin/feed", "/admin/feed?after=0", A, "feed", 200);
  await SEND("GET", "/admin/feed", "/admin/feed?after=-1", A, "after not a cursor", 400, "invalid_request");

  // --- releases, rollout controls and stats (the lane of the release tree, its slashes percent-encoded)
  const laneName = [VARIANTS[x.variant].products[0], "stable", "win-x64"].filter(Boolean).join("/");
  const lane = encodeURIComponent(laneName);
  await SEND("GET", "/admin/releases", "/admin/releases", A, "releases", 200);
  for (const op of ["halt", "resume", "withdraw", "restore"]) {
    const T = `/admin/releases/{lane}/{version}/${op}`;
    const done = await SEND("POST", T, `/admin/releases/${lane}/1.0.0/${op}`, A, op, 200);
    expect(done).toMatchObject({ changed: true, release: { lane: laneName, version: "1.0.0" } });
    await SEND("POST", T, `/admin/releases/nowhere/1.0.0/${op}`, A, `${op} of a lane not of the variant`, 400, "invalid_request");
    await SEND("POST", T, `/admin/releases/${lane}/1.0/${op}`, A, `${op} of a version the lane does not have`, 404, "not_found");
  }
  const WHY = "/admin/releases/why";
  await SEND("GET", WHY, `${WHY}?activation=${act}`, A, "why", 200);
  await SEND("GET", WHY, `${WHY}?activation=act_unknown`, A, "why of no activation", 404, "not_found");
  await SEND("GET", WHY, WHY, A, "why of nobody", 400, "invalid_request");
  // A caller that would wait longer than the cache allows (none at all here) is told to ask again.
  keepStatsIn(site.composed.store, new StatsCache(site.clock, 0, -1));
  await SEND("GET", "/admin/stats", "/admin/stats", A, "stats being counted", 503, "unavailable");
  for (let i = 0; i < 100 && (await send(site, "GET", "/admin/stats", A)).status !== 200; i++) await new Promise((resolve) => setImmediate(resolve));
  await SEND("GET", "/admin/stats", "/admin/stats", A, "stats", 200);
  await SEND("GET", "/admin/trials", "/admin/trials?limit=5", A, "trials", 200);

  // --- console sessions
  const CS = "/admin/console-sessions";
  const CSEND = "/admin/console-sessions/{id}/end";
  const { session } = await site.composed.services.consoleSessions.signInWithToken(x.adminToken);
  const sessions = await SEND("GET", CS, CS, A, "console sessions", 200);
  expect(sessions.sessions.map((v: { id: string }) => v.id)).toContain(session.id);
  await SEND("POST", CSEND, `${CS}/${session.id}/end`, A, "end a console session", 200);
  await SEND("POST", CSEND, `${CS}/${session.id}/end`, A, "end it twice", 404, "not_found");

  // --- mail (docs/mail.md)
  const M = "/admin/mail";
  const MR = "/admin/mail/{id}/resend";
  const mailed = await SEND("POST", L, L, { ...A, body: { ...licenseBody, email: "ada@engines.example" } }, "create with an address (a mail)", 201);
  const mails = await SEND("GET", M, `${M}?license=${mailed.license.id}`, A, "one licence's mail", 200);
  expect(mails.mails.map((m: { kind: string }) => m.kind)).toEqual(["license-created"]);
  await SEND("GET", M, M, A, "mail", 200);
  await SEND("GET", M, `${M}?license=nope`, A, "license not a licence id", 400, "invalid_request");
  await SEND("POST", MR, `${M}/${mails.mails[0].id}/resend`, A, "send again", 200);
  await SEND("POST", MR, `${M}/mail_unknown/resend`, A, "unknown mail", 404, "not_found");
  const outbox = site.composed.services.admin.mail!;
  const link = await outbox.compose("portal-link", null, "ada@engines.example", { subject: "Sign in", text: "link", html: "<p>link</p>" });
  await outbox.d.store.enqueueMail([link]);
  await SEND("POST", MR, `${M}/${link.id}/resend`, A, "a sign-in link is not sent again", 400, "invalid_request");

  // --- webhooks and deliveries
  const W = "/admin/webhooks";
  const WID = "/admin/webhooks/{id}";
  const hook = await SEND("POST", W, W, { ...A, body: { url: "https://hooks.example/keyturn", events: ["license.created"] } }, "add", 201);
  await SEND("POST", W, W, { ...A, body: { url: "http://hooks.example/", events: ["license.created"] } }, "http to a remote host", 400, "invalid_request");
  await SEND("GET", W, W, A, "list", 200);
  await SEND("PATCH", WID, `${W}/${hook.endpoint.id}`, { ...A, body: { enabled: false } }, "disable", 200);
  await SEND("PATCH", WID, `${W}/${hook.endpoint.id}`, { ...A, body: { enabled: true } }, "enable", 200);
  await SEND("PATCH", WID, `${W}/whe_unknown`, { ...A, body: { enabled: true } }, "unknown endpoint", 404, "not_found");
  const store = site.composed.store;
  await SEND("POST", L, L, { ...A, body: licenseBody }, "create (an event to deliver)", 201);
  const now = site.clock();
  await store.fanOutEvents(now, 1000, () => newId("dlv", now));
  const D = "/admin/webhook-deliveries";
  const DID = "/admin/webhook-deliveries/{id}";
  const RETRY = "/admin/webhook-deliveries/{id}/retry";
  const page = await SEND("GET", D, `${D}?status=pending&limit=10`, A, "deliveries", 200);
  expect(page.deliveries.length).toBeGreaterThan(0);
  const dlv = page.deliveries[0].id as string;
  await SEND("GET", D, `${D}?status=sent`, A, "unknown status", 400, "invalid_request");
  await SEND("GET", DID, `${D}/${dlv}`, A, "a delivery", 200);
  await SEND("GET", DID, `${D}/dlv_unknown`, A, "unknown delivery", 404, "not_found");
  await SEND("POST", RETRY, `${D}/${dlv}/retry`, A, "retry", 200);
  await SEND("POST", RETRY, `${D}/dlv_unknown/retry`, A, "unknown delivery", 404, "not_found");
  const [claimed] = await store.claimDeliveries(site.clock(), site.clock() + 60_000, "conformance", 1);
  expect(claimed).toBeDefined();
  const attempt = { deliveryId: claimed!.delivery.id, attempt: 1, time: site.clock(), durationMs: 5, statusCode: 200, error: null };
  expect(await store.recordAttempt(attempt, "conformance", { status: "delivered" })).toBe(true);
  await SEND("POST", RETRY, `${D}/${claimed!.delivery.id}/retry`, A, "retry a delivered one", 400, "invalid_request");
  const ROTATE = "/admin/webhooks/{id}/rotate-secret";
  const rotated = await SEND("POST", ROTATE, `${W}/${hook.endpoint.id}/rotate-secret`, A, "rotate the secret", 200);
  expect(rotated.secret).not.toBe(hook.secret);
  await SEND("POST", ROTATE, `${W}/whe_unknown/rotate-secret`, A, "rotate an unknown endpoint's secret", 404, "not_found");
  await SEND("DELETE", WID, `${W}/${hook.endpoint.id}`, A, "remove", 200);
  await SEND("DELETE", WID, `${W}/${hook.endpoint.id}`, A, "remove twice", 404, "not_found");

  // --- commerce bridges (the Stripe one is on: BRIDGE)
  const H = "/hooks/{provider}";
  const signed = async (body: string) => ({ body, headers: { "stripe-signature": await stripeHeader(body, site.clock()) } });
  const end = site.clock() + 30 * 86_400_000;
  const paid = stripeEvents.event(
    "evt_conf",
    "invoice.paid",
    stripeEvents.invoicePaid({
      invoice: "in_conf",
      subscription: "sub_conf",
      reason: "subscription_create",
      price: "price_conf",
      product: "prod_conf",
      quantity: 1,
      periodEnd: end,
    }),
    site.clock(),
  );
  await SEND("POST", H, "/hooks/stripe", await signed(paid), "a Stripe purchase", 200);
  await SEND("POST", H, "/hooks/stripe", { body: paid, headers: { "stripe-signature": "t=1,v1=00" } }, "a bad signature", 400, "invalid_request");
  const early = stripeEvents.event(
    "evt_conf_early",
    "customer.subscription.updated",
    stripeEvents.subscription({ subscription: "sub_none", price: "price_conf", product: "prod_conf", quantity: 2 }),
    site.clock(),
  );
  await SEND("POST", H, "/hooks/stripe", await signed(early), "a subscription before its purchase", 503, "unavailable");
  await SEND("POST", H, "/hooks/stripe", await signed(JSON.stringify({ pad: "x".repeat(300 * 1024) })), "over 256 KiB", 413, "payload_too_large");
  await SEND("POST", H, "/hooks/paddle", { body: "{}" }, "a bridge that is off", 404, "not_found");
  await SEND("GET", "/admin/bridge-events", "/admin/bridge-events?limit=5", A, "bridge events", 200);
}

/** The release upload API's documented answers (docs/releasing-from-ci.md). */
async function uploadOperations(site: TestSite, c: Conformance, GET: Getter, tree: ReleaseTree, token: string, cleanups: (() => Promise<void> | void)[]) {
  const A = { token };
  const SEND = sender(site, c, GET);
  const v = tree.v;
  const product = v.products[0] ?? null;
  const lane = [...(product ? [product] : []), "stable", "win-x64"].join("/");
  const C = "/admin/uploads";
  const ID = "/admin/uploads/{id}";
  const F = "/admin/uploads/{id}/files/{name}";
  const P = "/admin/uploads/{id}/publish";
  const sha = (b: string) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
  // ASCII files, so a string body is their bytes.
  const folder = (version: string, tamper = false): Record<string, string> => {
    const installer = `${product ?? v.name}-${version}-win-x64.exe`;
    const bytes = `installer ${version} `.repeat(40);
    const manifest = JSON.stringify({
      ...(product ? { product } : {}),
      channel: "stable",
      platform: "win-x64",
      version,
      released: "2026-11-01T00:00:00+00:00",
      installer,
      size: bytes.length,
      sha256: sha(bytes),
    });
    const sig = signManifest(Buffer.from(manifest), { kid: tree.kid, privateKey: tree.privateKey }, v);
    return { [installer]: tamper ? bytes.replace("installer", "INSTALLER") : bytes, [v.manifestFile]: manifest, [`${v.manifestFile}.sig`]: sig };
  };
  const listing = (files: Record<string, string>) => Object.entries(files).map(([name, b]) => ({ name, size: b.length, sha256: sha(b) }));
  const chunk = (id: string, name: string, body: string, start: number, total: number, label: string, status: number, code?: string) =>
    SEND(
      "PUT",
      F,
      `${C}/${id}/files/${name}`,
      { ...A, body, type: "application/octet-stream", headers: { "content-range": `bytes ${start}-${start + body.length - 1}/${total}` } },
      label,
      status,
      code,
    );
  const sendAll = async (id: string, files: Record<string, string>) => {
    for (const [name, b] of Object.entries(files)) await chunk(id, name, b, 0, b.length, `all of ${name}`, 200);
  };

  const good = folder("3.0.0");
  const installer = Object.keys(good)[0]!;
  const created = await SEND("POST", C, C, { ...A, body: { lane, folder: "3.0.0", files: listing(good) } }, "create", 200);
  const id: string = created.upload.id;
  await SEND("POST", C, C, { ...A, body: { lane: "../etc", folder: "3.0.0", files: listing(good) } }, "not a lane", 400, "invalid_request");
  const huge = { name: "huge.bin", size: UPLOAD_LIMITS.releaseBytes, sha256: sha("") };
  await SEND("POST", C, C, { ...A, body: { lane, folder: "3.0.1", files: [...listing(good), huge] } }, "over a release's bytes", 413, "payload_too_large");
  await SEND("POST", C, C, { ...A, body: { lane, folder: "1.0.0", files: listing(folder("1.0.0")) } }, "a folder of the tree", 409, "release_exists");
  await SEND("GET", ID, `${C}/${id}`, A, "an upload", 200);
  await SEND("GET", ID, `${C}/upl_unknown`, A, "unknown upload", 404, "not_found");

  const bytes = good[installer]!;
  await chunk(id, installer, bytes.slice(0, 10), 0, bytes.length, "a first chunk", 200);
  await chunk(id, installer, bytes.slice(0, 10), 0, bytes.length, "not at the byte held", 409, "upload_conflict");
  await SEND("PUT", F, `${C}/${id}/files/${installer}`, { ...A, body: "x", type: "application/octet-stream" }, "no Content-Range", 400, "invalid_request");
  await chunk(id, "other.exe", "x", 0, 1, "a file not listed", 404, "not_found");
  await SEND("POST", P, `${C}/${id}/publish`, A, "incomplete", 409, "upload_conflict");
  await chunk(id, installer, bytes.slice(10), 10, bytes.length, "the rest", 200);
  for (const name of [v.manifestFile, `${v.manifestFile}.sig`]) await chunk(id, name, good[name]!, 0, good[name]!.length, name, 200);
  await SEND("POST", P, `${C}/${id}/publish`, A, "publish", 200);
  await SEND("POST", P, `${C}/upl_unknown/publish`, A, "unknown upload", 404, "not_found");
  await site.composed.services.releases.verified();

  // The same version in another folder; a tampered installer; a chunk over the limit; a file not matching its sha256.
  const again = await SEND("POST", C, C, { ...A, body: { lane, folder: "3.0.0-again", files: listing(good) } }, "the same version", 200);
  await sendAll(again.upload.id, good);
  await SEND("POST", P, `${C}/${again.upload.id}/publish`, A, "a version published already", 409, "release_exists");
  const tampered = folder("3.1.0", true);
  const t = await SEND("POST", C, C, { ...A, body: { lane, folder: "3.1.0", files: listing(tampered) } }, "tampered", 200);
  await sendAll(t.upload.id, tampered);
  await SEND("POST", P, `${C}/${t.upload.id}/publish`, A, "tampered installer", 422, "release_invalid");
  const big = "x".repeat(UPLOAD_LIMITS.chunkBytes + 1);
  const b = await SEND(
    "POST",
    C,
    C,
    { ...A, body: { lane, folder: "3.2.0", files: [...listing(folder("3.2.0")).slice(1), { name: "big.exe", size: big.length, sha256: sha(big) }] } },
    "big file",
    200,
  );
  await chunk(b.upload.id, "big.exe", big, 0, big.length, "a chunk over the limit", 413, "payload_too_large");
  await chunk(
    b.upload.id,
    v.manifestFile,
    "y".repeat(listing(folder("3.2.0"))[1]!.size),
    0,
    listing(folder("3.2.0"))[1]!.size,
    "bytes not matching the sha256",
    422,
    "release_invalid",
  );
  await SEND("DELETE", ID, `${C}/${b.upload.id}`, A, "abandon", 200);
  await SEND("DELETE", ID, `${C}/${b.upload.id}`, A, "abandon twice", 404, "not_found");

  // Abandoning while a chunk is being written: its body is still arriving.
  const w = await SEND("POST", C, C, { ...A, body: { lane, folder: "3.3.0", files: listing(folder("3.3.0")) } }, "for a slow chunk", 200);
  let feed!: ReadableStreamDefaultController<Uint8Array>;
  const slow = new ReadableStream<Uint8Array>({ start: (controller) => void (feed = controller) });
  const name3 = Object.keys(folder("3.3.0"))[0]!;
  const size3 = folder("3.3.0")[name3]!.length;
  const writing = site.app.handle(
    new Request(`${BASE}${C}/${w.upload.id}/files/${name3}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream", "content-range": `bytes 0-${size3 - 1}/${size3}` },
      body: slow,
    }),
  );
  feed.enqueue(new TextEncoder().encode("ins"));
  for (let i = 0; i < 200; i++) {
    const held = (await send(site, "GET", `${C}/${w.upload.id}`, A).then((r) => r.json())) as { upload: { files: { name: string; received: number }[] } };
    if (held.upload.files.find((f) => f.name === name3)!.received > 0) break;
    await Bun.sleep(5);
  }
  await SEND("DELETE", ID, `${C}/${w.upload.id}`, A, "while a chunk is written", 409, "upload_conflict");
  feed.close();
  await c.check("PUT", F, await writing, "a body that ended early");

  // Sixteen pending uploads are the most.
  for (let i = 0; ; i++) {
    const res = await send(site, "POST", C, { ...A, body: { lane, folder: `4.${i}.0`, files: listing(folder(`4.${i}.0`)) } });
    if (res.status === 409) {
      expect((await c.check("POST", C, res, "too many pending")).code).toBe("upload_conflict");
      break;
    }
    expect(res.status).toBe(200);
    expect(i).toBeLessThan(UPLOAD_LIMITS.pending);
  }

  // A site without a release public key takes no uploads.
  const bare = await testSite(v.name, { clock });
  cleanups.push(() => bare.close());
  const bareToken = (await createAdminToken(bare.composed.services.admin, CLI_CALLER, { name: "ci", scopes: ["releases:write"] })).secret;
  for (const [path, template, body] of [
    [C, C, { lane, folder: "3.0.0", files: listing(good) }],
    [`${C}/upl_unknown/publish`, P, undefined],
  ] as const) {
    const res = await send(bare, "POST", path, { token: bareToken, ...(body ? { body } : {}) });
    expect((await c.check("POST", template, res, "no release key")).code).toBe("unavailable");
  }
}

describe("the OpenAPI document matches every answer", () => {
  for (const variant of VARIANT_NAMES)
    test(`${variant}: every operation's documented answers are given, and every answer is documented`, async () => {
      const c = await runVariant(variant);
      const missing = [...c.expected()].filter((k) => !c.seen.has(k)).sort();
      expect(missing).toEqual([]);
      // Every allow-listed code is documented on every operation (it is the one answer not provoked).
      for (const [path, item] of Object.entries(c.doc.paths))
        for (const [m, op] of Object.entries(item)) expect(op.responses["500"], `${m} ${path}`).toBeDefined();
      // Every documented answer of every operation, by bearer and by credential: about 17 s a
      // variant on a loaded 2-core machine, and 30 s was met within the whole suite.
    }, 60_000);
});
