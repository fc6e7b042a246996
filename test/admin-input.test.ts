import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { offlineRequestCode } from "../src/client";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createAdminToken } from "../src/domain/admin/tokens";
import { pruneRecords } from "../src/domain/retention";
import type { Endpoint } from "../src/http/endpoint";
import { announceSkip, freshSchema, PG_URL } from "./databases";
import { device, testSite, type TestSite } from "./helpers";

// Bad input to the admin API: every body field wrongly typed and too long, unknown fields; every
// query parameter unknown, repeated, out of range; forged cursors and cursors of another query. Each
// is 400 invalid_request naming what was wrong, never a 5xx. Then Idempotency-Key over HTTP.

let site: TestSite;
let token: string;
const keyOf = (e: Endpoint) => `${e.method} ${e.path}`;
const adminEndpoints = () => site.app.endpoints.filter((e) => typeof e.auth === "object");

interface Property {
  type?: string;
  maxLength?: number;
  maxItems?: number;
  maxProperties?: number;
  maximum?: number;
  anyOf?: Property[];
  items?: Property;
  description?: string;
}
const propertiesOf = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as { properties: Record<string, Property>; required?: string[] };

const licenseBody = { licensee: "Ada", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 3, channels: ["stable"] };
/** A body each body endpoint accepts; the test fails for a body endpoint added without one. */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  "POST /admin/licenses": {
    ...licenseBody,
    expires: "2099-01-01T00:00:00Z",
    email: "ada@engines.example",
    metadata: { crm: "42" },
    tokenTtl: 86_400,
    updatesUntil: "2098-01-01T00:00:00Z",
    features: ["export-pdf"],
  },
  "PATCH /admin/licenses/{id}": {
    seats: 4,
    expires: null,
    email: null,
    metadata: {},
    channels: ["stable"],
    licensee: "Ada",
    organization: "E",
    plan: "p",
    planTitle: "P",
    tokenTtl: null,
    updatesUntil: null,
    features: ["max-projects=50"],
  },
  // The key is that of the licence the first test creates; elsewhere any well-formed one will do.
  "POST /admin/activations/offline": { code: offlineRequestCode({ device: device("alpha") }), key: "AL-00000-00000-00000-00000-00000" },
  "POST /admin/webhooks": { url: "https://hooks.example/k", events: ["license.created"] },
  "PATCH /admin/webhooks/{id}": { enabled: true },
  "POST /admin/uploads": {
    lane: "alpha/stable/win-x64",
    folder: "1.0.0",
    files: ["alpha-update.json", "alpha-update.json.sig"].map((name) => ({ name, size: 1, sha256: "0".repeat(64) })),
    halted: false,
  },
};

async function send(method: string, path: string, o: { body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await site.request(method, path, { token, ...o });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as { ok: boolean; error?: string; message?: string; [k: string]: unknown } };
}

/** Sends a request that must be refused 400 invalid_request with a message naming `name`. */
async function refused(method: string, path: string, name: string, label: string, body?: unknown) {
  const { status, body: answer } = await send(method, path, { body });
  expect({ label, path, status, error: answer.error }).toEqual({ label, path, status: 400, error: "invalid_request" });
  expect(answer.message, `${label}: ${path}`).toContain(name);
}

/** A value of another JSON type than the property's. */
function wrongType(p: Property): unknown {
  const types = p.anyOf ? p.anyOf.map((a) => a.type) : [p.type];
  if (!types.includes("integer") && !types.includes("number")) return 12345;
  return "12";
}

/** A value one past the property's size limit, or undefined when it has none. */
function tooLong(p: Property, valid: unknown): unknown {
  const q = p.anyOf?.find((a) => a.type !== "null") ?? p;
  if (q.maxLength !== undefined) return "a".repeat(q.maxLength + 1);
  if (q.maxItems !== undefined) return Array.from({ length: q.maxItems + 1 }, () => (valid as unknown[])[0]);
  if (q.maxProperties !== undefined) return Object.fromEntries(Array.from({ length: q.maxProperties + 1 }, (_, i) => [`k${i}`, "v"]));
  if (q.maximum !== undefined) return q.maximum + 1;
  return undefined;
}

beforeAll(async () => {
  site = await testSite("alpha");
  await site.app.allAreas();
  token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "input", scopes: ["admin"] })).secret;
});
afterAll(() => site.close());

describe("bad bodies on every admin body endpoint", () => {
  test("every body endpoint has a valid body here, and that body is answered", async () => {
    const bodies = adminEndpoints().filter((e) => e.body);
    expect(bodies.map(keyOf).sort()).toEqual(Object.keys(VALID_BODIES).sort());
    const lic = await send("POST", "/admin/licenses", { body: VALID_BODIES["POST /admin/licenses"] });
    expect(lic.status).toBe(201);
    expect(lic.body.license).toMatchObject({ expires: "2099-01-01T00:00:00+00:00", email: "ada@engines.example", metadata: { crm: "42" }, tokenTtl: 86_400 });
    const dated = await send("PATCH", `/admin/licenses/${(lic.body.license as { id: string }).id}`, { body: { expires: "2098-06-30T00:00:00Z" } });
    expect({ status: dated.status, changed: dated.body.changed }).toEqual({ status: 200, changed: ["expires"] });
    const hook = await send("POST", "/admin/webhooks", { body: VALID_BODIES["POST /admin/webhooks"] });
    expect(hook.status).toBe(201);
    expect(
      (await send("PATCH", `/admin/licenses/${(lic.body.license as { id: string }).id}`, { body: VALID_BODIES["PATCH /admin/licenses/{id}"] })).status,
    ).toBe(200);
    expect(
      (await send("PATCH", `/admin/webhooks/${(hook.body.endpoint as { id: string }).id}`, { body: VALID_BODIES["PATCH /admin/webhooks/{id}"] })).status,
    ).toBe(200);
    const offline = await send("POST", "/admin/activations/offline", { body: { ...VALID_BODIES["POST /admin/activations/offline"], key: lic.body.key } });
    expect(offline.status).toBe(200);
  });

  test("each field wrongly typed, each field over its limit, an unknown field, a missing required field: 400 naming the field", async () => {
    let cases = 0;
    for (const e of adminEndpoints().filter((e) => e.body)) {
      const valid = VALID_BODIES[keyOf(e)]!;
      const path = e.path.replace("{id}", "x_unknown");
      const schema = propertiesOf(e.body);
      for (const [name, p] of Object.entries(schema.properties)) {
        await refused(e.method, path, name, `${keyOf(e)}: ${name} wrongly typed`, { ...valid, [name]: wrongType(p) });
        cases++;
        const long = tooLong(p, valid[name]);
        if (long !== undefined) {
          await refused(e.method, path, name, `${keyOf(e)}: ${name} too long`, { ...valid, [name]: long });
          cases++;
        }
      }
      for (const name of schema.required ?? []) {
        const { [name]: _, ...without } = valid;
        await refused(e.method, path, name, `${keyOf(e)}: ${name} missing`, without);
        cases++;
      }
      await refused(e.method, path, "surplus", `${keyOf(e)}: an unknown field`, { ...valid, surplus: 1 });
      await refused(e.method, path, "body", `${keyOf(e)}: an array`, [valid]);
      cases += 2;
    }
    expect(cases).toBeGreaterThan(40);
  });

  test("values of the right type the rules refuse: named, 400", async () => {
    const L = "/admin/licenses";
    await refused("POST", L, "expires", "expiry in the past", { ...licenseBody, expires: "2000-01-01T00:00:00Z" });
    // Days that are not on the calendar (JavaScript's Date.parse would move them on): refused, not lengthened.
    for (const [why, expires] of [
      ["29 February of a common year", "2097-02-29T00:00:00Z"],
      ["31 April", "2097-04-31T00:00:00+02:00"],
      ["hour 24", "2097-05-01T24:00:00Z"],
      ["month 13", "2097-13-01T00:00:00Z"],
    ])
      await refused("POST", L, "expires", why!, { ...licenseBody, expires });
    const leap = await send("POST", L, { body: { ...licenseBody, expires: "2096-02-29T00:00:00Z" } });
    expect([leap.status, (leap.body.license as { expires: string }).expires]).toEqual([201, "2096-02-29T00:00:00+00:00"]);
    await refused("POST", L, "seats", "no seats", { ...licenseBody, seats: 0 });
    await refused("POST", L, "channels", "unknown channel", { ...licenseBody, channels: ["nightly"] });
    await refused("POST", L, "email", "not an email", { ...licenseBody, email: "ada" });
    await refused("POST", L, "metadata", "metadata key with a space", { ...licenseBody, metadata: { "a b": "x" } });
    await refused("POST", L, "licensee", "control characters", { ...licenseBody, licensee: "Ada\u0007" });
    await refused("POST", "/admin/webhooks", "url", "http to a remote host", { url: "http://hooks.example/", events: ["license.created"] });
    await refused("POST", "/admin/webhooks", "events", "unknown event", { url: "https://hooks.example/", events: ["license.exploded"] });
    const bad = await send("POST", L, { body: licenseBody, headers: { "idempotency-key": "has space" } });
    expect({ status: bad.status, error: bad.body.error }).toEqual({ status: 400, error: "invalid_request" });
    expect(bad.body.message).toContain("Idempotency-Key");
  });
});

describe("bad query strings on every admin query endpoint", () => {
  /** A query each query endpoint accepts (required parameters filled in). */
  let validQuery: Record<string, string>;
  beforeAll(async () => {
    const lic = await send("POST", "/admin/licenses", { body: licenseBody });
    const activated = await site.request("POST", "/licenses/activate", { body: { key: lic.body.key, device: device("alpha") } });
    const { token: entitlement } = (await activated.json()) as { token: string };
    const activation = (JSON.parse(Buffer.from(entitlement.split(".")[1]!, "base64url").toString()) as { sub: string }).sub;
    validQuery = {
      "GET /admin/licenses": "",
      "GET /admin/activations": `license=${(lic.body.license as { id: string }).id}`,
      "GET /admin/audit": "",
      "GET /admin/feed": "",
      "GET /admin/webhook-deliveries": "",
      "GET /admin/bridge-events": "",
      "GET /admin/releases/why": `activation=${activation}`,
      "GET /admin/trials": "",
      "GET /admin/mail": "",
    };
  });

  test("unknown parameters, repeated parameters, limits out of range, over-long values: 400 naming the parameter", async () => {
    // Every admin endpoint checks its query string; those that take none refuse any parameter.
    expect(
      adminEndpoints()
        .filter((e) => !e.querySchema)
        .map(keyOf),
    ).toEqual([]);
    const queries = adminEndpoints().filter((e) => Object.keys(propertiesOf(e.querySchema).properties).length > 0);
    expect(queries.map(keyOf).sort()).toEqual(Object.keys(validQuery).sort());
    for (const e of adminEndpoints().filter((e) => !queries.includes(e)))
      await refused(
        e.method,
        `${e.path.replace("{id}", "x_unknown")}?limit=1`,
        "limit",
        `${keyOf(e)}: a parameter where none is taken`,
        e.body ? {} : undefined,
      );
    for (const e of queries) {
      const base = validQuery[keyOf(e)]!;
      const q = (extra: string) => `${e.path}?${[base, extra].filter(Boolean).join("&")}`;
      expect((await send("GET", q(""))).status, keyOf(e)).toBe(200);
      await refused("GET", q("unknown=1"), "unknown", `${keyOf(e)}: unknown parameter`);
      await refused("GET", q("x%00y=1"), "x", `${keyOf(e)}: unknown parameter with a NUL`);
      const schema = propertiesOf(e.querySchema);
      for (const [name, p] of Object.entries(schema.properties)) {
        const value = name === "limit" ? "1" : name === "after" ? "0" : "a";
        if (!base.includes(`${name}=`)) await refused("GET", q(`${name}=${value}&${name}=${value}`), name, `${keyOf(e)}: ${name} repeated`);
        if (p.maxLength !== undefined) await refused("GET", q(`${name}=${"a".repeat(p.maxLength + 1)}`), name, `${keyOf(e)}: ${name} too long`);
        if (name === "limit") {
          const max = Number(/1 to (\d+)/.exec(p.description ?? "")![1]);
          for (const bad of ["0", String(max + 1), "-1", "1.5", "ten", "99999999"])
            await refused("GET", q(`limit=${bad}`), "limit", `${keyOf(e)}: limit=${bad}`);
          expect((await send("GET", q(`limit=${max}`))).status).toBe(200);
        }
      }
      for (const name of schema.required ?? []) await refused("GET", e.path, name, `${keyOf(e)}: ${name} missing`);
    }
  });

  test("forged cursors and a cursor of another query: 400 naming the cursor", async () => {
    for (let i = 0; i < 3; i++) expect((await send("POST", "/admin/licenses", { body: { ...licenseBody, licensee: `Grace ${i}` } })).status).toBe(201);
    const first = await send("GET", "/admin/licenses?query=Grace&limit=1");
    const next = first.body.next as string;
    expect(next).toBeString();
    expect((await send("GET", `/admin/licenses?query=Grace&limit=1&cursor=${next}`)).status).toBe(200);
    // The limit is not part of the query a cursor continues.
    expect((await send("GET", `/admin/licenses?query=Grace&limit=2&cursor=${next}`)).status).toBe(200);
    await refused("GET", `/admin/licenses?query=Ada&limit=1&cursor=${next}`, "cursor", "licenses cursor with another query");
    await refused("GET", `/admin/licenses?status=revoked&query=Grace&cursor=${next}`, "cursor", "licenses cursor with another status");
    const forgedJson = Buffer.from(JSON.stringify({ q: "0000000000000000", p: { issued: 0, id: "lic_" } })).toString("base64url");
    for (const forged of ["forged", "not%20base64", forgedJson, Buffer.from("[]").toString("base64url")])
      await refused("GET", `/admin/licenses?query=Grace&cursor=${forged}`, "cursor", `licenses cursor ${forged}`);

    const audit = await send("GET", "/admin/audit?limit=1");
    const auditNext = audit.body.next as string;
    expect(auditNext).toBeString();
    expect((await send("GET", `/admin/audit?limit=1&cursor=${auditNext}`)).status).toBe(200);
    await refused("GET", `/admin/audit?limit=1&error=seat_limit&cursor=${auditNext}`, "cursor", "audit cursor with another filter");
    await refused("GET", `/admin/audit?cursor=${next}`, "cursor", "a licenses cursor on the audit");
    await refused("GET", `/admin/licenses?query=Grace&cursor=${auditNext}`, "cursor", "an audit cursor on the licenses");
    await refused("GET", "/admin/webhook-deliveries?cursor=forged", "cursor", "deliveries cursor forged");
    await refused("GET", "/admin/feed?after=forged", "after", "feed cursor forged");
    await refused("GET", "/admin/feed?after=99999999999999999999", "after", "feed cursor beyond 64 bits");
    await refused("GET", "/admin/feed?after=9223372036854775808", "after", "feed cursor one past the largest seq");
    await refused("GET", "/admin/audit?since=2026-13-45", "since", "since not a date");
    await refused("GET", "/admin/audit?since=yesterday", "since", "since not ISO 8601");
    const since = await send("GET", `/admin/audit?since=${encodeURIComponent("2026-11-21T12:00:00+00:00")}`);
    expect(since.status).toBe(200);
    expect((since.body.lines as unknown[]).length).toBeGreaterThan(0);
    expect((await send("GET", "/admin/audit?since=2099-01-01T00:00:00Z")).body.lines).toEqual([]);
  });
});

/** Idempotency-Key over HTTP, on the site `open` makes (SQLite, or PostgreSQL in a schema of its own). */
function idempotency(label: string, open: () => Promise<{ site: TestSite; close: () => Promise<void> }>) {
  describe(`Idempotency-Key over HTTP (${label})`, () => {
    let s: TestSite;
    let close: () => Promise<void>;
    let tok: string;
    beforeAll(async () => {
      ({ site: s, close } = await open());
      tok = (await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "idempotency", scopes: ["admin"] })).secret;
    });
    afterAll(() => close());
    const send = async (method: string, path: string, o: { body?: unknown; headers?: Record<string, string> } = {}) => {
      const res = await s.request(method, path, { token: tok, ...o });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const L = "/admin/licenses";
    const count = async (licensee: string) => ((await send("GET", `${L}?query=${encodeURIComponent(licensee)}&limit=200`)).body.licenses as unknown[]).length;
    const prune = () => pruneRecords(s.composed.store, s.clock, s.composed.config.auditRetentionSeconds);

    test("concurrent creates with one key make one license and all answer its key; another body is 409 idempotency_conflict", async () => {
      const body = { ...licenseBody, licensee: "Concurrent Carol" };
      const headers = { "idempotency-key": "order-7781" };
      const answers = await Promise.all(Array.from({ length: 6 }, () => send("POST", L, { body, headers })));
      expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
      const keys = new Set(answers.map((a) => a.body.key));
      const ids = new Set(answers.map((a) => a.body.license.id));
      expect({ keys: keys.size, ids: ids.size }).toEqual({ keys: 1, ids: 1 });
      expect(await count("Concurrent Carol")).toBe(1);
      // The same body with its keys in another order is the same body.
      const reordered = Object.fromEntries(Object.entries(body).reverse());
      expect((await send("POST", L, { body: reordered, headers })).body.key).toBe(answers[0]!.body.key);
      const conflict = await send("POST", L, { body: { ...body, seats: 9 }, headers });
      expect({ status: conflict.status, error: conflict.body.error }).toEqual({ status: 409, error: "idempotency_conflict" });
      expect(JSON.stringify(conflict.body)).not.toContain(answers[0]!.body.key as string);
      // Another key is another create.
      expect((await send("POST", L, { body, headers: { "idempotency-key": "order-7782" } })).status).toBe(201);
      expect(await count("Concurrent Carol")).toBe(2);
    });

    test("after 24 h the answer is pruned by retention and the key starts over", async () => {
      const body = { ...licenseBody, licensee: "Late Larry" };
      const headers = { "idempotency-key": "order-9000" };
      const first = await send("POST", L, { body, headers });
      expect(first.status).toBe(201);
      s.clock.advance(23 * 3600_000);
      await prune();
      expect((await send("POST", L, { body: { ...body, seats: 9 }, headers })).status).toBe(409);
      s.clock.advance(3600_000 + 1);
      expect((await prune()).idempotency).toBeGreaterThanOrEqual(1);
      const again = await send("POST", L, { body: { ...body, seats: 9 }, headers });
      expect(again.status).toBe(201);
      expect(again.body.key).not.toBe(first.body.key);
      expect(again.body.license.seats).toBe(9);
      expect(await count("Late Larry")).toBe(2);
    });
  });
}

idempotency("SQLite", async () => {
  const s = await testSite("alpha");
  return { site: s, close: () => s.close() };
});
if (PG_URL)
  idempotency("PostgreSQL", async () => {
    const schema = await freshSchema();
    const s = await testSite("alpha", { settings: { database: schema.url } });
    return {
      site: s,
      close: async () => {
        await s.close();
        await schema.drop();
      },
    };
  });
else announceSkip("test/admin-input.test.ts (PostgreSQL idempotency)", "KEYTURN_TEST_POSTGRES_URL");
