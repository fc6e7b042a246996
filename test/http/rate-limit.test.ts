import { afterEach, describe, expect, test } from "bun:test";
import { edenGC, fullGC, heapStats } from "bun:jsc";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { compose } from "../../src/compose";
import { toConfig } from "../../src/config/config";
import { createLogger, silentLogger } from "../../src/config/log";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { createApp } from "../../src/http/app";
import { RateLimiter } from "../../src/http/rate-limit";
import { MemoryRateLimitStore } from "../../src/store/memory-rate-limit";
import { BASE, BASE_URL, createLicense, device, tempDir, testClock, testSite, type TestSite } from "../helpers";

// design.md: "Rate limit per network address (IPv6 grouped by /64), two budgets: sign-in (activate,
// challenge, exchange) default 20 a minute, everything else default 600 a minute; 429 with
// Retry-After in whole seconds."

let site: TestSite | null = null;
afterEach(async () => {
  await site?.close();
  site = null;
});

/** A site whose peer address each request names in a test-only map. */
async function limitedSite(settings: Record<string, string>, clock = testClock()) {
  const peers = new WeakMap<Request, string>();
  site = await testSite("alpha", { settings, clock, peerAddress: (r) => peers.get(r) ?? null });
  const s = site;
  return {
    site: s,
    clock,
    /** A request to the API path, or `o.request` as it is (a console or portal form). */
    send(peer: string, method: string, path: string, o: { body?: unknown; headers?: Record<string, string>; request?: Request } = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.body !== undefined) headers["content-type"] = "application/json";
      const request = o.request ?? new Request(BASE + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
      peers.set(request, peer);
      return s.app.handle(request);
    },
  };
}

describe("rate limits per address", () => {
  test("the sign-in budget: 429 rate_limited with Retry-After in whole seconds, and no audit line", async () => {
    const clock = testClock(Date.parse("2026-11-21T12:00:15.400Z"));
    const { site, send } = await limitedSite({ "rate-limit-signin": "3/60s" }, clock);
    const body = { key: "AL-00000-00000-00000-00000-00000", device: device("alpha") };
    for (let i = 0; i < 3; i++) expect((await send("198.51.100.1", "POST", "/licenses/activate", { body })).status).toBe(403);
    const auditBefore = (await site.composed.store.listAudit({})).length;
    const limited = await send("198.51.100.1", "POST", "/licenses/activate", { body });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("45"); // the window ends at 12:01:00; 44.6 s rounded up
    const answer = await limited.json();
    expect(answer).toEqual({ ok: false, error: "rate_limited", message: expect.any(String) });
    expect(limited.headers.get("ratelimit-policy")).toBe('"signin";q=3;w=60');
    expect(limited.headers.get("ratelimit")).toBe('"signin";r=0;t=45');
    expect((await site.composed.store.listAudit({})).length).toBe(auditBefore);
  });

  test("no spelling of a sign-in path escapes the sign-in budget: a trailing slash reaches no sign-in", async () => {
    const { send } = await limitedSite({ "rate-limit-signin": "2/60s" });
    const body = { key: "AL-00000-00000-00000-00000-00000", device: device("alpha") };
    for (let i = 0; i < 2; i++) expect((await send("198.51.100.9", "POST", "/licenses/activate", { body })).status).toBe(403);
    for (const path of ["/licenses/activate/", "/auth/identity/exchange/", "/auth/identity/challenge/", "/licenses/activate//"]) {
      const r = await send("198.51.100.9", "POST", path, { body });
      expect(r.status).toBe(404); // not an attempt at a key or a sign-in
    }
    expect((await send("198.51.100.9", "POST", "/licenses/activate", { body })).status).toBe(429);
  });

  test("the two budgets are counted apart", async () => {
    const { send } = await limitedSite({ "rate-limit-signin": "2/60s", "rate-limit-api": "5/60s" });
    const body = { key: "x", device: device("alpha") };
    await send("198.51.100.1", "POST", "/licenses/activate", { body });
    await send("198.51.100.1", "POST", "/licenses/activate", { body });
    expect((await send("198.51.100.1", "POST", "/licenses/activate", { body })).status).toBe(429);
    expect((await send("198.51.100.1", "POST", "/auth/identity/challenge", { body })).status).toBe(429);
    expect((await send("198.51.100.1", "POST", "/auth/identity/exchange", { body })).status).toBe(429);
    for (let i = 0; i < 5; i++) expect((await send("198.51.100.1", "GET", "/meta")).status).toBe(200);
    const over = await send("198.51.100.1", "GET", "/entitlements/current");
    expect(over.status).toBe(429);
    expect(over.headers.get("ratelimit-policy")).toBe('"api";q=5;w=60');
    // Unknown paths count against the api budget too.
    expect((await send("198.51.100.1", "GET", "/no/such/path")).status).toBe(429);
  });

  test("the console's sign-in has its own budget: customers guessing keys behind the staff's address do not lock staff out", async () => {
    const { site, send } = await limitedSite({ "rate-limit-signin": "3/60s", "rate-limit-console-signin": "4/60s" });
    const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "desk", scopes: ["licenses:read"] })).secret;
    const nat = "198.51.100.44";
    const fromNat = (path: string, fields: Record<string, string>) => {
      const request = new Request(`${BASE_URL}${path}`, {
        method: "POST",
        headers: { origin: new URL(BASE_URL).origin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
      });
      return send(nat, "POST", "", { request });
    };
    for (let i = 0; i < 3; i++) expect((await fromNat("/portal/sign-in", { key: "AL-00000-00000-00000-00000-00000" })).status).toBe(403);
    expect((await fromNat("/portal/sign-in", { key: "AL-00000-00000-00000-00000-00000" })).status).toBe(429);
    expect((await send(nat, "POST", "/licenses/activate", { body: { key: "x", device: device("alpha") } })).status).toBe(429);
    // The same address still signs staff in to the console, counted apart.
    const signedIn = await fromNat("/console/sign-in", { token });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get("ratelimit-policy")).toBe('"console";q=4;w=60');
    for (let i = 0; i < 3; i++) expect((await fromNat("/console/sign-in", { token: "kta_wrong" })).status).toBe(401);
    const limited = await fromNat("/console/sign-in", { token });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("ratelimit")).toBe('"console";r=0;t=60');
  });

  test("addresses are counted apart; IPv6 by /64; a new window gives a new budget", async () => {
    const { send, clock } = await limitedSite({ "rate-limit-api": "2/60s" });
    await send("2001:db8:1:2::1", "GET", "/meta");
    await send("2001:db8:1:2:ffff::99", "GET", "/meta");
    expect((await send("2001:db8:1:2:1234::5", "GET", "/meta")).status).toBe(429);
    expect((await send("2001:db8:1:3::1", "GET", "/meta")).status).toBe(200);
    expect((await send("198.51.100.1", "GET", "/meta")).status).toBe(200);
    const ok = await send("198.51.100.2", "GET", "/meta");
    expect(ok.headers.get("ratelimit")).toBe('"api";r=1;t=60');
    clock.advance(60_000);
    expect((await send("2001:db8:1:2::1", "GET", "/meta")).status).toBe(200);
  });

  test("behind a trusted proxy, the client from X-Forwarded-For is counted, not the proxy", async () => {
    const { send, site } = await limitedSite({ "rate-limit-api": "1/60s", "trust-proxy": "10.0.0.0/8" });
    const via = (client: string) => ({ headers: { "x-forwarded-for": `${client}, 10.0.0.3` } });
    expect((await send("10.0.0.2", "GET", "/meta", via("198.51.100.1"))).status).toBe(200);
    expect((await send("10.0.0.2", "GET", "/meta", via("198.51.100.2"))).status).toBe(200);
    expect((await send("10.0.0.2", "GET", "/meta", via("198.51.100.1"))).status).toBe(429);
    // The address in the audit trail is the client's too.
    const refused = await send("10.0.0.2", "GET", "/entitlements/current", via("198.51.100.3"));
    const { ref } = (await refused.json()) as { ref: string };
    const line = (await site.composed.store.listAudit({})).find((l) => l.ref === ref);
    expect(line?.address).toBe("198.51.100.3");
  });

  test("an untrusted peer cannot escape its budget by sending X-Forwarded-For", async () => {
    const { send, site } = await limitedSite({ "rate-limit-api": "1/60s", "trust-proxy": "10.0.0.0/8" });
    expect((await send("203.0.113.5", "GET", "/meta", { headers: { "x-forwarded-for": "198.51.100.1" } })).status).toBe(200);
    expect((await send("203.0.113.5", "GET", "/meta", { headers: { "x-forwarded-for": "198.51.100.2" } })).status).toBe(429);
    const fresh = await send("203.0.113.6", "GET", "/entitlements/current", { headers: { "x-forwarded-for": "198.51.100.9" } });
    const { ref } = (await fresh.json()) as { ref: string };
    expect((await site.composed.store.listAudit({})).find((l) => l.ref === ref)?.address).toBe("203.0.113.6");
  });

  test("a flood of random source addresses through the app keeps the counters bounded", async () => {
    const dir = tempDir();
    const counters = new MemoryRateLimitStore(500);
    const config = toConfig({ variant: "gamma", "base-url": BASE_URL, data: join(dir, "data"), keys: join(dir, "keys"), releases: dir }, "admin");
    const peers = new WeakMap<Request, string>();
    const composed = await compose(config, { log: silentLogger, clock: testClock(), peerAddress: (r) => peers.get(r) ?? null, rateLimitStore: counters });
    const app = createApp(composed.services);
    try {
      for (let i = 0; i < 5000; i++) {
        const r = new Request(`${BASE}/meta`);
        const words = crypto.getRandomValues(new Uint16Array(8));
        peers.set(r, i % 2 ? [...words.slice(0, 4)].map((n) => n & 0xff).join(".") : [...words].map((n) => n.toString(16)).join(":"));
        expect((await app.handle(r)).status).toBe(200);
        expect(counters.size).toBeLessThanOrEqual(500);
      }
    } finally {
      await composed.store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("successful answers carry the RateLimit headers too", async () => {
    const { send, site } = await limitedSite({ "rate-limit-signin": "20/60s" });
    const { key } = await createLicense(site);
    const ok = await send("198.51.100.1", "POST", "/licenses/activate", { body: { key, device: device("alpha") } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("ratelimit-policy")).toBe('"signin";q=20;w=60');
    expect(ok.headers.get("ratelimit")).toMatch(/^"signin";r=19;t=\d+$/);
  });

  test("when the counter store fails, requests pass and the failure is logged once a minute", async () => {
    const lines: string[] = [];
    const clock = testClock();
    const broken = { hit: async () => Promise.reject(new Error("redis down")), close: async () => {} };
    const limiter = new RateLimiter(
      broken,
      {
        signin: { limit: 1, windowSeconds: 60 },
        api: { limit: 1, windowSeconds: 60 },
        admin: { limit: 1, windowSeconds: 60 },
        console: { limit: 1, windowSeconds: 60 },
      },
      clock,
      createLogger("json", "info", (l) => lines.push(l)),
    );
    expect(await limiter.check("api", "198.51.100.1")).toBeNull();
    expect(await limiter.check("api", "198.51.100.1")).toBeNull();
    expect(lines.length).toBe(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "error", error: "redis down" });
    clock.advance(60_000);
    await limiter.check("signin", "198.51.100.1");
    expect(lines.length).toBe(2);
  });

  test("a high limit's remaining counts do not outlive their answers (none kept in the old generation)", async () => {
    // A vendor with a high limit sees a new remaining count on every answer. Text made from a number
    // by a template goes through JavaScriptCore's VM-wide cache of recent numbers, which held nearly
    // every count across the young collection `serve` makes every 250 requests (collection-pacing.ts);
    // each then stayed until a whole collection (bench/README.md, "4a and 5a, eleventh round").
    const rate = { limit: 100_000_000, windowSeconds: 60 };
    const limiter = new RateLimiter(new MemoryRateLimitStore(), { signin: rate, api: rate, admin: rate, console: rate }, testClock(), silentLogger);
    const round = async () => {
      let last = "";
      for (let i = 0; i < 250; i++) last = (await limiter.check("api", "198.51.100.1"))!.headers.ratelimit!;
      edenGC();
      return last;
    };
    for (let i = 0; i < 8; i++) await round();
    fullGC();
    const strings = () => heapStats().objectTypeCounts.string ?? 0;
    const before = strings();
    let last = "";
    for (let i = 0; i < 40; i++) last = await round();
    // The counts are right as well: 48 rounds of 250 checks so far.
    expect(last).toBe(`"api";r=${100_000_000 - 48 * 250};t=60`);
    // Measured: 0.88 strings a check kept with a template, none with toFixed.
    expect((strings() - before) / (40 * 250)).toBeLessThan(0.1);
  });
});
