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
 *
 * The process counts every request in its own store as well, and a shared answer is taken as at
 * least that count. So however the shared store comes and goes within a window (slow answers that
 * time out here yet count there, an outage, a restart that empties it), one process lets at most
 * `limit` requests of a client through per window, and N processes at most N × limit; with the
 * shared store answering throughout, all of them together let `limit` through.
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
    const own = await this.fallback.hit(key, windowSeconds, now);
    if (this.down && now < this.retryAt) return own;
    try {
      const hit = await withTimeout(this.shared.hit(key, windowSeconds, now), this.timeoutMs);
      if (this.down) {
        this.down = false;
        this.log.info("rate limits: the shared store answers again; limits are shared between processes");
      }
      return hit.count >= own.count ? hit : { count: own.count, resetAt: hit.resetAt };
    } catch (e) {
      if (!this.down) {
        this.down = true;
        this.log.warn("rate limits: the shared store does not answer; limits are per process until it does", { error: String((e as Error)?.message ?? e) });
      }
      this.retryAt = now + this.retryMs;
      return own;
    }
  }

  /** Closes both stores: the wrapper owns them. */
  async close(): Promise<void> {
    await Promise.all([this.shared.close(), this.fallback.close()]);
  }
}

/**
 * `--rate-limit-store redis://…`: Redis counters under the site's own prefix (`siteRateLimitPrefix`),
 * with the process's own `fallback` while Redis is away.
 */
export function sharedRateLimitStore(url: string, site: string, fallback: RateLimitStore, log: Logger, opts: FallbackOptions = {}): FallbackRateLimitStore {
  return new FallbackRateLimitStore(new RedisRateLimitStore(url, siteRateLimitPrefix(site)), fallback, log, opts);
}

/**
 * The Redis key prefix of one site's counters: `keyturn:rl:<site>:`, the site being its public
 * origin and variant (`https://licenses.example.com/alpha`). Every process of a site shares it; two
 * sites on one Redis never count each other's clients.
 */
export function siteRateLimitPrefix(site: string): string {
  return `keyturn:rl:${site}:`;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
