import type { Logger } from "../config/log";
import type { Rate } from "../config/parse";
import type { Clock } from "../domain/clock";
import type { RateLimitStore } from "../store/rate-limit";
import type { Budget } from "./endpoint";

export interface RateDecision {
  readonly limited: boolean;
  /** RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers), plus Retry-After when limited. */
  readonly headers: Record<string, string>;
  /** Whole seconds until the window ends (at least 1). */
  readonly retryAfter: number;
}

/** Store failures are logged at most this often, so a Redis outage does not flood the log. */
const FAILURE_LOG_INTERVAL_MS = 60_000;

/**
 * Counts each request against its client's budget. `group` is the client as counted (an IPv4
 * address or an IPv6 /64). When the counter store fails, requests pass (a limiter outage must not
 * take the site down) and the failure is logged.
 */
export class RateLimiter {
  private lastFailureLog = -Infinity;

  constructor(
    private readonly store: RateLimitStore,
    private readonly budgets: Readonly<Record<Budget, Rate>>,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  async check(budget: Budget, group: string): Promise<RateDecision | null> {
    const rate = this.budgets[budget];
    const now = this.clock();
    let hit;
    try {
      hit = await this.store.hit(`${budget}|${group}`, rate.windowSeconds, now);
    } catch (e) {
      if (now - this.lastFailureLog >= FAILURE_LOG_INTERVAL_MS) {
        this.lastFailureLog = now;
        this.log.error("rate limit store failed; requests pass unlimited", { error: String((e as Error)?.message ?? e) });
      }
      return null;
    }
    const retryAfter = Math.max(1, Math.ceil((hit.resetAt - now) / 1000));
    const limited = hit.count > rate.limit;
    // The remaining count as toFixed's text, not a template's: JavaScriptCore keeps the last numbers
    // it turned into text in a VM-wide cache, so under load nearly every request's count was still
    // held there at the next young collection and stayed in the old generation until a whole one
    // (bench/README.md, "4a and 5a, eleventh round").
    const remaining = Math.max(0, rate.limit - hit.count).toFixed(0);
    const headers: Record<string, string> = {
      "ratelimit-policy": `"${budget}";q=${rate.limit};w=${rate.windowSeconds}`,
      ratelimit: `"${budget}";r=${remaining};t=${retryAfter}`,
    };
    if (limited) headers["retry-after"] = String(retryAfter);
    return { limited, headers, retryAfter };
  }
}
