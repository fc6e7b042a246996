import { describe, expect, test } from "bun:test";
import { MemoryRateLimitStore } from "../../src/store/memory-rate-limit";

const T0 = Date.parse("2026-11-21T12:00:00Z");

describe("memory rate-limit store", () => {
  test("counts per key within a fixed window, and starts again in the next", async () => {
    const store = new MemoryRateLimitStore();
    expect(await store.hit("a", 60, T0)).toEqual({ count: 1, resetAt: T0 + 60_000 });
    expect(await store.hit("a", 60, T0 + 59_999)).toEqual({ count: 2, resetAt: T0 + 60_000 });
    expect((await store.hit("b", 60, T0 + 1)).count).toBe(1);
    expect(await store.hit("a", 60, T0 + 60_000)).toEqual({ count: 1, resetAt: T0 + 120_000 });
  });

  test("windows are aligned to their length, as the Redis store's are", async () => {
    const store = new MemoryRateLimitStore();
    expect((await store.hit("a", 60, T0 + 25_000)).resetAt).toBe(T0 + 60_000);
    expect((await store.hit("b", 3600, T0 + 25_000)).resetAt).toBe(T0 + 3_600_000);
  });

  test("expired windows are swept as new keys arrive", async () => {
    const store = new MemoryRateLimitStore();
    for (let i = 0; i < 1000; i++) await store.hit(`old-${i}`, 60, T0);
    expect(store.size).toBe(1000);
    await store.hit("new", 60, T0 + 60_000);
    expect(store.size).toBe(1);
  });

  test("a flood of fresh keys inside one window never grows it past its cap", async () => {
    const store = new MemoryRateLimitStore(1000);
    let max = 0;
    for (let i = 0; i < 50_000; i++) {
      await store.hit(`flood-${Math.random()}`, 60, T0 + i);
      max = Math.max(max, store.size);
    }
    expect(max).toBeLessThanOrEqual(1000);
  });

  test("below the cap, other keys never disturb a key's count", async () => {
    const store = new MemoryRateLimitStore(100);
    await store.hit("steady", 60, T0);
    for (let i = 0; i < 90; i++) await store.hit(`other-${i}`, 60, T0);
    expect((await store.hit("steady", 60, T0)).count).toBe(2);
  });

  test("close forgets every counter", async () => {
    const store = new MemoryRateLimitStore();
    await store.hit("a", 60, T0);
    await store.close();
    expect(store.size).toBe(0);
  });
});
