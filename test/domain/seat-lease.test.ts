import { afterEach, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { updateLicense } from "../../src/domain/admin/licenses";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { isoTime as iso } from "../../src/domain/clock";
import { decodeJwt } from "jose";
import { createLicense, device, testSite, type TestSite } from "../helpers";

// design.md "Seats that come back": an installation keeps its seat while it is seen within the
// license's seatLease; when every seat is taken, activation reclaims the seat of the installation
// seen longest ago whose lease ran out. A license without a lease behaves as before.
const MIN = 60_000;
const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});

async function site() {
  const s = await testSite("alpha");
  sites.push(s);
  // Webhook-only events are written only while an endpoint subscribes (store/types.ts NewEvent).
  await s.composed.store.createWebhookEndpoint({
    id: "whe_all",
    url: "https://hooks.example/k",
    types: ["activation.reclaimed"],
    secret: "whsec_x",
    enabled: true,
    disabledReason: null,
    created: s.clock(),
  });
  return s;
}

const json = async (r: Response | Promise<Response>) => (await r).json() as Promise<any>;
const activate = (s: TestSite, key: string, d: ReturnType<typeof device>) => json(s.request("POST", "/licenses/activate", { body: { key, device: d } }));

test("2 seats, 1 h lease: 61 minutes after one goes silent a third installation takes its seat; its token is refused, the active one's is not", async () => {
  const s = await site();
  const { key, license } = await createLicense(s, { seats: 2, seatLease: "1h" });
  const [a, b, c] = [device("alpha"), device("alpha"), device("alpha")];
  const active = await activate(s, key, a); // activated first: without its refresh it would be the one seen longest ago
  s.clock.advance(1 * MIN);
  const silent = await activate(s, key, b);
  expect(silent.entitlement.seatLease).toEqual({ lease: "1h", seconds: 3600, lapses: iso(s.clock() + 60 * MIN) });
  // The token TTL (7 days by default) is capped to the lease for this license's tokens.
  const claims = decodeJwt(silent.token);
  expect(claims.exp! - claims.iat!).toBe(3600);

  s.clock.advance(29 * MIN);
  const refreshed = await json(s.request("POST", "/entitlements/refresh", { token: active.token, body: { device: a } }));
  expect(refreshed.ok).toBe(true);
  s.clock.advance(31 * MIN + 1); // 61 minutes since the silent one was seen

  const third = await activate(s, key, c);
  expect(third.ok).toBe(true);
  expect(third.entitlement.seats).toEqual({ used: 2, total: 2 });
  expect((await s.request("GET", "/entitlements/current", { token: silent.token })).status).toBe(401);
  expect((await s.request("GET", "/entitlements/current", { token: refreshed.token })).status).toBe(200);
  const seats = await s.composed.store.listActivations(license.id);
  expect(
    seats
      .filter((x) => x.deactivated === null)
      .map((x) => x.id)
      .sort(),
  ).toEqual([active.entitlement.id, third.entitlement.id].sort());
  expect(seats.find((x) => x.id === silent.entitlement.id)!.deactivated).toBe(s.clock());

  // An audit line and an event name both installations; the feed carries the deactivation for mirrors.
  const [line, ...more] = (await s.composed.store.listAudit({ licenseId: license.id })).filter((l) => l.action === "reclaim");
  expect(more).toEqual([]);
  expect(line).toMatchObject({ activationId: silent.entitlement.id, actor: third.entitlement.id, outcome: "ok" });
  const events = (await s.composed.store.listEvents({ after: 0, limit: 100 })).map((e) => ({ type: e.type, data: JSON.parse(e.data) }));
  const reclaimed = events.find((e) => e.type === "activation.reclaimed")!;
  expect(reclaimed.data.activation.id).toBe(silent.entitlement.id);
  expect(reclaimed.data.by.id).toBe(third.entitlement.id);
  expect(events.find((e) => e.type === "activation.deactivated")!.data.activation.id).toBe(silent.entitlement.id);
});

test("a reclaimed installation whose token outlived the lease (the lease was shortened) gets entitlement_revoked, and activates again once a seat is free", async () => {
  const s = await site();
  const { key, license } = await createLicense(s, { seats: 2, seatLease: "2h" });
  const [a, b] = [device("alpha"), device("alpha")];
  const kept = await activate(s, key, a);
  const lost = await activate(s, key, b);
  await updateLicense(s.composed.services.admin, CLI_CALLER, license.id, { seatLease: "1h" });
  s.clock.advance(30 * MIN);
  await s.request("POST", "/entitlements/refresh", { token: kept.token, body: { device: a } });
  s.clock.advance(31 * MIN);
  const taker = await activate(s, key, device("alpha"));
  expect(taker.ok).toBe(true);
  expect((await json(s.request("GET", "/entitlements/current", { token: lost.token }))).error).toBe("entitlement_revoked");
  expect((await json(s.request("POST", "/entitlements/refresh", { token: lost.token, body: { device: b } }))).error).toBe("entitlement_revoked");
  expect((await activate(s, key, b)).error).toBe("seat_limit");
  expect((await s.request("POST", "/entitlements/deactivate", { token: taker.token })).status).toBe(200);
  const back = await activate(s, key, b);
  expect(back.ok).toBe(true);
  expect(back.entitlement.id).not.toBe(lost.entitlement.id);
});

test("any bearer request keeps the seat (here the releases list), written at the sightings' flush; the lapsed seat reclaimed is the one seen longest ago", async () => {
  const s = await site();
  const { key } = await createLicense(s, { seats: 1, seatLease: "10m" });
  const a = device("alpha");
  const holder = await activate(s, key, a);
  s.clock.advance(9 * MIN);
  await s.request("GET", "/releases", { token: holder.token });
  await s.composed.services.adoption.flush();
  s.clock.advance(2 * MIN); // 11 minutes after the activation, 2 after the sighting
  expect((await activate(s, key, device("alpha"))).error).toBe("seat_limit");

  const two = await createLicense(s, { seats: 2, seatLease: "10m" });
  const older = await activate(s, two.key, device("alpha"));
  s.clock.advance(1 * MIN);
  const newer = await activate(s, two.key, device("alpha"));
  s.clock.advance(12 * MIN); // both lapsed: the one seen longest ago goes
  expect((await activate(s, two.key, device("alpha"))).ok).toBe(true);
  const status = async (id: string) => (await s.composed.store.getActivation(id))!.deactivated;
  expect(await status(older.entitlement.id)).not.toBeNull();
  expect(await status(newer.entitlement.id)).toBeNull();
});

test("without a lease: seat_limit as before, however long an installation has been silent, and no seatLease in answers", async () => {
  const s = await site();
  const { key, license } = await createLicense(s, { seats: 2 });
  const first = await activate(s, key, device("alpha"));
  await activate(s, key, device("alpha"));
  expect(first.entitlement.seatLease).toBeUndefined();
  expect(decodeJwt(first.token).exp! - decodeJwt(first.token).iat!).toBe(7 * 86400);
  s.clock.advance(400 * 86_400_000);
  expect((await activate(s, key, device("alpha"))).error).toBe("seat_limit");
  expect((await s.composed.store.listAudit({ licenseId: license.id })).some((l) => l.action === "reclaim")).toBe(false);
});

test("seatLease over the admin API: set, shown, changed, removed; shorter than twice the sighting interval is refused naming seatLease", async () => {
  const s = await site();
  const { secret } = await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "t", scopes: ["licenses:write", "licenses:read"] });
  const body = { licensee: "Ada", organization: "Engines", plan: "pro", planTitle: "Pro", seats: 3, channels: ["stable"] };
  const short = await json(s.request("POST", "/admin/licenses", { token: secret, body: { ...body, seatLease: "59s" } }));
  expect(short).toMatchObject({ ok: false, error: "invalid_request" });
  expect(short.message).toContain("seatLease");
  expect(short.message).toContain("at least 1m");
  const bad = await s.request("POST", "/admin/licenses", { token: secret, body: { ...body, seatLease: "soon" } });
  expect(bad.status).toBe(400);
  const created = await json(s.request("POST", "/admin/licenses", { token: secret, body: { ...body, seatLease: "30d" } }));
  expect(created.license.seatLease).toBe("30d");
  const id = created.license.id;
  expect((await json(s.request("GET", `/admin/licenses/${id}`, { token: secret }))).license.seatLease).toBe("30d");
  const patched = await json(s.request("PATCH", `/admin/licenses/${id}`, { token: secret, body: { seatLease: "120m" } }));
  expect(patched.license.seatLease).toBe("2h");
  expect(patched.changed).toEqual(["seatLease"]);
  const refusedPatch = await s.request("PATCH", `/admin/licenses/${id}`, { token: secret, body: { seatLease: "30s" } });
  expect(refusedPatch.status).toBe(400);
  const removed = await json(s.request("PATCH", `/admin/licenses/${id}`, { token: secret, body: { seatLease: null } }));
  expect(removed.license.seatLease).toBeNull();
  expect((await s.composed.store.getLicense(id))!.seatLease).toBeUndefined();
});

test("/admin/stats counts seats in use and seats lapsed (leased, not seen within the lease)", async () => {
  const s = await site();
  const { secret } = await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "t", scopes: ["admin"] });
  const leased = await createLicense(s, { seats: 3, seatLease: "10m" });
  const plain = await createLicense(s, { seats: 1 });
  const kept = device("alpha");
  const keptAnswer = await activate(s, leased.key, kept);
  await activate(s, leased.key, device("alpha"));
  await activate(s, leased.key, device("alpha"));
  await activate(s, plain.key, device("alpha"));
  const stats = async () => (await json(s.request("GET", "/admin/stats", { token: secret }))).seats;
  expect(await stats()).toEqual({ inUse: 4, lapsed: 0 });
  s.clock.advance(6 * MIN);
  await s.request("POST", "/entitlements/refresh", { token: keptAnswer.token, body: { device: kept } });
  s.clock.advance(5 * MIN);
  expect(await stats()).toEqual({ inUse: 2, lapsed: 2 });
});

test("a license's own tokenTtl is capped to its seat lease (both ways); the recorded token expiry is the token's, and a reclaim's tokensValidUntil names it", async () => {
  const s = await site();
  // A year's tokens on a 1 h lease: 1 h tokens. A 2 h lifetime under a 30 d lease: 2 h tokens.
  const longTtl = await createLicense(s, { seats: 1, seatLease: "1h", tokenTtl: 366 * 86_400 });
  const shortTtl = await createLicense(s, { seats: 1, seatLease: "30d", tokenTtl: 7200 });
  const first = await activate(s, longTtl.key, device("alpha"));
  const other = await activate(s, shortTtl.key, device("alpha"));
  const [a, b] = [decodeJwt(first.token), decodeJwt(other.token)];
  expect(a.exp! - a.iat!).toBe(3600);
  expect(b.exp! - b.iat!).toBe(7200);
  expect(first.entitlement.expires).toBe(iso(a.exp! * 1000));
  const [held] = await s.composed.store.listActivations(longTtl.license.id);
  expect(held!.tokenExp).toBe(a.exp! * 1000);

  s.clock.advance(61 * MIN);
  expect((await activate(s, longTtl.key, device("alpha"))).ok).toBe(true);
  const events = (await s.composed.store.listEvents({ after: 0, limit: 100 })).map((e) => ({ type: e.type, data: JSON.parse(e.data) }));
  const reclaimed = events.find((e) => e.type === "activation.reclaimed")!;
  expect(reclaimed.data.activation.id).toBe(first.entitlement.id);
  expect(reclaimed.data.tokensValidUntil).toBe(iso(a.exp! * 1000));
  expect(events.find((e) => e.type === "activation.deactivated")!.data.tokensValidUntil).toBe(iso(a.exp! * 1000));
});

test("a reclaimed activation with no recorded token expiry (made before migration 6) is revoked for the site's whole token lifetime, not the lease set since", async () => {
  const s = await site();
  const { key, license } = await createLicense(s, { seats: 1 });
  const old = await activate(s, key, device("alpha")); // a 7-day token, issued with no lease
  (s.composed.store as unknown as { db: import("bun:sqlite").Database }).db.run("UPDATE activations SET token_exp = NULL");
  await updateLicense(s.composed.services.admin, CLI_CALLER, license.id, { seatLease: "1h" });
  s.clock.advance(61 * MIN);
  expect((await activate(s, key, device("alpha"))).ok).toBe(true);
  const events = (await s.composed.store.listEvents({ after: 0, limit: 100 })).map((e) => ({ type: e.type, data: JSON.parse(e.data) }));
  const reclaimed = events.find((e) => e.type === "activation.reclaimed")!;
  expect(reclaimed.data.activation.id).toBe(old.entitlement.id);
  // The old token lives to its own exp (7 days after it was issued): a mirror must refuse it that long.
  expect(Date.parse(reclaimed.data.tokensValidUntil)).toBeGreaterThanOrEqual(decodeJwt(old.token).exp! * 1000);
});
