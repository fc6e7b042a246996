import type { Logger } from "../../config/log";
import type { AttemptOutcome, ClaimedDelivery, Store } from "../../store/types";
import { isoTime, type Clock } from "../clock";
import { envelope } from "../events";
import { newId, randomBase32 } from "../ids";
import type { RecordSeal } from "../record-seal";
import { NO_EXCEPTIONS, type DestinationPolicy } from "./destination";
import { send, systemResolve, type SendOptions } from "./send";
import { signedHeaders, webhookSecretContext } from "./signing";

/**
 * The wait after each failed attempt: the first attempt is made as soon as the worker sees the
 * event, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h later (about 28 h in all), then failed.
 */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
export const ATTEMPT_TIMEOUT_MS = 10_000;
const FAN_OUT_BATCH = 500;
const FAN_OUT_ROUNDS = 20;

export interface WebhookWorkerOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  /** Per attempt (resolving the name included); 10 s unless a test shortens it. */
  readonly timeoutMs?: number;
  /**
   * How long a claimed delivery is this worker's alone: longer than an attempt can take (the
   * timeout and 5 s to record it). A worker that dies holding leases delays those deliveries by
   * at most this long; then another worker (or the restarted one) takes them.
   */
  readonly leaseMs?: number;
  /** Attempts in flight at once over all endpoints (64); an endpoint has at most one. */
  readonly concurrency?: number;
  /** How often start() looks for new events and due deliveries. */
  readonly everyMs?: number;
  /** Where deliveries may go (`--webhook-allow-hosts`); public hosts only when absent. */
  readonly destinations?: DestinationPolicy;
  readonly fetch?: typeof fetch;
  readonly resolve?: (host: string) => Promise<string[]>;
  /** Certificate authorities trusted besides the system's (PEM); for tests with their own. */
  readonly ca?: string;
  /** Opens the endpoints' sealed secrets. */
  readonly seal?: RecordSeal;
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
 * Delivers the outbox's events to webhook endpoints: new events are fanned out into deliveries, due
 * deliveries leased and attempted. Attempts run side by side up to `concurrency`, at most one per
 * endpoint (the store leases one delivery of an endpoint at a time), and each finished attempt frees
 * its slot for the next due delivery at once: a slow or dead receiver holds one slot for at most the
 * timeout and never delays another endpoint. Several workers (processes) may share the records: a
 * delivery is leased to one at a time, and an attempt is recorded only under its lease.
 */
export class WebhookWorker {
  /** This worker's name on its leases. */
  readonly owner = `wkr_${randomBase32(16).toLowerCase()}`;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly send: SendOptions;
  private readonly inFlight = new Set<Promise<void>>();
  private attempted = 0;
  private filling: Promise<void> | null = null;
  private fillAgain = false;
  private fanning: Promise<number> | null = null;
  private stopped = false;
  private interval: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly o: WebhookWorkerOptions) {
    this.timeoutMs = o.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
    this.leaseMs = o.leaseMs ?? this.timeoutMs + 5_000;
    this.concurrency = o.concurrency ?? 64;
    this.send = {
      destinations: o.destinations ?? NO_EXCEPTIONS,
      timeoutMs: this.timeoutMs,
      fetch: o.fetch ?? fetch,
      resolve: o.resolve ?? systemResolve,
      ...(o.ca ? { ca: o.ca } : {}),
    };
  }

  /**
   * Fans out, then attempts every due delivery, waiting for them all (and for those that become
   * due to an endpoint as its earlier one finishes). For tests and one-shot use; start() does not wait.
   */
  async tick(): Promise<TickResult> {
    this.stopped = false;
    const before = this.attempted;
    const fannedOut = await this.fanOut();
    await this.fill();
    while (this.inFlight.size > 0) {
      await Promise.race(this.inFlight);
      await this.fill();
    }
    return { fannedOut, attempted: this.attempted - before };
  }

  /** Every `everyMs` (1 s by default) until stop(): fans out and fills free slots; failures are logged and retried. */
  start(): void {
    if (this.interval) return;
    this.stopped = false;
    this.interval = setInterval(() => {
      this.fanOut()
        .then(() => this.fill())
        .catch((e: unknown) => this.o.log.warn("webhook delivery round failed; will try again", { error: String(e) }));
    }, this.o.everyMs ?? 1_000);
    this.interval.unref();
  }

  /** Stops taking work and waits for the attempts in flight (recorded before the store closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
    await this.filling?.catch(() => undefined);
    await Promise.allSettled([...this.inFlight]);
  }

  /** Up to FAN_OUT_BATCH events a transaction, until caught up (bounded, so a call always ends). */
  private fanOut(): Promise<number> {
    this.fanning ??= (async () => {
      const { store, clock } = this.o;
      let fannedOut = 0;
      for (let i = 0; i < FAN_OUT_ROUNDS; i++) {
        const n = await store.fanOutEvents(clock(), FAN_OUT_BATCH, () => newId("dlv", clock()));
        fannedOut += n;
        if (n < FAN_OUT_BATCH) break;
      }
      return fannedOut;
    })().finally(() => {
      this.fanning = null;
    });
    return this.fanning;
  }

  /** Claims due deliveries into the free slots and starts them. One claim loop at a time; a call during it makes it run once more. */
  private fill(): Promise<void> {
    if (this.filling) {
      this.fillAgain = true;
      return this.filling;
    }
    this.filling = (async () => {
      do {
        this.fillAgain = false;
        while (!this.stopped) {
          const free = this.concurrency - this.inFlight.size;
          if (free <= 0) break;
          const now = this.o.clock();
          const claimed = await this.o.store.claimDeliveries(now, now + this.leaseMs, this.owner, free);
          for (const c of claimed) this.launch(c);
          if (claimed.length < free) break;
        }
      } while (this.fillAgain);
    })().finally(() => {
      this.filling = null;
    });
    return this.filling;
  }

  private launch(c: ClaimedDelivery): void {
    const running: Promise<void> = this.attempt(c)
      .catch((e: unknown) =>
        this.o.log.warn("webhook attempt could not be recorded; the lease will run out and it is tried again", { delivery: c.delivery.id, error: String(e) }),
      )
      .finally(() => {
        this.inFlight.delete(running);
        this.attempted++;
        if (!this.stopped) this.fill().catch((e: unknown) => this.o.log.warn("webhook delivery round failed; will try again", { error: String(e) }));
      });
    this.inFlight.add(running);
  }

  private async attempt(c: ClaimedDelivery): Promise<void> {
    const { clock, store, log } = this.o;
    const time = clock();
    const body = envelope(c.event);
    const secret = this.o.seal ? await this.o.seal.open(c.endpoint.secret, webhookSecretContext(c.endpoint.id)) : c.endpoint.secret;
    const headers = signedHeaders(secret, c.event.id, Math.floor(time / 1000), body);
    const started = performance.now();
    const { statusCode, error } = await send(c.endpoint.url, headers, body, this.send);
    const durationMs = Math.round(performance.now() - started);
    const outcome = outcomeOf(statusCode, c.delivery.attempts, clock());
    const recorded = await store.recordAttempt(
      { deliveryId: c.delivery.id, attempt: c.delivery.attempts + 1, time, durationMs, statusCode, error },
      c.leaseOwner,
      outcome,
    );
    if (!recorded) log.warn("webhook attempt made after its lease ran out; not recorded", { delivery: c.delivery.id });
    if (outcome.status === "failed")
      log.warn("webhook delivery failed", {
        delivery: c.delivery.id,
        endpoint: c.endpoint.id,
        ...(outcome.disableEndpoint ? { endpointDisabled: outcome.disableEndpoint } : {}),
      });
  }
}
