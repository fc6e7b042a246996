import type { Logger } from "../config/log";
import type { Store } from "../store/types";
import type { Clock } from "./clock";
import { IDEMPOTENCY_WINDOW_MS } from "./admin/licenses";
import { challengesPrunableBefore } from "./identity/challenges";

export interface Pruned {
  readonly audit: number;
  readonly challenges: number;
  /** Idempotency-Key answers past their 24 h (they hold license keys, so they are not kept longer). */
  readonly idempotency: number;
  /** Outbox events (and finished webhook deliveries) older than the audit retention. */
  readonly events: number;
  readonly deliveries: number;
  /** Console and portal sessions and pending sign-ins, once expired (revoked ones expire too). */
  readonly sessions: number;
}

/**
 * Deletes audit lines, outbox events and finished webhook deliveries older than the retention,
 * staff challenges a day past their expiry, idempotency answers past their 24 h, and expired
 * console and portal sessions.
 */
export async function pruneRecords(store: Store, clock: Clock, auditRetentionSeconds: number): Promise<Pruned> {
  const now = clock();
  const audit = await store.pruneAudit(now - auditRetentionSeconds * 1000);
  const challenges = await store.pruneChallenges(challengesPrunableBefore(now));
  const idempotency = await store.pruneIdempotency(now - IDEMPOTENCY_WINDOW_MS);
  const { events, deliveries } = await store.pruneEvents(now - auditRetentionSeconds * 1000);
  const sessions = await store.pruneConsoleSessions(now);
  return { audit, challenges, idempotency, events, deliveries, sessions };
}

/** The part of the timer API the schedule uses; tests pass their own to run ticks by hand. */
export interface Timers {
  setInterval(tick: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const realTimers: Timers = {
  setInterval(tick, ms) {
    const handle = setInterval(tick, ms);
    // The schedule alone must never keep a process alive.
    handle.unref();
    return handle;
  },
  clearInterval: (handle) => clearInterval(handle as ReturnType<typeof setInterval>),
};

export interface RetentionOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  readonly auditRetentionSeconds: number;
  /** How often to prune; hourly by default, so the audit table never holds much more than its retention. */
  readonly everyMs?: number;
  readonly timers?: Timers;
}

export interface RetentionSchedule {
  /** Prunes now (also what every tick does); a failure is logged, never thrown. */
  run(): Promise<Pruned | null>;
  stop(): void;
}

/** Prunes once at start, then every `everyMs`. Overlapping ticks are skipped, not queued. */
export function startRetention(options: RetentionOptions): RetentionSchedule {
  const timers = options.timers ?? realTimers;
  let running: Promise<Pruned | null> | null = null;
  let stopped = false;
  const run = () => {
    if (stopped) return Promise.resolve(null);
    running ??= pruneRecords(options.store, options.clock, options.auditRetentionSeconds)
      .then((pruned) => {
        if (Object.values(pruned).some((n) => n > 0)) options.log.info("pruned old records", { ...pruned });
        return pruned;
      })
      .catch((e: unknown) => {
        options.log.warn("pruning old records failed; will try again", { error: String(e) });
        return null;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const handle = timers.setInterval(() => void run(), options.everyMs ?? 3_600_000);
  void run();
  return {
    run,
    stop() {
      stopped = true;
      timers.clearInterval(handle);
    },
  };
}
