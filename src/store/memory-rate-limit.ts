import type { RateLimitHit, RateLimitStore } from "./rate-limit";

/** Default cap on counted keys: far more clients than one VM serves in a window, in bounded memory. */
export const DEFAULT_MAX_KEYS = 100_000;

interface Window {
  count: number;
  resetAt: number;
}

/**
 * Fixed-window counters in this process's memory, bounded whatever addresses appear.
 * The Map keeps insertion order and a key is re-inserted when its new window starts, so the
 * oldest windows sit at the front: expired ones are swept from there as new keys arrive, and
 * when the cap is reached anyway (a flood of fresh addresses inside one window) the oldest tenth
 * is dropped at once, so the sweep costs O(1) per request on average. A dropped key starts
 * counting again from zero: under such a flood some clients get a fresh budget, none is refused
 * wrongly, and memory stays put.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, Window>();
  /** When the front entry's window ends: nothing can be swept before then. */
  private frontResetAt = Infinity;

  constructor(private readonly maxKeys = DEFAULT_MAX_KEYS) {
    if (!(maxKeys >= 10)) throw new RangeError("maxKeys must be at least 10");
  }

  get size(): number {
    return this.windows.size;
  }

  async hit(key: string, windowSeconds: number, now: number): Promise<RateLimitHit> {
    const current = this.windows.get(key);
    if (current && current.resetAt > now) {
      current.count++;
      return { count: current.count, resetAt: current.resetAt };
    }
    if (current) this.windows.delete(key);
    this.sweepExpired(now);
    if (this.windows.size >= this.maxKeys) this.evictOldest(Math.ceil(this.maxKeys / 10));
    const windowMs = windowSeconds * 1000;
    const fresh = { count: 1, resetAt: (Math.floor(now / windowMs) + 1) * windowMs };
    this.windows.set(key, fresh);
    if (this.windows.size === 1) this.frontResetAt = fresh.resetAt;
    return { count: 1, resetAt: fresh.resetAt };
  }

  async close(): Promise<void> {
    this.windows.clear();
    this.frontResetAt = Infinity;
  }

  // Walking a Map from its front steps over the entries deleted there, so these walk only when
  // there is something to remove, never on every request.
  private sweepExpired(now: number): void {
    if (now < this.frontResetAt) return;
    for (const [key, w] of this.windows) {
      if (w.resetAt > now) break;
      this.windows.delete(key);
    }
    this.noteFront();
  }

  private evictOldest(n: number): void {
    for (const key of this.windows.keys()) {
      if (n-- <= 0) break;
      this.windows.delete(key);
    }
    this.noteFront();
  }

  private noteFront(): void {
    const first = this.windows.values().next();
    this.frontResetAt = first.done ? Infinity : first.value.resetAt;
  }
}
