import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { CLI_CALLER } from "../../../src/domain/admin/deps";
import { sha256Hex } from "../../../src/domain/ids";
import { addWebhookEndpoint } from "../../../src/domain/webhooks/endpoints";
import type { SqliteStore } from "../../../src/store/sqlite";
import { BASE_URL, device, testClock, testSite, type TestSite } from "../../helpers";
import { CLIENT_ID, STAFF_GROUP, startIssuer, type LocalIssuer } from "../../identity-issuer";

// Staff sign-in against a local issuer (jose + Bun.serve on 127.0.0.1): the successful exchange,
// the licensing endpoints with a staff token, and a token for every refusal of the spec.

let issuer: LocalIssuer;
const clock = testClock();
beforeAll(async () => {
  issuer = await startIssuer(clock);
});
afterAll(() => issuer.stop());

const sites: TestSite[] = [];
afterEach(async () => {
  await Promise.all(sites.splice(0).map((s) => s.close()));
});

async function staffSite(variant: "alpha" | "beta" | "gamma" = "gamma", settings: Record<string, string> = {}) {
  clock.set(Date.parse("2026-11-21T12:00:00Z"));
  const site = await testSite(variant, {
    clock,
    settings: {
      "identity-issuer": issuer.url,
      "identity-client-id": CLIENT_ID,
      "identity-groups": `${STAFF_GROUP},other-staff`,
      ...settings,
    },
  });
  sites.push(site);
  return site;
}

async function challenge(site: TestSite, dev: object): Promise<{ nonce: string; expires: string }> {
  const res = await site.request("POST", "/auth/identity/challenge", { body: { device: dev } });
  expect(res.status).toBe(200);
  return (await res.json()) as { nonce: string; expires: string };
}

async function exchange(site: TestSite, idToken: string, dev: object) {
  const res = await site.request("POST", "/auth/identity/exchange", { body: { id_token: idToken, device: dev } });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** A fresh challenge for `dev` and a token carrying its nonce (plus `claims`), exchanged. */
async function signIn(site: TestSite, dev: object, claims: Record<string, unknown> = {}, opts = {}) {
  const { nonce } = await challenge(site, dev);
  return exchange(site, await issuer.mint({ nonce, ...claims }, opts), dev);
}

function expectRefusal(r: { status: number; body: Record<string, any> }, status: number, error: string) {
  expect({ status: r.status, error: r.body.error }).toEqual({ status, error });
  expect(r.body.ok).toBe(false);
  expect(r.body.ref).toMatch(/^ref_/);
}

describe("GET /auth/identity", () => {
  test("off unless issuer, client id and groups are all set: 503 identity_disabled on challenge and exchange", async () => {
    const partial: Record<string, string>[] = [
      {},
      { "identity-issuer": issuer.url, "identity-client-id": CLIENT_ID },
      { "identity-issuer": issuer.url, "identity-groups": STAFF_GROUP },
    ];
    for (const settings of partial) {
      const site = await testSite("gamma", { clock, settings });
      sites.push(site);
      const info = await site.request("GET", "/auth/identity");
      expect(info.status).toBe(200);
      expect(await info.json()).toEqual({ ok: true, enabled: false, issuer: null, clientId: null, scopes: [], maxAge: null });
      const c = await site.request("POST", "/auth/identity/challenge", { body: { device: device("gamma") } });
      expect(c.status).toBe(503);
      expect(((await c.json()) as any).error).toBe("identity_disabled");
      // Off wins over a malformed body: the program learns that sign-in is off, not what to fix.
      const x = await site.request("POST", "/auth/identity/exchange", { body: "{" });
      expect(x.status).toBe(503);
      expect(((await x.json()) as any).error).toBe("identity_disabled");
    }
  });

  test("on: names the issuer, the client, the scopes and maxAge (which the program sends as max_age)", async () => {
    const site = await staffSite("gamma", { "identity-max-age": "15m" });
    const res = await site.request("GET", "/auth/identity");
    expect(await res.json()).toEqual({
      ok: true,
      enabled: true,
      issuer: issuer.url,
      clientId: CLIENT_ID,
      scopes: ["openid", "profile", "email"],
      maxAge: 900,
    });
  });
});

describe("POST /auth/identity/challenge", () => {
  test("a random nonce of at least 128 bits, valid ten minutes, stored only hashed", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    const a = await challenge(site, dev);
    const b = await challenge(site, dev);
    expect(a.nonce).not.toBe(b.nonce);
    expect(Buffer.from(a.nonce, "base64url").length).toBeGreaterThanOrEqual(16);
    // "A challenge is issued to one installation and is valid for ten minutes."
    expect(a.expires).toBe("2026-11-21T12:10:00+00:00");
    const rows = (site.composed.store as SqliteStore).db.query("SELECT * FROM challenges").all() as Record<string, unknown>[];
    expect(rows.map((r) => r.nonce_hash).sort()).toEqual([sha256Hex(a.nonce), sha256Hex(b.nonce)].sort());
    expect(JSON.stringify(rows)).not.toContain(a.nonce);
  });

  test("expired challenges are pruned from the records a day after their expiry", async () => {
    const site = await staffSite();
    const old = await challenge(site, device("gamma"));
    clock.advance(11 * 60_000);
    await challenge(site, device("gamma"));
    const count = () => (site.composed.store as SqliteStore).db.query("SELECT count(*) AS n FROM challenges").get() as { n: number };
    expect(count().n).toBe(2);
    clock.advance(24 * 3600_000);
    await challenge(site, device("gamma"));
    // the first is a day past its expiry and gone; the second expired less than a day ago and stays
    const hashes = ((site.composed.store as SqliteStore).db.query("SELECT nonce_hash FROM challenges").all() as any[]).map((r) => r.nonce_hash);
    expect(hashes).toHaveLength(2);
    expect(hashes).not.toContain(sha256Hex(old.nonce));
  });

  test("the device is checked like activate's", async () => {
    const site = await staffSite();
    const res = await site.request("POST", "/auth/identity/challenge", { body: { device: { ...device("gamma"), hash: "short" } } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toBe("invalid_request");
  });
});

describe("a successful exchange", () => {
  for (const variant of ["alpha", "beta", "gamma"] as const)
    test(`${variant}: answers like activate, kind staff in the token and the entitlement`, async () => {
      const site = await staffSite(variant, { "staff-organization": "Keyturn Ltd", "staff-seats": "3" });
      const r = await signIn(site, device(variant));
      expect(r.status).toBe(200);
      expect(r.body.ok).toBe(true);
      expect(r.body.entitlement).toMatchObject({
        kind: "staff",
        licensee: "Grace Hopper",
        organization: "Keyturn Ltd",
        plan: "staff",
        planTitle: "Staff",
        channels: ["stable", "preview"],
        seats: { used: 1, total: 3 },
      });
      expect(r.body.entitlement.id).toMatch(/^act_/);
      const claims = decodeJwt(r.body.token);
      expect(decodeProtectedHeader(r.body.token)).toMatchObject({ alg: "ES256", typ: site.composed.config.variant.tokenTyp });
      expect(claims).toMatchObject({
        iss: BASE_URL,
        kind: "staff",
        lic: "staff:00u-grace",
        name: "Grace Hopper",
        org: "Keyturn Ltd",
        plan: "staff",
        chn: ["stable", "preview"],
      });
    });

  test("refresh, current and deactivate work for a staff token as for a license token", async () => {
    const site = await staffSite("alpha");
    const dev = device("alpha");
    const { body } = await signIn(site, dev);
    const token = body.token as string;

    const current = await site.request("GET", "/entitlements/current", { token });
    expect(current.status).toBe(200);
    const cur = (await current.json()) as any;
    expect(cur.entitlement).toMatchObject({ id: body.entitlement.id, kind: "staff", licensee: "Grace Hopper", seats: { used: 1, total: 5 } });
    expect(cur.activation).toMatchObject({ id: body.entitlement.id, product: "alpha", name: dev.name });

    clock.advance(60_000);
    const refreshed = await site.request("POST", "/entitlements/refresh", { token, body: { device: dev } });
    expect(refreshed.status).toBe(200);
    const ref = (await refreshed.json()) as any;
    expect(ref.token).not.toBe(token);
    expect(decodeJwt(ref.token)).toMatchObject({ kind: "staff", lic: "staff:00u-grace", sub: body.entitlement.id });
    expect(ref.entitlement.kind).toBe("staff");

    const off = await site.request("POST", "/entitlements/deactivate", { token: ref.token });
    expect(off.status).toBe(200);
    expect(await off.json()).toEqual({ ok: true });
    for (const t of [token, ref.token]) {
      const after = await site.request("GET", "/entitlements/current", { token: t });
      expect(after.status).toBe(401);
      expect(((await after.json()) as any).error).toBe("entitlement_revoked");
    }
    // A new sign-in of that installation takes a seat again, under a new activation.
    const again = await signIn(site, dev);
    expect(again.status).toBe(200);
    expect(again.body.entitlement.id).not.toBe(body.entitlement.id);
  });

  test("the same installation signing in again reuses its seat; seats count the person's installations", async () => {
    const site = await staffSite("gamma", { "staff-seats": "2" });
    const pc = device("gamma");
    const first = await signIn(site, pc);
    const second = await signIn(site, pc);
    expect(second.body.entitlement.id).toBe(first.body.entitlement.id);
    expect(second.body.entitlement.seats).toEqual({ used: 1, total: 2 });
    expect((await signIn(site, device("gamma", { name: "Laptop" }))).body.entitlement.seats).toEqual({ used: 2, total: 2 });
    const full = await signIn(site, device("gamma", { name: "Third PC" }));
    expectRefusal(full, 409, "seat_limit");
    expect(full.body.message).toContain('"Office PC"');
    // Another person has seats of their own.
    expect((await signIn(site, device("gamma"), { sub: "00u-ada", name: "Ada" })).status).toBe(200);
  });

  test("every sign-in that takes or reuses a seat writes staff.signed_in in its transaction; a full one activation.refused", async () => {
    const site = await staffSite("gamma", { "staff-seats": "1" });
    // These events are written while a webhook endpoint subscribes to them (none would read them otherwise).
    await addWebhookEndpoint(site.composed.services.admin, CLI_CALLER, { url: "https://hooks.example/k", events: ["staff.signed_in", "activation.refused"] });
    const pc = device("gamma");
    const first = await signIn(site, pc);
    await signIn(site, pc);
    expectRefusal(await signIn(site, device("gamma", { name: "Laptop" })), 409, "seat_limit");
    const events = (await site.composed.store.listEvents({ after: 0, limit: 10 })).map((e) => ({ type: e.type, data: JSON.parse(e.data) }));
    expect(events.map((e) => e.type)).toEqual(["staff.signed_in", "staff.signed_in", "activation.refused"]);
    expect(events[0]!.data.activation).toMatchObject({ id: first.body.entitlement.id, license: "staff:00u-grace", kind: "staff", name: "Office PC" });
    expect(events[2]!.data).toMatchObject({
      license: { id: "staff:00u-grace" },
      device: { name: "Laptop" },
      holders: [expect.objectContaining({ id: first.body.entitlement.id })],
    });
  });

  test("licensee: the name claim, else email, else sub", async () => {
    const site = await staffSite();
    const who = async (claims: Record<string, unknown>) => (await signIn(site, device("gamma"), claims)).body.entitlement.licensee;
    expect(await who({ sub: "u1", name: "Grace Hopper" })).toBe("Grace Hopper");
    expect(await who({ sub: "u2", name: undefined })).toBe("grace@example.com");
    expect(await who({ sub: "u3", name: undefined, email: undefined })).toBe("u3");
  });

  test("the sign-in is written to the audit trail; refusals carry their audit ref", async () => {
    const site = await staffSite();
    const ok = await signIn(site, device("gamma"));
    const bad = await signIn(site, device("gamma"), { amr: ["pwd"] });
    const audit = await site.composed.store.listAudit({});
    expect(audit.find((a) => a.outcome === "ok")).toMatchObject({
      action: "sign-in",
      licenseId: "staff:00u-grace",
      activationId: ok.body.entitlement.id,
      actor: "staff:00u-grace (Grace Hopper)",
    });
    expect(audit.find((a) => a.ref === bad.body.ref)).toMatchObject({
      action: "sign-in",
      outcome: "refused",
      error: "mfa_required",
      licenseId: "staff:00u-grace",
    });
  });

  test("a revoked staff license refuses the person's sign-in; signing in again does not lift it", async () => {
    const site = await staffSite();
    expect((await signIn(site, device("gamma"))).status).toBe(200);
    await site.composed.store.revokeLicense("staff:00u-grace", clock());
    expectRefusal(await signIn(site, device("gamma")), 403, "license_revoked");
    expectRefusal(await signIn(site, device("gamma")), 403, "license_revoked");
  });

  test("no license signing key: 503 licensing_unavailable", async () => {
    clock.set(Date.parse("2026-11-21T12:00:00Z"));
    const site = await testSite("gamma", {
      clock,
      withKey: false,
      settings: { "identity-issuer": issuer.url, "identity-client-id": CLIENT_ID, "identity-groups": STAFF_GROUP },
    });
    sites.push(site);
    expectRefusal(await signIn(site, device("gamma")), 503, "licensing_unavailable");
  });
});

describe("refusals, one token for each", () => {
  test("forbidden algorithms are token_invalid, and cost no read of the issuer's keys", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    expect((await signIn(site, dev)).status).toBe(200); // warm the key cache
    const reads = issuer.keyReads;
    for (const alg of ["none", "HS256", "ES256", "PS256"] as const) {
      const r = await signIn(site, dev, {}, { alg });
      expectRefusal(r, 401, "token_invalid");
      if (alg !== "ES256") expect(r.body.message).toContain("only RS256");
    }
    // ES256's kid names an EC key the issuer publishes; it is not an RS256 signing key either.
    expect(issuer.keyReads - reads).toBeLessThanOrEqual(1);
  });

  const invalidCases: [string, Record<string, unknown>, object?][] = [
    ["another audience", { aud: "someone-else" }],
    ["another issuer", { iss: "https://evil.example.com" }],
    ["several audiences without azp", { aud: [CLIENT_ID, "other"] }],
    ["several audiences, azp another client", { aud: [CLIENT_ID, "other"], azp: "other" }],
    ["azp another client", { azp: "other" }],
    ["expired (past the 60 s tolerance)", { exp: Math.floor(Date.parse("2026-11-21T12:00:00Z") / 1000) - 61 }],
    ["not valid before a minute from now", { nbf: Math.floor(Date.parse("2026-11-21T12:00:00Z") / 1000) + 61 }],
    ["issued in the future", { iat: Math.floor(Date.parse("2026-11-21T12:00:00Z") / 1000) + 61 }],
    ["no subject", { sub: undefined }],
    ["signed with a key the issuer does not publish, under its kid", {}, { unpublishedKey: true }],
    ["naming a key the issuer does not publish", {}, { kid: "no-such-key" }],
  ];
  for (const [name, claims, opts] of invalidCases)
    test(`token_invalid: ${name}`, async () => {
      const site = await staffSite();
      expectRefusal(await signIn(site, device("gamma"), claims, opts), 401, "token_invalid");
    });

  test("token_invalid: not a JWT at all, or its signature tampered with", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    expectRefusal(await exchange(site, "not-a-token", dev), 401, "token_invalid");
    const { nonce } = await challenge(site, dev);
    const [h, , s] = (await issuer.mint({ nonce })).split(".");
    const forged = Buffer.from(JSON.stringify({ ...decodeJwt(await issuer.mint({ nonce })), groups: ["admins"] })).toString("base64url");
    expectRefusal(await exchange(site, `${h}.${forged}.${s}`, dev), 401, "token_invalid");
  });

  test("within the 60 s tolerance, exp, nbf and iat are accepted", async () => {
    const site = await staffSite();
    const now = Math.floor(clock() / 1000);
    expect((await signIn(site, device("gamma"), { exp: now - 50 })).status).toBe(200);
    expect((await signIn(site, device("gamma"), { nbf: now + 50, iat: now + 50, auth_time: now })).status).toBe(200);
  });

  test("token_invalid: issued before its challenge (not fresh)", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    const early = Math.floor(clock() / 1000);
    clock.advance(5 * 60_000);
    const { nonce } = await challenge(site, dev);
    const r = await exchange(site, await issuer.mint({ nonce, iat: early, exp: early + 3600, auth_time: early }), dev);
    expectRefusal(r, 401, "token_invalid");
    expect(r.body.message).toContain("before its sign-in started");
  });

  test("challenge_unknown: a nonce never issued, none at all, another installation's, or older than ten minutes", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    expectRefusal(await exchange(site, await issuer.mint({ nonce: "never-issued" }), dev), 401, "challenge_unknown");
    expectRefusal(await exchange(site, await issuer.mint(), dev), 401, "challenge_unknown");

    const other = await challenge(site, device("gamma"));
    expectRefusal(await exchange(site, await issuer.mint({ nonce: other.nonce }), dev), 401, "challenge_unknown");

    const late = await challenge(site, dev);
    clock.advance(10 * 60_000 + 1000);
    const r = await exchange(site, await issuer.mint({ nonce: late.nonce, auth_time: Math.floor(clock() / 1000) - 10 }), dev);
    expectRefusal(r, 401, "challenge_unknown");
  });

  test("beta: the challenge is bound to the installation, (hash, product)", async () => {
    const site = await staffSite("beta");
    const dev = device("beta", { product: "beta" });
    const { nonce } = await challenge(site, dev);
    const r = await exchange(site, await issuer.mint({ nonce }), { ...dev, product: "beta-studio" });
    expectRefusal(r, 401, "challenge_unknown");
  });

  test("token_replayed: the same sign-in used twice", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    const { nonce } = await challenge(site, dev);
    const token = await issuer.mint({ nonce });
    expect((await exchange(site, token, dev)).status).toBe(200);
    expectRefusal(await exchange(site, token, dev), 409, "token_replayed");
  });

  test("token_replayed still after the challenge's ten minutes and a clean-up of expired challenges", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    const { nonce } = await challenge(site, dev);
    const token = await issuer.mint({ nonce, exp: Math.floor(clock() / 1000) + 3600 });
    expect((await exchange(site, token, dev)).status).toBe(200);
    clock.advance(11 * 60_000);
    await challenge(site, device("gamma")); // issuing a challenge prunes what may be pruned
    expectRefusal(await exchange(site, token, dev), 409, "token_replayed");
  });

  test("token_replayed: two exchanges racing on one nonce give exactly one success", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    for (let round = 0; round < 5; round++) {
      const { nonce } = await challenge(site, dev);
      const [a, b] = await Promise.all([issuer.mint({ nonce }), issuer.mint({ nonce, name: "Grace B. Hopper" })]);
      const results = await Promise.all([exchange(site, a!, dev), exchange(site, b!, dev)]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)!.body.error).toBe("token_replayed");
    }
  });

  test("stale_authentication: no auth_time, or a sign-in older than maxAge", async () => {
    const site = await staffSite("gamma", { "identity-max-age": "300s" });
    const now = Math.floor(clock() / 1000);
    expectRefusal(await signIn(site, device("gamma"), { auth_time: undefined }), 401, "stale_authentication");
    expectRefusal(await signIn(site, device("gamma"), { auth_time: "yesterday" }), 401, "stale_authentication");
    // "no older than maxAge": one second past it is stale (the clock tolerance does not stretch maxAge)
    expectRefusal(await signIn(site, device("gamma"), { auth_time: now - 300 - 1 }), 401, "stale_authentication");
    expect((await signIn(site, device("gamma"), { auth_time: now - 300 })).status).toBe(200);
    // an issuer clock a little ahead of ours is forgiven, far ahead is not
    expect((await signIn(site, device("gamma"), { auth_time: now + 30 })).status).toBe(200);
    expectRefusal(await signIn(site, device("gamma"), { auth_time: now + 61 }), 401, "stale_authentication");
  });

  test("mfa_required: no amr, or no second-factor marker in it; the markers are configurable", async () => {
    const site = await staffSite("gamma", { "identity-mfa-values": "mfa,hwk" });
    expectRefusal(await signIn(site, device("gamma"), { amr: undefined }), 403, "mfa_required");
    expectRefusal(await signIn(site, device("gamma"), { amr: ["pwd"] }), 403, "mfa_required");
    expectRefusal(await signIn(site, device("gamma"), { amr: "mfa" }), 403, "mfa_required");
    expect((await signIn(site, device("gamma"), { amr: ["pwd", "hwk"] })).status).toBe(200);
  });

  test("not_in_required_group: outside every allowed group, or no group claim", async () => {
    const site = await staffSite();
    expectRefusal(await signIn(site, device("gamma"), { groups: ["everyone"] }), 403, "not_in_required_group");
    expectRefusal(await signIn(site, device("gamma"), { groups: undefined }), 403, "not_in_required_group");
    expect((await signIn(site, device("gamma"), { groups: ["everyone", "other-staff"] })).status).toBe(200);
  });

  test("the groups claim is configurable", async () => {
    const site = await staffSite("gamma", { "identity-groups-claim": "roles" });
    expectRefusal(await signIn(site, device("gamma")), 403, "not_in_required_group");
    expect((await signIn(site, device("gamma"), { roles: STAFF_GROUP })).status).toBe(200);
  });

  test("a refused token does not use up its challenge: the same nonce then signs in with a good token", async () => {
    // Issue 13, item 8: "staff freshness is checked only after the nonce is consumed (a stale ID
    // token burns the challenge)".
    const site = await staffSite("gamma", { "identity-max-age": "300s" });
    const dev = device("gamma");
    const { nonce } = await challenge(site, dev);
    const now = Math.floor(clock() / 1000);
    expectRefusal(await exchange(site, await issuer.mint({ nonce, auth_time: now - 301 }), dev), 401, "stale_authentication");
    expectRefusal(await exchange(site, await issuer.mint({ nonce, auth_time: undefined }), dev), 401, "stale_authentication");
    expectRefusal(await exchange(site, await issuer.mint({ nonce, iat: now - 120, auth_time: now - 120 }), dev), 401, "token_invalid");
    expectRefusal(await exchange(site, await issuer.mint({ nonce, amr: ["pwd"] }), dev), 403, "mfa_required");
    expectRefusal(await exchange(site, await issuer.mint({ nonce, groups: ["everyone"] }), dev), 403, "not_in_required_group");
    const good = await issuer.mint({ nonce });
    expect((await exchange(site, good, dev)).status).toBe(200);
    // Used once it succeeded: the spec's token_replayed.
    expectRefusal(await exchange(site, good, dev), 409, "token_replayed");
    expectRefusal(await exchange(site, await issuer.mint({ nonce, amr: ["pwd"] }), dev), 409, "token_replayed");
  });

  // spec, state table: "challenge issued | POST auth/identity/exchange | nonce issued to that
  // installation, unused, within ten minutes, ID token valid | challenge used"; "challenge issued |
  // ten minutes pass | | challenge expired | Error challenge_unknown if used."
  test("another installation's attempt is challenge_unknown and leaves the challenge to the installation it was issued to", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    const issued = await challenge(site, dev);
    const idToken = await issuer.mint({ nonce: issued.nonce });
    expectRefusal(await exchange(site, idToken, device("gamma")), 401, "challenge_unknown");
    expectRefusal(await exchange(site, idToken, device("gamma")), 401, "challenge_unknown");
    expect((await exchange(site, idToken, dev)).status).toBe(200);
    expectRefusal(await exchange(site, idToken, dev), 409, "token_replayed");
  });

  test("a challenge past its ten minutes is challenge_unknown every time it is presented, never token_replayed", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    const late = await challenge(site, dev);
    clock.advance(10 * 60_000 + 1000);
    for (let i = 0; i < 3; i++) expectRefusal(await exchange(site, await issuer.mint({ nonce: late.nonce }), dev), 401, "challenge_unknown");
  });

  test("checks run in design.md's order", async () => {
    const site = await staffSite();
    const dev = device("gamma");
    const everythingWrong = { auth_time: undefined, amr: ["pwd"], groups: [] };
    // signature/claims before the nonce: a forbidden alg with an unknown nonce is token_invalid
    expectRefusal(await exchange(site, await issuer.mint({ ...everythingWrong, nonce: "x" }, { alg: "HS256" }), dev), 401, "token_invalid");
    // nonce before auth_time
    expectRefusal(await exchange(site, await issuer.mint({ ...everythingWrong, nonce: "x" }), dev), 401, "challenge_unknown");
    // auth_time before the second factor, the second factor before the group
    expectRefusal(await signIn(site, dev, everythingWrong), 401, "stale_authentication");
    expectRefusal(await signIn(site, dev, { amr: ["pwd"], groups: [] }), 403, "mfa_required");
    expectRefusal(await signIn(site, dev, { groups: [] }), 403, "not_in_required_group");
  });

  test("issuer down: 503 issuer_unavailable, not token_invalid", async () => {
    const site = await staffSite();
    issuer.down = true;
    try {
      expectRefusal(await signIn(site, device("gamma")), 503, "issuer_unavailable");
    } finally {
      issuer.down = false;
    }
  });
});
