import type { Logger } from "../../config/log";
import type { AttemptOutcome, ClaimedDelivery, Store } from "../../store/types";
import { isoTime, type Clock } from "../clock";
import { envelope } from "../events";
import { newId, randomBase32 } from "../ids";
import { signedHeaders } from "./signing";

/**
 * The wait after each failed attempt: the first attempt is made as soon as the worker sees the
 * event, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h later (about 28 h in all), then failed.
 */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
export const ATTEMPT_TIMEOUT_MS = 10_000;
const ERROR_TEXT_MAX = 500;
const FAN_OUT_BATCH = 500;
const FAN_OUT_ROUNDS = 20;

export interface WebhookWorkerOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  /** Per attempt; 10 s unless a test shortens it. */
  readonly timeoutMs?: number;
  /**
   * How long a claimed delivery is this worker's alone: longer than an attempt can take (the
   * timeout and 5 s to record it). A worker that dies holding leases delays those deliveries by
   * at most this long; then another worker (or the restarted one) takes them.
   */
  readonly leaseMs?: number;
  /** Deliveries attempted at once per tick. */
  readonly batch?: number;
  /** How often start() ticks. */
  readonly everyMs?: number;
  readonly fetch?: typeof fetch;
}

export interface TickResult {
  readonly fannedOut: number;
  readonly attempted: number;
}

/** What an attempt's answer (or failure) makes of the delivery, given the attempts made before it. */
export function outcomeOf(statusCode: number | null, attemptsBefore: number, now: number): AttemptOutcome {
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { status: "delivered" };
  // 410 Gone is the receiver saying the endpoint is no more: stop sending to it at all.
  if (statusCode === 410) return { status: "failed", disableEndpoint: `the receiver answered 410 Gone at ${isoTime(now)}` };
  const delay = RETRY_DELAYS_MS[attemptsBefore];
  return delay === undefined ? { status: "failed" } : { status: "pending", nextAttempt: now + delay };
}

/**
 * Delivers the outbox's events to webhook endpoints: each tick fans new events out into deliveries,
 * then leases the due ones and attempts them. Several workers (processes) may share the records:
 * a delivery is leased to one at a time, and an attempt is recorded only under its lease.
 */
export class WebhookWorker {
  /** This worker's name on its leases. */
  readonly owner = `wkr_${randomBase32(16).toLowerCase()}`;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly batch: number;
  private readonly fetch: typeof fetch;
  private running: Promise<TickResult> | null = null;
  private interval: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly o: WebhookWorkerOptions) {
    this.timeoutMs = o.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
    this.leaseMs = o.leaseMs ?? this.timeoutMs + 5_000;
    this.batch = o.batch ?? 16;
    this.fetch = o.fetch ?? fetch;
  }

  /** One round: fan out, then attempt every due delivery claimed. Overlapping calls share one round. */
  tick(): Promise<TickResult> {
    this.running ??= this.round().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Ticks every `everyMs` (1 s by default) until stop(); a failing tick is logged and retried. */
  start(): void {
    if (this.interval) return;
    this.interval = setInterval(() => {
      this.tick().catch((e: unknown) => this.o.log.warn("webhook delivery round failed; will try again", { error: String(e) }));
    }, this.o.everyMs ?? 1_000);
    this.interval.unref();
  }

  /** Stops ticking and waits for the round in flight (its attempts are recorded before the store closes). */
  async stop(): Promise<void> {
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
    await this.running?.catch(() => undefined);
  }

  private async round(): Promise<TickResult> {
    const { store, clock } = this.o;
    // Up to FAN_OUT_BATCH events a transaction, until caught up (bounded, so a tick always ends).
    let fannedOut = 0;
    for (let i = 0; i < FAN_OUT_ROUNDS; i++) {
      const n = await store.fanOutEvents(clock(), FAN_OUT_BATCH, () => newId("dlv", clock()));
      fannedOut += n;
      if (n < FAN_OUT_BATCH) break;
    }
    let attempted = 0;
    for (;;) {
      const now = clock();
      const claimed = await store.claimDeliveries(now, now + this.leaseMs, this.owner, this.batch);
      if (claimed.length === 0) break;
      await Promise.all(claimed.map((c) => this.attempt(c)));
      attempted += claimed.length;
      if (claimed.length < this.batch) break;
    }
    return { fannedOut, attempted };
  }

  private async attempt(c: ClaimedDelivery): Promise<void> {
    const { clock, store, log } = this.o;
    const time = clock();
    const body = envelope(c.event);
    const headers = signedHeaders(c.endpoint.secret, c.event.id, Math.floor(time / 1000), body);
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const answer = await this.fetch(c.endpoint.url, {
        method: "POST",
        headers,
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      statusCode = answer.status;
      await answer.body?.cancel().catch(() => undefined);
      if (statusCode < 200 || statusCode >= 300) error = `answered ${statusCode}`;
    } catch (e) {
      const name = (e as Error).name;
      error = name === "TimeoutError" || name === "AbortError" ? `no answer within ${this.timeoutMs} ms` : String((e as Error).message ?? e);
    }
    const durationMs = Math.round(performance.now() - started);
    const outcome = outcomeOf(statusCode, c.delivery.attempts, clock());
    const recorded = await store.recordAttempt(
      { deliveryId: c.delivery.id, attempt: c.delivery.attempts + 1, time, durationMs, statusCode, error: error?.slice(0, ERROR_TEXT_MAX) ?? null },
      c.leaseOwner,
      outcome,
    );
    if (!recorded) log.warn("webhook attempt made after its lease ran out; not recorded", { delivery: c.delivery.id });
    if (outcome.status === "failed")
      log.warn("webhook delivery failed", { delivery: c.delivery.id, endpoint: c.endpoint.id, ...(outcome.disableEndpoint ? { endpointDisabled: outcome.disableEndpoint } : {}) });
  }
}
