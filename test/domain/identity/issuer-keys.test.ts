import { afterEach, describe, expect, test } from "bun:test";
import { KEYS_MAX_AGE_MS, MISS_INTERVAL_MS } from "../../../src/domain/identity/issuer-keys";
import { device, testClock, testSite, type TestSite } from "../../helpers";
import { CLIENT_ID, STAFF_GROUP, startIssuer, type LocalIssuer, type MintOptions } from "../../identity-issuer";

// design.md's issuer key cache, judged by counting the issuer's key reads: the first token signed
// with a newly published key is accepted even seconds after the last read; tokens naming a key the
// issuer does not publish cost at most one read in thirty seconds, however many and however
// concurrent; keys that cannot be read are 503 issuer_unavailable.

const open: { site: TestSite; issuer: LocalIssuer }[] = [];
afterEach(async () => {
  for (const { site, issuer } of open.splice(0)) {
    issuer.stop();
    await site.close();
  }
});

async function setup(settings: Record<string, string> = {}) {
  const clock = testClock();
  const issuer = await startIssuer(clock);
  const site = await testSite("gamma", {
    clock,
    settings: { "identity-issuer": issuer.url, "identity-client-id": CLIENT_ID, "identity-groups": STAFF_GROUP, ...settings },
  });
  open.push({ site, issuer });
  const dev = device("gamma");
  /** A whole sign-in: challenge, a token from the issuer with its nonce, exchange. */
  const signIn = async (opts: MintOptions = {}) => {
    const c = await site.request("POST", "/auth/identity/challenge", { body: { device: dev } });
    const { nonce } = (await c.json()) as { nonce: string };
    const res = await site.request("POST", "/auth/identity/exchange", {
      body: { id_token: await issuer.mint({ nonce }, opts), device: dev },
    });
    return { status: res.status, error: ((await res.json()) as { error?: string }).error };
  };
  return { clock, issuer, site, signIn };
}

const invalid = { status: 401, error: "token_invalid" };
const unavailable = { status: 503, error: "issuer_unavailable" };

describe("issuer keys", () => {
  test("are read once and then served from the cache", async () => {
    const { issuer, signIn, clock } = await setup();
    for (let i = 0; i < 5; i++) {
      expect((await signIn()).status).toBe(200);
      clock.advance(60_000);
    }
    expect(issuer.keyReads).toBe(1);
  });

  test("rotation: the first token with a newly published key is accepted seconds after the last read", async () => {
    const { issuer, signIn, clock } = await setup();
    const oldKid = issuer.kid;
    expect((await signIn()).status).toBe(200);
    expect(issuer.keyReads).toBe(1);
    clock.advance(3_000);
    const newKid = await issuer.rotate();
    clock.advance(2_000);
    expect((await signIn({ kid: newKid })).status).toBe(200);
    expect(issuer.keyReads).toBe(2);
    // Both keys are cached now: neither costs a read.
    expect((await signIn({ kid: oldKid })).status).toBe(200);
    expect((await signIn({ kid: newKid })).status).toBe(200);
    expect(issuer.keyReads).toBe(2);
    // A second rotation within the thirty seconds is picked up as well: only misses are limited.
    clock.advance(1_000);
    expect((await signIn({ kid: await issuer.rotate() })).status).toBe(200);
    expect(issuer.keyReads).toBe(3);
  });

  test("unknown-kid flood: at most one read per thirty seconds of (injected) time", async () => {
    const { issuer, signIn, clock } = await setup();
    expect((await signIn()).status).toBe(200);
    const start = issuer.keyReads;
    // Five minutes of one token a second, each naming a key nobody publishes.
    for (let s = 0; s < 300; s++) {
      expect(await signIn({ kid: `forged-${s}` })).toEqual(invalid);
      clock.advance(1_000);
    }
    expect(issuer.keyReads - start).toBe(300_000 / MISS_INTERVAL_MS);
    // The published key kept working throughout without a read.
    expect((await signIn()).status).toBe(200);
    expect(issuer.keyReads - start).toBe(10);
  });

  test("concurrent requests share one read, on a cold cache and on unknown kids", async () => {
    const { issuer, signIn } = await setup();
    let release = issuer.holdKeys();
    const cold = Array.from({ length: 20 }, () => signIn());
    await until(() => issuer.keyReads === 1);
    release();
    expect((await Promise.all(cold)).map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(issuer.keyReads).toBe(1);

    release = issuer.holdKeys();
    const flood = Array.from({ length: 50 }, (_, i) => signIn({ kid: `forged-${i}` }));
    await until(() => issuer.keyReads === 2);
    release();
    for (const r of await Promise.all(flood)) expect(r).toEqual(invalid);
    expect(issuer.keyReads).toBe(2);
  });

  test("after a miss, a key published within the thirty seconds waits for the next allowed read", async () => {
    const { issuer, signIn, clock } = await setup();
    expect((await signIn()).status).toBe(200);
    expect(await signIn({ kid: "forged" })).toEqual(invalid);
    const reads = issuer.keyReads;
    clock.advance(5_000);
    const newKid = await issuer.rotate();
    expect(await signIn({ kid: newKid })).toEqual(invalid);
    expect(issuer.keyReads).toBe(reads);
    clock.advance(MISS_INTERVAL_MS - 5_000);
    expect((await signIn({ kid: newKid })).status).toBe(200);
    expect(issuer.keyReads).toBe(reads + 1);
  });

  test("a token without kid verifies while the issuer publishes a single RS256 key", async () => {
    const { issuer, signIn, clock } = await setup();
    expect((await signIn({ kid: null })).status).toBe(200);
    await issuer.rotate();
    clock.advance(KEYS_MAX_AGE_MS);
    expect(await signIn({ kid: null })).toEqual(invalid);
  });

  test("keys are read again after an hour, so a withdrawn key stops verifying", async () => {
    const { issuer, signIn, clock } = await setup();
    const oldKid = issuer.kid;
    expect((await signIn()).status).toBe(200);
    await issuer.rotate({ replace: true });
    clock.advance(KEYS_MAX_AGE_MS - 1_000);
    expect((await signIn({ kid: oldKid })).status).toBe(200);
    expect(issuer.keyReads).toBe(1);
    clock.advance(1_000);
    expect(await signIn({ kid: oldKid })).toEqual(invalid);
    expect(issuer.keyReads).toBe(2);
    expect((await signIn()).status).toBe(200);
  });

  test("issuer down on a cold cache: 503 issuer_unavailable, one attempt per thirty seconds, then recovery", async () => {
    const { issuer, signIn, clock } = await setup();
    issuer.down = true;
    for (let i = 0; i < 5; i++) {
      expect(await signIn()).toEqual(unavailable);
      clock.advance(5_000);
    }
    expect(issuer.requests).toBe(1);
    issuer.down = false;
    clock.advance(MISS_INTERVAL_MS);
    expect((await signIn()).status).toBe(200);
  });

  test("issuer down with keys cached: known keys still verify; an unknown kid is issuer_unavailable", async () => {
    const { issuer, signIn } = await setup();
    expect((await signIn()).status).toBe(200);
    issuer.down = true;
    expect((await signIn()).status).toBe(200);
    expect(await signIn({ kid: "rotated-while-down" })).toEqual(unavailable);
    expect(await signIn({ kid: "rotated-while-down" })).toEqual(unavailable);
  });

  test("a discovery document naming another issuer is refused: issuer_unavailable", async () => {
    const clock = testClock();
    const issuer = await startIssuer(clock);
    const site = await testSite("gamma", {
      clock,
      settings: { "identity-issuer": `${issuer.url}/`, "identity-client-id": CLIENT_ID, "identity-groups": STAFF_GROUP },
    });
    open.push({ site, issuer });
    const res = await site.request("POST", "/auth/identity/exchange", {
      body: { id_token: await issuer.mint({ nonce: "n" }), device: device("gamma") },
    });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toBe("issuer_unavailable");
    expect(issuer.keyReads).toBe(0);
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await Bun.sleep(2);
  expect(condition()).toBe(true);
}
