import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { copyFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANT_NAMES, VARIANTS, type VariantName } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import type { SqliteStore } from "../src/store/sqlite";
import { BASE, createLicense, device, tempDir, testClock, testSite, type TestSite } from "./helpers";
import { CLIENT_ID, STAFF_GROUP, startIssuer, type LocalIssuer } from "./identity-issuer";
import { ReleaseTree } from "./release-tree";

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
  async check(method: string, template: string, res: Response, label: string, headCode?: string): Promise<{ code: string; body: any }> {
    const where = `${method} ${template} (${label}) → ${res.status}`;
    const item = this.doc.paths[template];
    expect(item, `${where}: path not documented`).toBeDefined();
    const op = item![method.toLowerCase()];
    let documented: DocResponse | undefined;
    if (!op) {
      expect(res.status, where).toBe(405);
      documented = this.doc.components.responses.MethodNotAllowed;
      const allow = (res.headers.get("allow") ?? "").split(",").map((m) => m.trim());
      expect(allow.sort(), where).toEqual(Object.keys(item!).map((m) => m.toUpperCase()).sort());
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
    const older = tree.add({ version: "0.9.0", released: "2026-09-01T00:00:00+00:00" });
    const release = tree.add({ version: "1.0.0" });
    const site = await testSite(variant, { withKey: false, clock, settings: { keys: tree.keysDir, releases: tree.root, ...identity, "staff-seats": "1" } });
    cleanups.push(() => site.close(), () => site.composed.services.releases.close());
    await site.composed.services.releases.ready();
    const db = (site.composed.store as SqliteStore).db;

    const docRes = await send(site, "GET", "/openapi.json");
    const docText = await docRes.clone().text();
    const c = new Conformance(JSON.parse(docText) as Doc);
    await c.check("GET", "/openapi.json", docRes, "the document");
    // What the HTTP server answers before keyturn sees a request (test/limits.test.ts sends both over a socket).
    expect(c.doc.info.description).toMatch(/431 with no body.*413 with no body/);

    const GET = async (template: string, path: string, o: Send, label: string, expectStatus: number, expectCode?: string) => {
      const g = await send(site, "GET", path, o);
      const h = await send(site, "HEAD", path, o);
      const gHeaders = comparable(g.headers);
      const hHeaders = comparable(h.headers);
      const { code } = await c.check("GET", template, g, label);
      expect({ label, status: g.status, code }).toEqual({ label, status: expectStatus, code: expectCode ?? "" });
      expect(h.status, `HEAD ${label}`).toBe(g.status);
      expect(hHeaders, `HEAD ${label}: headers`).toEqual(gHeaders);
      await c.check("HEAD", template, h, label, code);
      return { get: g, code };
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
    const gone = await activate();
    await POST(site, "/entitlements/deactivate", { token: gone.token }, "deactivate", 200);
    const revokedLater = await activate();
    await site.admin.revokeLicense(revokedLater.licenseId);
    const expiredRecord = await activate();
    db.query("UPDATE licenses SET expires = ? WHERE id = ?").run(clock() - 1000, expiredRecord.licenseId);

    const lane = [product, "stable", "win-x64"].filter(Boolean).join("/");
    const preview = [product, "preview", "win-x64"].filter(Boolean).join("/");
    const U = `/updates/${product ? "{product}/" : ""}{channel}/{platform}/{file}`;
    const bearerGets: [string, string][] = [
      ["/entitlements/current", "/entitlements/current"],
      ["/releases", "/releases"],
      [U, `/updates/${lane}/${v.manifestFile}`],
    ];
    const bearerPosts = ["/entitlements/refresh", "/entitlements/deactivate"];
    const refreshBody = (d: object) => ({ body: { device: d } });

    for (const [template, path] of bearerGets) {
      await GET(template, path, {}, "no token", 401, "entitlement_invalid");
      await GET(template, path, { token: "a.b.c" }, "not a token", 401, "entitlement_invalid");
      await GET(template, path, { token: gone.token }, "deactivated", 401, "entitlement_revoked");
      await GET(template, path, { token: revokedLater.token }, "license revoked", 403, "license_revoked");
    }
    for (const path of bearerPosts) {
      const body = path.endsWith("refresh") ? refreshBody(live.dev) : {};
      await POST(site, path, { ...body }, "no token", 401, "entitlement_invalid");
      await POST(site, path, { ...body, token: "a.b.c" }, "not a token", 401, "entitlement_invalid");
      await POST(site, path, { ...body, token: gone.token }, "deactivated", 401, "entitlement_revoked");
      await POST(site, path, { ...body, token: revokedLater.token }, "license revoked", 403, "license_revoked");
    }
    // The token expires: every bearer operation answers entitlement_expired.
    clock.advance(8 * 24 * 3600_000);
    for (const [template, path] of bearerGets) await GET(template, path, { token: live.token }, "expired token", 401, "entitlement_expired");
    await POST(site, "/entitlements/refresh", { ...refreshBody(live.dev), token: live.token }, "expired token", 401, "entitlement_expired");
    await POST(site, "/entitlements/deactivate", { token: live.token }, "expired token", 401, "entitlement_expired");
    clock.advance(-8 * 24 * 3600_000);

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

    // --- deactivate (after the others: it ends the live token)
    await POST(site, "/entitlements/deactivate", { token: live.token }, "deactivate", 200);

    // --- every path and query over 8 KiB, every method a path does not answer
    const long = `?q=${"x".repeat(8 * 1024)}`;
    const concrete: Record<string, string> = { [U]: manifestPath };
    for (const [template, item] of Object.entries(c.doc.paths)) {
      const path = concrete[template] ?? template;
      if (item.get) await GET(template, path + long, {}, "URL over 8 KiB", 400, "invalid_request");
      else {
        const res = await send(site, "POST", path + long, { body: {} });
        const { code } = await c.check("POST", template, res, "URL over 8 KiB");
        expect({ status: res.status, code }).toEqual({ status: 400, code: "invalid_request" });
      }
      for (const method of item.get ? ["POST", "PUT", "DELETE"] : ["GET", "HEAD", "PUT"]) {
        const res = await send(site, method, path);
        const { code } = await c.check(method, template, res, "method not answered", method === "HEAD" ? "method_not_allowed" : undefined);
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
    const other = device(variant);
    const { idToken } = await signIn(other, {}, noKey);
    await POST(noKey, X, { body: { id_token: idToken, device: other } }, "no signing key", 503, "licensing_unavailable");

    // --- a site with a budget of one request a minute and no staff sign-in
    const tight = await testSite(variant, { clock, settings: { "rate-limit-signin": "1/60s", "rate-limit-api": "1/60s" } });
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
      } else {
        const body = { device: device(variant), key: "x", id_token: "x" };
        const first = await c.check("POST", template, await send(tight, "POST", template, { body, peer: address }), "first of the budget");
        if (template.startsWith("/auth/identity/")) expect(first.code).toBe("identity_disabled");
        expect((await c.check("POST", template, await send(tight, "POST", template, { body, peer: address }), "over the budget")).code).toBe(
          "rate_limited",
        );
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

describe("the OpenAPI document matches every answer", () => {
  for (const variant of VARIANT_NAMES)
    test(
      `${variant}: every operation's documented answers are given, and every answer is documented`,
      async () => {
        const c = await runVariant(variant);
        const missing = [...c.expected()].filter((k) => !c.seen.has(k)).sort();
        expect(missing).toEqual([]);
        // Every allow-listed code is documented on every operation (it is the one answer not provoked).
        for (const [path, item] of Object.entries(c.doc.paths))
          for (const [m, op] of Object.entries(item)) expect(op.responses["500"], `${m} ${path}`).toBeDefined();
      },
      30_000,
    );
});
