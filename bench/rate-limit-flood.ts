/**
 * `bun bench/rate-limit-flood.ts`: a flood of random source addresses against the in-memory
 * rate-limit store at its default cap. Prints hits per second, the key count and heap growth.
 */
import { DEFAULT_MAX_KEYS, MemoryRateLimitStore } from "../src/store/memory-rate-limit";

const HITS = 2_000_000;
const store = new MemoryRateLimitStore();
Bun.gc(true);
const heapBefore = process.memoryUsage().heapUsed;
const now = Date.now();
const started = performance.now();
for (let i = 0; i < HITS; i++) {
  const a = (Math.random() * 2 ** 32) >>> 0;
  await store.hit(`api|${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`, 60, now);
}
const seconds = (performance.now() - started) / 1000;
Bun.gc(true);
const heapAfter = process.memoryUsage().heapUsed;
console.log(
  JSON.stringify({
    hits: HITS,
    hitsPerSecond: Math.round(HITS / seconds),
    keys: store.size,
    cap: DEFAULT_MAX_KEYS,
    heapGrowthMB: Math.round((heapAfter - heapBefore) / 1e5) / 10,
  }),
);
