import { RedisClient } from "bun";
import type { RateLimitHit, RateLimitStore } from "./rate-limit";

// INCR and PEXPIRE in one script: Redis runs it atomically, so every process sees one count and a
// key never lives on without its expiry.
const HIT_SCRIPT = "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n";

/**
 * Fixed-window counters in Redis, shared by every keyturn process that names the same server.
 * Each window is its own key (`<prefix><seconds>:<window start>:<key>`), expiring after the window.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly client: RedisClient;
  private connecting: Promise<void> | null = null;

  constructor(
    url: string,
    private readonly prefix = "keyturn:rl:",
    connectionTimeoutMs = 1000,
  ) {
    // No offline queue: while Redis is away a command fails at once instead of waiting, and the
    // caller falls back to its own counters.
    this.client = new RedisClient(url, { enableOfflineQueue: false, connectionTimeout: connectionTimeoutMs, maxRetries: 1 });
  }

  async hit(key: string, windowSeconds: number, now: number): Promise<RateLimitHit> {
    const windowMs = windowSeconds * 1000;
    const start = Math.floor(now / windowMs) * windowMs;
    await this.connected();
    const count = await this.client.send("EVAL", [HIT_SCRIPT, "1", `${this.prefix}${windowSeconds}:${start}:${key}`, String(windowMs)]);
    return { count: Number(count), resetAt: start + windowMs };
  }

  // The client does not reconnect by itself once it gave up; a hit after an outage connects again.
  private async connected(): Promise<void> {
    if (this.client.connected) return;
    this.connecting ??= this.client.connect().finally(() => (this.connecting = null));
    await this.connecting;
  }

  async close(): Promise<void> {
    this.client.close();
  }
}
