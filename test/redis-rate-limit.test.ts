import { afterAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { randomBytes } from "node:crypto";
import { createLogger } from "../src/config/log";
import type { RateLimitStore } from "../src/store/rate-limit";
import { MemoryRateLimitStore } from "../src/store/memory-rate-limit";
import { FallbackRateLimitStore, sharedRateLimitStore } from "../src/store/rate-limit-fallback";
import { RedisRateLimitStore } from "../src/store/redis-rate-limit";
import { announceSkip, privateRedis, REDIS_URL } from "./databases";

if (!REDIS_URL) announceSkip("test/redis-rate-limit.test.ts", "KEYTURN_TEST_REDIS_URL");
const REDIS_SERVER = Bun.which("redis-server");
if (REDIS_URL && !REDIS_SERVER) console.log("SKIPPED Redis stop/restart tests: no redis-server binary on PATH");

const T0 = Date.parse("2026-11-21T12:00:00Z");
const prefix = () => `keyturn-test:${process.pid}:${randomBytes(4).toString("hex")}:`;

function recordingLog() {
  const lines: { level: string; msg: string }[] = [];
  return { lines, log: createLogger("json", "debug", (l) => lines.push(JSON.parse(l))) };
}

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

describe.skipIf(!REDIS_URL)("Redis rate-limit store", () => {
  const stores: RateLimitStore[] = [];
  const open = (p: string) => {
    const s = new RedisRateLimitStore(REDIS_URL!, p);
    stores.push(s);
    return s;
  };
  afterAll(async () => {
    for (const s of stores) await s.close();
  });

  test("counts per key in a fixed window keyed by its start, and starts again in the next window", async () => {
    const s = open(prefix());
    const counts = [];
    for (let i = 0; i < 4; i++) counts.push(await s.hit("203.0.113.7", 60, T0 + 1000 + i));
    expect(counts.map((c) => c.count)).toEqual([1, 2, 3, 4]);
    expect(counts.every((c) => c.resetAt === T0 + 60_000)).toBe(true);
    expect(await s.hit("198.51.100.1", 60, T0)).toEqual({ count: 1, resetAt: T0 + 60_000 });
    expect(await s.hit("203.0.113.7", 60, T0 + 60_000)).toEqual({ count: 1, resetAt: T0 + 120_000 });
    expect(await s.hit("203.0.113.7", 10, T0 + 1000)).toEqual({ count: 1, resetAt: T0 + 10_000 });
  });

  test("two processes' clients share one atomic count: 60 concurrent hits number 1..60", async () => {
    const p = prefix();
    const a = open(p);
    const b = open(p);
    const hits = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).hit("shared", 60, T0)));
    expect(hits.map((h) => h.count).sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
  });

  test("every window key expires with its window", async () => {
    const p = prefix();
    await open(p).hit("ttl", 30, T0);
    const raw = new RedisClient(REDIS_URL!);
    try {
      const ttl = Number(await raw.send("PTTL", [`${p}30:${T0}:ttl`]));
      expect(ttl).toBeGreaterThan(25_000);
      expect(ttl).toBeLessThanOrEqual(30_000);
    } finally {
      raw.close();
    }
  });

  test("Redis unreachable from the start: hits are answered by the per-process store, logged once, degraded", async () => {
    const { lines, log } = recordingLog();
    const fallback = new MemoryRateLimitStore();
    const store = sharedRateLimitStore(`redis://127.0.0.1:${await freePort()}`, "https://licenses.example.com/alpha", fallback, log);
    stores.push(store);
    const hits = [];
    for (let i = 0; i < 5; i++) hits.push(await store.hit("k", 60, T0 + i * 2000));
    expect(hits.map((h) => h.count)).toEqual([1, 2, 3, 4, 5]);
    expect(store.degraded).toBe(true);
    expect(lines.filter((l) => l.level === "warn")).toHaveLength(1);
    expect(lines[0]!.msg).toContain("limits are per process");
  });

  test.skipIf(!REDIS_SERVER)("Redis stopped mid-way: hits keep being answered; back to Redis once it answers again", async () => {
    const port = await freePort();
    let server = await privateRedis(port);
    const { lines, log } = recordingLog();
    const fallback = new MemoryRateLimitStore();
    const store = new FallbackRateLimitStore(new RedisRateLimitStore(`redis://127.0.0.1:${port}`, prefix()), fallback, log, { retryMs: 1000 });
    stores.push(store);
    try {
      expect((await store.hit("k", 60, T0)).count).toBe(1);
      expect((await store.hit("k", 60, T0 + 1)).count).toBe(2);

      server.kill();
      await server.exited;
      const during = await Promise.all(Array.from({ length: 20 }, (_, i) => store.hit("k", 60, T0 + 10 + i)));
      expect(during).toHaveLength(20);
      expect(during.every((h) => h.count >= 1 && h.resetAt === T0 + 60_000)).toBe(true);
      expect(store.degraded).toBe(true);
      expect(fallback.size).toBe(1);
      // The process's own count went on from the two it had seen in Redis.
      expect(during.map((h) => h.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 3));
      expect(lines.filter((l) => l.level === "warn")).toHaveLength(1);

      server = await privateRedis(port);
      // Within the retry pause the process keeps its own counts; after it, Redis counts again.
      expect((await store.hit("k", 60, T0 + 500)).count).toBe(23);
      const back = await store.hit("k", 60, T0 + 2000);
      // The restarted Redis (no persistence) starts the window afresh at 1; this process has let 24
      // through in the window, and answers that: an empty Redis gives no client a second budget.
      expect(back.count).toBe(24);
      expect(store.degraded).toBe(false);
      expect(lines.filter((l) => l.level === "info")).toHaveLength(1);
      expect(lines.filter((l) => l.level === "warn")).toHaveLength(1);
    } finally {
      server.kill();
      await server.exited;
    }
  });
});
