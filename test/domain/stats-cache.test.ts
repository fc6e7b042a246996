import { afterEach, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { isoTime } from "../../src/domain/clock";
import { VARIANTS } from "../../src/config/variants";
import { KeyturnError } from "../../src/domain/errors";
import { ReleaseControls } from "../../src/domain/releases/release-controls";
import { keepStatsIn, StatsCache, STATS_MAX_AGE_MS, STATS_REFRESH_MS, STATS_WAIT_MS } from "../../src/domain/stats-cache";
import type { Store } from "../../src/store/types";
import { createLicense, device, testSite, type TestSite } from "../helpers";

// Issue 34 item 2: GET /admin/stats answers a kept count, counts again off the request path once
// it is STATS_REFRESH_MS old, and never answers one older than STATS_MAX_AGE_MS.
const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});

/** `keep`: every count kept, however quick (a test site's counts take a few milliseconds). */
async function setUp(keep = true) {
  const s = await testSite("alpha");
  sites.push(s);
  if (keep) keepStatsIn(s.composed.store, new StatsCache(s.clock, STATS_WAIT_MS, -1));
  const { secret } = await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "t", scopes: ["admin"] });
  const { key } = await createLicense(s, { seats: 10 });
  const activate = async () => expect((await s.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).status).toBe(200);
  const stats = async () => {
    const res = await s.request("GET", "/admin/stats", { token: secret });
    expect(res.status).toBe(200);
    return (await res.json()) as { counted: string; ageSeconds: number; seats: { inUse: number } };
  };
  return { s, activate, stats };
}

/** Asks until the background count has landed (each ask is one event-loop turn apart; bounded). */
async function untilCounted(stats: () => Promise<{ counted: string }>, after: string) {
  for (let i = 0; i < 200; i++) {
    const answer = await stats();
    if (answer.counted !== after) return answer;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error("The background count never landed.");
}

test("a kept count is answered with its age; once older than the refresh time it is still answered while a count runs in the background", async () => {
  const { s, activate, stats } = await setUp();
  await activate();
  const first = await stats();
  expect(first).toMatchObject({ counted: isoTime(s.clock()), ageSeconds: 0, seats: { inUse: 1 } });

  await activate();
  s.clock.advance(STATS_REFRESH_MS - 1000);
  // Younger than the refresh time: the kept figures, not the second seat.
  expect(await stats()).toMatchObject({ counted: first.counted, ageSeconds: STATS_REFRESH_MS / 1000 - 1, seats: { inUse: 1 } });

  s.clock.advance(2000);
  const stale = await stats();
  expect(stale).toMatchObject({ counted: first.counted, ageSeconds: STATS_REFRESH_MS / 1000 + 1, seats: { inUse: 1 } });
  const fresh = await untilCounted(stats, first.counted);
  expect(fresh).toMatchObject({ counted: isoTime(s.clock()), ageSeconds: 0, seats: { inUse: 2 } });
});

test("a count of at most STATS_INLINE_INSTALLATIONS is not kept: a small site's figures are current on every request", async () => {
  const { s, activate, stats } = await setUp(false);
  await activate();
  expect((await stats()).seats.inUse).toBe(1);
  await activate();
  expect(await stats()).toMatchObject({ counted: isoTime(s.clock()), ageSeconds: 0, seats: { inUse: 2 } });
});

test("a count older than the maximum age is never answered: the caller waits for a new one", async () => {
  const { s, activate, stats } = await setUp();
  await activate();
  expect((await stats()).seats.inUse).toBe(1);
  await activate();
  s.clock.advance(STATS_MAX_AGE_MS + 1);
  expect(await stats()).toMatchObject({ counted: isoTime(s.clock()), ageSeconds: 0, seats: { inUse: 2 } });
});

test("a release control changed since the count: counted again before answering", async () => {
  const { s, activate, stats } = await setUp();
  await activate();
  const first = await stats();
  await activate();
  s.clock.advance(1000);
  await s.composed.store.applyReleaseControl({ lane: "alpha/stable/win-x64", version: "1.0.0" }, "halt", s.clock());
  expect(await stats()).toMatchObject({ counted: isoTime(s.clock()), seats: { inUse: 2 } });
  expect(first.counted).not.toBe(isoTime(s.clock()));
});

test("a count that outlasts the wait is answered 503 with Retry-After; it goes on, and the next caller gets it", async () => {
  const { s, activate } = await setUp();
  await activate();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const store = s.composed.store;
  // The records answer the seat count only once released: a count slower than the wait.
  const slow: Store = Object.assign(Object.create(store), {
    seatCountsIn: async (...args: Parameters<Store["seatCountsIn"]>) => (await held, store.seatCountsIn(...args)),
  });
  const cache = new StatsCache(s.clock, 20, -1);
  const deps = { store: slow, clock: s.clock, controls: new ReleaseControls(slow, s.clock, VARIANTS.alpha), index: null };
  const refused = await cache.get(deps).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(KeyturnError);
  expect(refused).toMatchObject({ code: "unavailable", headers: { "retry-after": "1" } });
  release();
  expect(await cache.get(deps)).toMatchObject({ counted: isoTime(s.clock()), seats: { inUse: 1 } });
});
