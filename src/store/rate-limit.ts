/**
 * Where rate-limit counters live: per-process memory by default, Redis when several processes
 * share one budget (--rate-limit-store). A fixed window per key.
 */
export interface RateLimitHit {
  /** Requests counted in the current window, this one included. */
  readonly count: number;
  /** When the current window ends (ms since the epoch). */
  readonly resetAt: number;
}

export interface RateLimitStore {
  /** Counts one request for `key` in the window of `windowSeconds` that contains `now`. */
  hit(key: string, windowSeconds: number, now: number): Promise<RateLimitHit>;
  close(): Promise<void>;
}
