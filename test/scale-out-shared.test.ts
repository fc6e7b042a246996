import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { VARIANTS } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import { announceSkip, freshSchema, PG_URL, privateRedis, REDIS_URL, type TestSchema } from "./databases";
import { BASE_URL, device, tempDir } from "./helpers";
import { freePort } from "./processes";
import { CLIENT_ID, STAFF_GROUP, startIssuer, type LocalIssuer } from "./identity-issuer";
import { serve, type Serving } from "./serve-bare";

// Issue 7: two real keyturn processes on one PostgreSQL and one Redis — what must hold across them
// beyond seats and revocation (test/scale-out.test.ts): one nonce, one sign-in budget, and service
// that goes on when Redis goes away.

if (!PG_URL) announceSkip("test/scale-out-shared.test.ts", "KEYTURN_TEST_POSTGRES_URL");
else if (!REDIS_URL) announceSkip("test/scale-out-shared.test.ts", "KEYTURN_TEST_REDIS_URL");

/** Each test claims its own client address (through the trusted loopback proxy) so runs never share counters. */
const freshAddress = () => `198.51.100.${1 + (randomBytes(1)[0]! % 250)}`;
const randomIPv6 = () => `2001:db8:${randomBytes(2).toString("hex")}:${randomBytes(2).toString("hex")}::1`;

describe.skipIf(!PG_URL || !REDIS_URL)("two keyturn processes sharing PostgreSQL and Redis", () => {
  let schema: TestSchema;
  let dir: string;
  let issuer: LocalIssuer;
  let a: Serving;
  let b: Serving;
  let common: string[];

  beforeAll(async () => {
    schema = await freshSchema();
    dir = tempDir();
    generateKeyFiles(join(dir, "keys"), VARIANTS.beta.defaultLicenseKid);
    mkdirSync(join(dir, "releases"));
    issuer = await startIssuer(Date.now);
    common = [
      "--variant",
      "beta",
      "--base-url",
      BASE_URL,
      "--database",
      schema.url,
      "--keys",
      join(dir, "keys"),
      "--releases",
      join(dir, "releases"),
      "--trust-proxy",
      "127.0.0.1",
      "--rate-limit-signin",
      "6/60s",
      "--identity-issuer",
      issuer.url,
      "--identity-client-id",
      CLIENT_ID,
      "--identity-groups",
      STAFF_GROUP,
    ];
    [a, b] = await Promise.all([serve([...common, "--rate-limit-store", REDIS_URL!]), serve([...common, "--rate-limit-store", REDIS_URL!])]);
  }, 30_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    issuer?.stop();
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = async (s: Serving, path: string, body: unknown, address: string) => {
    const res = await fetch(`${s.url}/api/v1${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": address },
      body: JSON.stringify(body),
    });
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Record<string, any> };
  };

  test("one nonce exchanged on both processes at once gives exactly one success", async () => {
    for (let round = 0; round < 3; round++) {
      const address = randomIPv6();
      const dev = device("beta");
      const challenge = await post(a, "/auth/identity/challenge", { device: dev }, address);
      expect(challenge.status).toBe(200);
      const idToken = await issuer.mint({ nonce: challenge.body.nonce });
      const answers = await Promise.all([a, b].map((s) => post(s, "/auth/identity/exchange", { id_token: idToken, device: dev }, address)));
      const statuses = answers.map((x) => x.status).sort();
      expect(statuses).toEqual([200, 409]);
      expect(answers.find((x) => x.status === 409)!.body.error).toBe("token_replayed");
      expect(answers.find((x) => x.status === 200)!.body.entitlement.kind).toBe("staff");
    }
  });

  test("the sign-in budget is shared: 6 a minute per address across both processes, then 429 on either", async () => {
    const address = freshAddress();
    const attempt = (s: Serving) => post(s, "/licenses/activate", { key: "BE-00000-00000-00000-00000-00000", device: device("beta") }, address);
    const within = [];
    for (let i = 0; i < 6; i++) within.push(await attempt(i % 2 ? a : b));
    expect(within.map((x) => x.status)).toEqual([403, 403, 403, 403, 403, 403]);
    for (const s of [a, b]) {
      const over = await attempt(s);
      expect(over.status).toBe(429);
      expect(over.body.error).toBe("rate_limited");
      expect(Number(over.retryAfter)).toBeGreaterThan(0);
    }
    // another address is not affected
    expect((await post(a, "/licenses/activate", { key: "BE-00000-00000-00000-00000-00000", device: device("beta") }, freshAddress() + "1")).status).not.toBe(
      429,
    );
    for (const s of [a, b])
      expect(await (await fetch(`${s.url}/api/v1/health`)).json()).toEqual({ ok: true, status: "ok", rateLimits: "shared", licensing: "on" });
  });

  test("Redis stopped in the middle: requests keep being answered, with per-process limits said in health", async () => {
    // A port the system says is free: a random one could be any process's own (the ephemeral range).
    const port = await freePort();
    let redis: Subprocess | null = await privateRedis(port);
    const c = await serve([...common, "--rate-limit-store", `redis://127.0.0.1:${port}`]);
    try {
      const health = async () => (await (await fetch(`${c.url}/api/v1/health`)).json()) as Record<string, unknown>;
      expect(await health()).toEqual({ ok: true, status: "ok", rateLimits: "shared", licensing: "on" });
      redis.kill("SIGKILL");
      await redis.exited;
      redis = null;
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await fetch(`${c.url}/api/v1/meta`, { headers: { "x-forwarded-for": freshAddress() } });
        statuses.push(r.status);
      }
      expect(statuses.every((s) => s === 200)).toBe(true);
      expect(await health()).toEqual({ ok: true, status: "ok", rateLimits: "per-process (shared store unreachable)", licensing: "on" });
      // limits still hold, per process
      const address = freshAddress();
      const sign = [];
      for (let i = 0; i < 7; i++)
        sign.push((await post(c, "/licenses/activate", { key: "BE-00000-00000-00000-00000-00000", device: device("beta") }, address)).status);
      expect(sign).toEqual([403, 403, 403, 403, 403, 403, 429]);
    } finally {
      redis?.kill("SIGKILL");
      await c.stop();
    }
  }, 20_000);
});
