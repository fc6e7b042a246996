import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { VARIANTS } from "../../../src/config/variants";
import * as audit from "../../../src/domain/admin/audit-query";
import { CLI_CALLER, SCOPES, type AdminCaller, type AdminDeps, type Scope } from "../../../src/domain/admin/deps";
import * as feed from "../../../src/domain/admin/feed";
import type { EventsAnswer } from "../../../src/domain/admin/feed";
import * as licenses from "../../../src/domain/admin/licenses";
import { deactivateActivation, listActivations, reinstateLicense, rekeyLicense, revokeLicense, showLicense } from "../../../src/domain/admin/licenses";
import * as tokens from "../../../src/domain/admin/tokens";
import { authenticateAdmin, listAdminTokens, revokeAdminToken } from "../../../src/domain/admin/tokens";
import { decode } from "../../../src/domain/decode";
import { isKeyturnError } from "../../../src/domain/errors";
import { EVENT_TYPES } from "../../../src/domain/events";
import { sha256Hex } from "../../../src/domain/ids";
import { pruneRecords } from "../../../src/domain/retention";
import * as webhooks from "../../../src/domain/webhooks/endpoints";
import { listWebhookEndpoints, removeWebhookEndpoint, retryDelivery, setWebhookEndpointEnabled, showDelivery } from "../../../src/domain/webhooks/endpoints";
import { device, testSite, type TestSite } from "../../helpers";

const TTL = 7 * 86400;
let site: TestSite;
let d: AdminDeps;
const as = (scopes: Scope[], tokenId = "tok_test", name = "test"): AdminCaller => ({ principal: { tokenId, name, scopes }, address: "198.51.100.9" });
const body = (extra: Record<string, unknown> = {}) => ({
  licensee: "Ada Lovelace",
  organization: "Analytical Engines Ltd",
  plan: "pro",
  planTitle: "Professional",
  seats: 2,
  channels: ["stable"],
  ...extra,
});
// The operations as HTTP, the console and the CLI reach them: their input decoded with its model first.
const createLicense = async (d: AdminDeps, caller: AdminCaller, input: unknown, idempotencyKey?: unknown) =>
  licenses.createLicense(d, caller, decode(licenses.LicenseCreateInput, input), idempotencyKey);
const updateLicense = async (d: AdminDeps, caller: AdminCaller, id: unknown, input: unknown) =>
  licenses.updateLicense(d, caller, id, decode(licenses.LicenseUpdateInput, input));
const searchLicenses = async (d: AdminDeps, caller: AdminCaller, input: unknown) => licenses.searchLicenses(d, caller, decode(licenses.LicenseQuery, input));
const queryAudit = async (d: AdminDeps, caller: AdminCaller, input: unknown) => audit.queryAudit(d, caller, decode(audit.AuditQuery, input));
const readFeed = async (d: AdminDeps, caller: AdminCaller, input: unknown) => feed.readFeed(d, caller, decode(feed.FeedQuery, input));
const createAdminToken = async (d: AdminDeps, caller: AdminCaller, input: unknown) =>
  tokens.createAdminToken(d, caller, decode(tokens.AdminTokenCreateInput, input));
const addWebhookEndpoint = async (d: AdminDeps, caller: AdminCaller, input: unknown) =>
  webhooks.addWebhookEndpoint(d, caller, decode(webhooks.WebhookEndpointCreateInput, input));
const listDeliveries = async (d: AdminDeps, caller: AdminCaller, input: unknown) => webhooks.listDeliveries(d, caller, decode(webhooks.DeliveryQuery, input));

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (e) {
    if (isKeyturnError(e)) return e.code;
    throw e;
  }
}
const events = async () => (await d.store.listEvents({ after: 0, limit: 1000 })).map((e) => ({ type: e.type, data: JSON.parse(e.data) }));
const activate = async (key: string) => site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });

beforeEach(async () => {
  site = await testSite("alpha");
  d = { variant: VARIANTS.alpha, store: site.composed.store, clock: site.clock, tokenTtlSeconds: TTL };
});

/** Events outside the feed are written only while an endpoint subscribes to them: subscribe to all. */
async function subscribeAll(): Promise<void> {
  await addWebhookEndpoint(d, CLI_CALLER, { url: "https://hooks.example/all", events: [...EVENT_TYPES] });
}
afterEach(() => site.close());

describe("admin tokens", () => {
  test("a token is kta_ and 43 base64url characters, kept only as its hash; it authenticates until revoked or expired, at once", async () => {
    const { token, secret } = await createAdminToken(d, CLI_CALLER, { name: "ci", scopes: ["licenses:read", "audit:read"], expires: "2026-12-01T00:00:00Z" });
    expect(secret).toMatch(/^kta_[A-Za-z0-9_-]{43}$/);
    expect(token.id).toMatch(/^tok_/);
    const stored = await d.store.listAdminTokens();
    expect(stored[0]!.secretHash).toBe(sha256Hex(secret));
    expect(JSON.stringify(stored)).not.toContain(secret.slice(4));
    expect(JSON.stringify(await listAdminTokens(d, CLI_CALLER))).not.toContain(secret.slice(4));
    expect(await authenticateAdmin(d, secret)).toEqual({ tokenId: token.id, name: "ci", scopes: ["licenses:read", "audit:read"] });
    expect((await listAdminTokens(d, CLI_CALLER))[0]!.lastUsed).not.toBeNull();
    for (const bad of [secret + "x", secret.slice(0, -1) + (secret.endsWith("A") ? "B" : "A"), "kta_short", "", null, 42, `Bearer ${secret}`])
      expect(await code(authenticateAdmin(d, bad))).toBe("admin_token_invalid");
    site.clock.set(Date.parse("2026-12-01T00:00:00Z"));
    expect(await code(authenticateAdmin(d, secret))).toBe("admin_token_invalid");
    const other = await createAdminToken(d, CLI_CALLER, { name: "ops", scopes: ["admin"] });
    expect(await code(authenticateAdmin(d, other.secret))).toBe("ok");
    await revokeAdminToken(d, CLI_CALLER, other.token.id);
    expect(await code(authenticateAdmin(d, other.secret))).toBe("admin_token_invalid");
    expect(await code(revokeAdminToken(d, CLI_CALLER, other.token.id))).toBe("not_found");
    const audit = await d.store.listAudit({});
    expect(audit.map((a) => [a.action, a.actor])).toContainEqual(["admin-token-create", "cli"]);
    expect(JSON.stringify(audit)).not.toContain(other.secret.slice(4));
  });

  test("every operation asks for its scope: a token holding it (or admin) passes the check, a token holding every other scope does not", async () => {
    const { key, license } = await createLicense(d, CLI_CALLER, body());
    const ops: Array<[Scope, (c: AdminCaller) => Promise<unknown>]> = [
      ["licenses:write", (c) => createLicense(d, c, body())],
      ["licenses:read", (c) => searchLicenses(d, c, {})],
      ["licenses:read", (c) => showLicense(d, c, license.id)],
      ["licenses:write", (c) => updateLicense(d, c, license.id, { plan: `p${Math.random()}` })],
      ["licenses:write", (c) => revokeLicense(d, c, license.id)],
      ["licenses:write", (c) => reinstateLicense(d, c, license.id)],
      ["licenses:write", (c) => rekeyLicense(d, c, license.id)],
      ["activations:read", (c) => listActivations(d, c, key)],
      ["activations:write", (c) => deactivateActivation(d, c, "act_none")],
      ["audit:read", (c) => queryAudit(d, c, {})],
      ["feed:read", (c) => readFeed(d, c, {})],
      ["webhooks:write", (c) => addWebhookEndpoint(d, c, { url: "https://hooks.example/x", events: ["license.created"] })],
      ["webhooks:read", (c) => listWebhookEndpoints(d, c)],
      ["webhooks:write", (c) => setWebhookEndpointEnabled(d, c, "whe_none", false)],
      ["webhooks:write", (c) => removeWebhookEndpoint(d, c, "whe_none")],
      ["webhooks:read", (c) => listDeliveries(d, c, {})],
      ["webhooks:read", (c) => showDelivery(d, c, "dlv_none")],
      ["webhooks:write", (c) => retryDelivery(d, c, "dlv_none")],
      ["admin", (c) => createAdminToken(d, c, { name: "x", scopes: ["feed:read"] })],
      ["admin", (c) => listAdminTokens(d, c)],
      ["admin", (c) => revokeAdminToken(d, c, "tok_none")],
    ];
    for (const [scope, op] of ops) {
      const others = SCOPES.filter((s) => s !== scope && s !== "admin");
      expect(await code(op(as(others)))).toBe("insufficient_scope");
      expect(await code(op(as([scope])))).not.toBe("insufficient_scope");
      expect(await code(op(as(["admin"])))).not.toBe("insufficient_scope");
    }
  });
});

describe("license lifecycle", () => {
  test("create answers the key once, writes license.created and an audit line naming the token (never its secret)", async () => {
    await subscribeAll();
    const created = await createLicense(d, as(["licenses:write"], "tok_abc", "billing"), body({ email: "ada@example.com", metadata: { crm: "C-1" } }));
    expect(created.license).toMatchObject({
      licensee: "Ada Lovelace",
      seats: 2,
      seatsUsed: 0,
      email: "ada@example.com",
      metadata: { crm: "C-1" },
      expires: null,
      revoked: null,
    });
    expect((await d.store.getLicense(created.license.id))!.keyHash).not.toContain(created.key);
    expect(await events()).toEqual([{ type: "license.created", data: { license: created.license } }]);
    const [line] = await d.store.listAudit({ licenseId: created.license.id });
    expect(line).toMatchObject({ action: "license-create", actor: "tok_abc (billing)", address: "198.51.100.9", outcome: "ok" });
    expect(await code(activate(created.key).then((r) => (r.status === 200 ? "ok" : Promise.reject(new Error(String(r.status))))))).toBe("ok");
  });

  test("Idempotency-Key: same body answers the first answer (key included); another body is idempotency_conflict; racing creates make one license; after 24 h the answer is gone", async () => {
    await subscribeAll();
    const c = as(["licenses:write"], "tok_i");
    const first = await createLicense(d, c, body(), "order-1");
    expect(await createLicense(d, c, { ...body(), seats: 2 }, "order-1")).toEqual(first);
    // key order does not make another body
    expect(await createLicense(d, c, Object.fromEntries(Object.entries(body()).reverse()), "order-1")).toEqual(first);
    expect(await code(createLicense(d, c, body({ seats: 3 }), "order-1"))).toBe("idempotency_conflict");
    const racing = await Promise.all(Array.from({ length: 10 }, () => createLicense(d, c, body({ plan: "race" }), "order-2")));
    expect(new Set(racing.map((r) => r.key)).size).toBe(1);
    expect((await searchLicenses(d, CLI_CALLER, { query: "" })).licenses.filter((l) => l.plan === "race").length).toBe(1);
    expect((await events()).filter((e) => e.type === "license.created").length).toBe(2);
    site.clock.advance(24 * 3600 * 1000 + 1);
    expect(await pruneRecords(d.store, d.clock, 365 * 86400)).toMatchObject({ idempotency: 2 });
    const again = await createLicense(d, c, body(), "order-1");
    expect(again.key).not.toBe(first.key);
    expect(await code(createLicense(d, c, body(), "bad key with spaces"))).toBe("invalid_request");
  });

  test("search pages with opaque cursors bound to their query; a forged cursor or one of another query is invalid_request", async () => {
    const made = [];
    for (let i = 0; i < 5; i++) {
      made.push(await createLicense(d, CLI_CALLER, body({ licensee: `Customer ${i}`, organization: i % 2 ? "Odd Ltd" : "Even Ltd" })));
      site.clock.advance(1000);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await searchLicenses(d, CLI_CALLER, { query: "ltd", limit: "2", ...(cursor ? { cursor } : {}) });
      expect(page.licenses.length).toBeLessThanOrEqual(2);
      seen.push(...page.licenses.map((l) => l.id));
      cursor = page.next ?? undefined;
    } while (cursor);
    expect(seen).toEqual(made.map((m) => m.license.id));
    const odd = await searchLicenses(d, CLI_CALLER, { query: "odd", limit: "1" });
    expect(odd.next).not.toBeNull();
    expect(await code(searchLicenses(d, CLI_CALLER, { query: "even", cursor: odd.next }))).toBe("invalid_request");
    expect(await code(searchLicenses(d, CLI_CALLER, { query: "odd", status: "revoked", cursor: odd.next }))).toBe("invalid_request");
    const forged = Buffer.from(JSON.stringify({ q: "0000000000000000", p: { issued: 0, id: "" } })).toString("base64url");
    for (const bad of [forged, "not a cursor", "eyJ", "x".repeat(600), 5])
      expect(await code(searchLicenses(d, CLI_CALLER, { query: "odd", cursor: bad }))).toBe("invalid_request");
    await revokeLicense(d, CLI_CALLER, made[0]!.license.id);
    expect((await searchLicenses(d, CLI_CALLER, { status: "revoked" })).licenses.map((l) => l.id)).toEqual([made[0]!.license.id]);
    expect((await searchLicenses(d, CLI_CALLER, { status: "active" })).licenses.length).toBe(4);
  });

  test("update: changed fields only, license.updated with them; seats below those in use is seats_in_use and changes nothing; revoke and reinstate write their events", async () => {
    await subscribeAll();
    const { key, license } = await createLicense(d, CLI_CALLER, body({ seats: 3 }));
    expect((await activate(key)).status).toBe(200);
    expect((await activate(key)).status).toBe(200);
    expect(await code(updateLicense(d, CLI_CALLER, license.id, { seats: 1 }))).toBe("seats_in_use");
    expect((await d.store.getLicense(license.id))!.seats).toBe(3);
    const updated = await updateLicense(d, CLI_CALLER, key, {
      seats: 2,
      plan: "pro",
      planTitle: "Team",
      channels: ["stable", "preview"],
      email: "x@y.example",
      metadata: { a: "b" },
    });
    expect(updated.changed).toEqual(["planTitle", "seats", "channels", "email", "metadata"]);
    expect(updated.license).toMatchObject({ seats: 2, seatsUsed: 2, planTitle: "Team", channels: ["stable", "preview"] });
    expect(await updateLicense(d, CLI_CALLER, license.id, { seats: 2, expires: null, email: "x@y.example", metadata: { a: "b" } })).toMatchObject({
      changed: [],
    });
    await revokeLicense(d, CLI_CALLER, license.id);
    expect(await code(revokeLicense(d, CLI_CALLER, license.id))).toBe("license_revoked");
    expect((await activate(key)).status).toBe(403);
    await reinstateLicense(d, CLI_CALLER, license.id);
    expect(await code(reinstateLicense(d, CLI_CALLER, license.id))).toBe("invalid_request");
    const types = (await events()).map((e) => e.type);
    expect(types).toEqual(["license.created", "activation.created", "activation.created", "license.updated", "license.revoked", "license.reinstated"]);
    const all = await events();
    expect(all[3]!.data.changed).toEqual(updated.changed);
    expect(all[4]!.data.tokensValidUntil).toBe(new Date(site.clock() + TTL * 1000).toISOString().replace(".000Z", "+00:00"));
    expect((await d.store.listAudit({ licenseId: license.id })).map((a) => a.action)).toEqual(
      expect.arrayContaining(["license-update", "license-revoke", "license-reinstate"]),
    );
  });

  test("rekey: license.updated with changed [key], no key in the event; the old key no longer finds the license", async () => {
    await subscribeAll();
    const { key, license } = await createLicense(d, CLI_CALLER, body({ seats: 1 }));
    const rekeyed = await rekeyLicense(d, CLI_CALLER, key);
    expect(rekeyed.license.id).toBe(license.id);
    expect(await code(showLicense(d, CLI_CALLER, key))).toBe("not_found");
    expect((await showLicense(d, CLI_CALLER, rekeyed.key)).license.id).toBe(license.id);
    const last = (await events()).at(-1)!;
    expect(last).toMatchObject({ type: "license.updated", data: { changed: ["key"], license: { id: license.id } } });
    expect(JSON.stringify(last)).not.toContain(rekeyed.key);
  });

  test("the licensing flows write their events: activation.created, activation.refused with the holders, activation.deactivated (by the program and by an admin)", async () => {
    await subscribeAll();
    const { key, license } = await createLicense(d, CLI_CALLER, body({ seats: 1 }));
    const granted = (await (await activate(key)).json()) as { token: string; entitlement: { id: string } };
    expect((await activate(key)).status).toBe(409);
    const shown = await showLicense(d, CLI_CALLER, license.id);
    expect(shown.license.seatsUsed).toBe(1);
    expect(shown.activations.map((a) => a.id)).toEqual([granted.entitlement.id]);
    const refused = (await events()).find((e) => e.type === "activation.refused")!;
    expect(refused.data.license).toEqual({ id: license.id });
    expect(refused.data.holders.map((h: { id: string }) => h.id)).toEqual([granted.entitlement.id]);
    expect(refused.data.device).toMatchObject({ name: "Office PC", platform: "win-x64" });
    expect((await site.request("POST", "/entitlements/deactivate", { token: granted.token })).status).toBe(200);
    const second = (await (await activate(key)).json()) as { entitlement: { id: string } };
    const view = await deactivateActivation(d, as(["activations:write"]), second.entitlement.id);
    expect(view.deactivated).not.toBeNull();
    expect(await code(deactivateActivation(d, CLI_CALLER, second.entitlement.id))).toBe("already_deactivated");
    const all = await events();
    expect(all.map((e) => e.type)).toEqual([
      "license.created",
      "activation.created",
      "activation.refused",
      "activation.deactivated",
      "activation.created",
      "activation.deactivated",
    ]);
    expect(all[5]!.data.activation).toEqual(view);
    expect((await listActivations(d, CLI_CALLER, key)).length).toBe(2);
  });

  test("the feed: only its types, seq ascending, cursor continues; malformed after is invalid_request", async () => {
    const { license } = await createLicense(d, CLI_CALLER, body());
    await revokeLicense(d, CLI_CALLER, license.id);
    await reinstateLicense(d, CLI_CALLER, license.id);
    const { epoch } = await readFeed(d, CLI_CALLER, {});
    const first = (await readFeed(d, CLI_CALLER, { after: `${epoch}.0`, limit: "1" })) as EventsAnswer;
    expect(first.events.map((e) => e.type)).toEqual(["license.revoked"]);
    expect(first.events[0]).toMatchObject({
      id: expect.stringMatching(/^evt_/),
      seq: expect.stringMatching(/^\d+$/),
      timestamp: expect.stringMatching(/\+00:00$/),
    });
    const rest = (await readFeed(d, CLI_CALLER, { after: first.cursor })) as EventsAnswer;
    expect(rest.events.map((e) => e.type)).toEqual(["license.reinstated"]);
    expect((await readFeed(d, CLI_CALLER, { after: rest.cursor })).cursor).toBe(rest.cursor);
    for (const after of ["-1", "x.1.5", "abc", "01", `${epoch}.99999999999999999999`, 3])
      expect(await code(readFeed(d, CLI_CALLER, { after }))).toBe("invalid_request");
  });

  test("audit query: filters, newest first, cursor pages bound to the query", async () => {
    const { license } = await createLicense(d, as(["licenses:write"], "tok_q", "q"), body());
    for (let i = 0; i < 3; i++) {
      site.clock.advance(1000);
      await updateLicense(d, CLI_CALLER, license.id, { plan: `p${i}` });
    }
    const p1 = await queryAudit(d, CLI_CALLER, { license: license.id, limit: "2" });
    expect(p1.lines.map((l) => l.action)).toEqual(["license-update", "license-update"]);
    const p2 = await queryAudit(d, CLI_CALLER, { license: license.id, limit: "2", cursor: p1.next });
    expect(p2.lines.map((l) => [l.action, l.actor])).toEqual([
      ["license-update", "cli"],
      ["license-create", "tok_q (q)"],
    ]);
    expect(p2.next).toBeNull();
    expect(await code(queryAudit(d, CLI_CALLER, { cursor: p1.next }))).toBe("invalid_request");
    expect((await queryAudit(d, CLI_CALLER, { since: new Date(site.clock()).toISOString() })).lines.length).toBe(1);
  });
});

describe("bad input to every entry point is invalid_request", () => {
  const long = "x".repeat(5000);
  test("wrong types, too long, unknown fields", async () => {
    const { license } = await createLicense(d, CLI_CALLER, body());
    const cases: Array<[string, () => Promise<unknown>]> = [
      ...[
        null,
        "text",
        [],
        5,
        body({ extra: 1 }),
        body({ seats: "2" }),
        body({ seats: 0 }),
        body({ seats: 1.5 }),
        body({ licensee: long }),
        body({ licensee: "" }),
        body({ licensee: 7 }),
        body({ channels: "stable" }),
        body({ channels: [] }),
        body({ channels: ["nightly"] }),
        body({ expires: "tomorrow" }),
        body({ expires: "2020-01-01T00:00:00Z" }),
        body({ email: "no-at-sign" }),
        body({ email: long + "@x" }),
        body({ metadata: [] }),
        body({ metadata: { "bad key": "v" } }),
        body({ metadata: { k: 5 } }),
        body({ metadata: { k: long } }),
        body({ metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])) }),
        body({ licensee: "a\u0000b" }),
      ].map((b): [string, () => Promise<unknown>] => [`create ${JSON.stringify(b)?.slice(0, 60)}`, () => createLicense(d, CLI_CALLER, b)]),
      ["create idempotency key too long", () => createLicense(d, CLI_CALLER, body(), "k".repeat(256))],
      ["create idempotency key not a string", () => createLicense(d, CLI_CALLER, body(), 5)],
      ...[{ extra: 1 }, { seats: -1 }, { expires: 5 }, { plan: long }, { channels: [1] }, { email: 5 }, [], "x"].map((b): [string, () => Promise<unknown>] => [
        `update ${JSON.stringify(b)}`,
        () => updateLicense(d, CLI_CALLER, license.id, b),
      ]),
      ["update id too long", () => updateLicense(d, CLI_CALLER, long, {})],
      ["show id not a string", () => showLicense(d, CLI_CALLER, 5)],
      ["revoke id empty", () => revokeLicense(d, CLI_CALLER, "")],
      ["reinstate id object", () => reinstateLicense(d, CLI_CALLER, {})],
      ["activations id long", () => listActivations(d, CLI_CALLER, long)],
      ["deactivate id number", () => deactivateActivation(d, CLI_CALLER, 1)],
      ...[{ status: "gone" }, { limit: "0" }, { limit: "1001" }, { limit: "x" }, { extra: "1" }, { query: long }, "x"].map(
        (q): [string, () => Promise<unknown>] => [`search ${JSON.stringify(q)}`, () => searchLicenses(d, CLI_CALLER, q)],
      ),
      ...[{ since: "yesterday" }, { license: long }, { limit: "501" }, { other: 1 }].map((q): [string, () => Promise<unknown>] => [
        `audit ${JSON.stringify(q)}`,
        () => queryAudit(d, CLI_CALLER, q),
      ]),
      ...[{ limit: "1001" }, { x: 1 }].map((q): [string, () => Promise<unknown>] => [`feed ${JSON.stringify(q)}`, () => readFeed(d, CLI_CALLER, q)]),
      ...[
        { name: "x" },
        { name: "x", scopes: ["root"] },
        { name: "x", scopes: "admin" },
        { name: long, scopes: ["admin"] },
        { name: "x", scopes: ["admin"], expires: "2020-01-01" },
        { name: "x", scopes: ["admin"], x: 1 },
      ].map((b): [string, () => Promise<unknown>] => [`token ${JSON.stringify(b).slice(0, 60)}`, () => createAdminToken(d, CLI_CALLER, b)]),
      ["token revoke id", () => revokeAdminToken(d, CLI_CALLER, null)],
      ...[
        { url: "http://hooks.example/x", events: ["license.created"] },
        { url: "ftp://127.0.0.1/x", events: ["license.created"] },
        { url: "https://u:p@hooks.example/", events: ["license.created"] },
        { url: "not a url", events: ["license.created"] },
        { url: "https://hooks.example/" + long, events: ["license.created"] },
        { url: "https://hooks.example/", events: ["license.nope"] },
        { url: "https://hooks.example/", events: [] },
        { url: "https://hooks.example/", events: ["license.created"], secret: "mine" },
      ].map((b): [string, () => Promise<unknown>] => [`webhook add ${JSON.stringify(b).slice(0, 60)}`, () => addWebhookEndpoint(d, CLI_CALLER, b)]),
      ["webhook remove id", () => removeWebhookEndpoint(d, CLI_CALLER, [])],
      ["deliveries status", () => listDeliveries(d, CLI_CALLER, { status: "lost" })],
      ["deliveries cursor", () => listDeliveries(d, CLI_CALLER, { cursor: "abc" })],
      ["delivery id", () => showDelivery(d, CLI_CALLER, long)],
      ["retry id", () => retryDelivery(d, CLI_CALLER, 5)],
    ];
    for (const [name, call] of cases) expect([name, await code(call())]).toEqual([name, "invalid_request"]);
    // loopback http only where the operator allowed the host
    const allowing = { ...d, webhookDestinations: { allowHosts: ["127.0.0.1", "::1"] } };
    expect(await code(addWebhookEndpoint(d, CLI_CALLER, { url: "http://127.0.0.1:9/x", events: ["license.created"] }))).toBe("invalid_request");
    expect(await code(addWebhookEndpoint(allowing, CLI_CALLER, { url: "http://127.0.0.1:9/x", events: ["license.created"] }))).toBe("ok");
    expect(await code(addWebhookEndpoint(allowing, CLI_CALLER, { url: "http://[::1]:9/x", events: ["license.created"] }))).toBe("ok");
  });
});
