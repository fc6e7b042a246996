import type { Logger } from "../config/log";
import type { RateLimitHit, RateLimitStore } from "./rate-limit";
import { RedisRateLimitStore } from "./redis-rate-limit";

export interface FallbackOptions {
  /** A shared-store answer slower than this counts as a failure. */
  readonly timeoutMs?: number;
  /** After a failure, the shared store is asked again only once this much (clock) time has passed. */
  readonly retryMs?: number;
}

/**
 * Counts in the shared store, and in the per-process `fallback` while the shared one fails: limits
 * keep being enforced per process instead of every request failing. Each switch is logged once, and
 * `degraded` says which one is in use (for health details).
 */
export class FallbackRateLimitStore implements RateLimitStore {
  private down = false;
  private retryAt = 0;
  private readonly timeoutMs: number;
  private readonly retryMs: number;

  constructor(
    private readonly shared: RateLimitStore,
    private readonly fallback: RateLimitStore,
    private readonly log: Logger,
    opts: FallbackOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 250;
    this.retryMs = opts.retryMs ?? 1000;
  }

  /** True while limits are per process because the shared store does not answer. */
  get degraded(): boolean {
    return this.down;
  }

  async hit(key: string, windowSeconds: number, now: number): Promise<RateLimitHit> {
    if (this.down && now < this.retryAt) return this.fallback.hit(key, windowSeconds, now);
    try {
      const hit = await withTimeout(this.shared.hit(key, windowSeconds, now), this.timeoutMs);
      if (this.down) {
        this.down = false;
        this.log.info("rate limits: the shared store answers again; limits are shared between processes");
      }
      return hit;
    } catch (e) {
      if (!this.down) {
        this.down = true;
        this.log.warn("rate limits: the shared store does not answer; limits are per process until it does", { error: String((e as Error)?.message ?? e) });
      }
      this.retryAt = now + this.retryMs;
      return this.fallback.hit(key, windowSeconds, now);
    }
  }

  /** Closes both stores: the wrapper owns them. */
  async close(): Promise<void> {
    await Promise.all([this.shared.close(), this.fallback.close()]);
  }
}

/** `--rate-limit-store redis://…`: Redis counters, with the process's own `fallback` while Redis is away. */
export function sharedRateLimitStore(url: string, fallback: RateLimitStore, log: Logger, opts: FallbackOptions = {}): FallbackRateLimitStore {
  return new FallbackRateLimitStore(new RedisRateLimitStore(url), fallback, log, opts);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
