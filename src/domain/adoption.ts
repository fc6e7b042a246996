import type { Logger } from "../config/log";
import type { Sighting, Store } from "../store/types";
import type { Clock } from "./clock";

/** How often sightings are written (and how stale `lastSeen` may be in the records). */
export const SIGHTINGS_FLUSH_MS = 30_000;
/** Sightings held before a flush is started early, so memory stays bounded under any load. */
const MAX_PENDING = 50_000;

/**
 * Adoption: when each installation was last seen and which lane it reads, without a write per
 * request. Sightings (update manifest reads, entitlements/current) are coalesced in memory per
 * activation and written in one transaction every SIGHTINGS_FLUSH_MS and at close. Activate and
 * refresh write the version and last-seen time themselves, in the same write as their seat.
 */
export class AdoptionRecorder {
  private pending = new Map<string, { lastSeen: number; lane: string | null }>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly flushMs = SIGHTINGS_FLUSH_MS,
  ) {}

  /** Writes pending sightings every flushMs (the timer does not keep the process alive). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref?.();
  }

  /** An installation (its activation) was seen; `lane` is the lane whose manifest it read, null when not known. */
  seen(activationId: string, lane: string | null): void {
    const now = this.clock();
    const known = this.pending.get(activationId);
    if (known) {
      known.lastSeen = Math.max(known.lastSeen, now);
      if (lane !== null) known.lane = lane;
    } else this.pending.set(activationId, { lastSeen: now, lane });
    if (this.pending.size >= MAX_PENDING) void this.flush();
  }

  /** Writes what is pending in one transaction; a failed write is logged and its sightings kept for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      const sightings: Sighting[] = [...batch].map(([activationId, s]) => ({ activationId, lastSeen: s.lastSeen, lane: s.lane }));
      try {
        await this.store.recordSightings(sightings);
      } catch (e) {
        this.log.warn("installation sightings not written; kept for the next try", { count: sightings.length, error: String((e as Error)?.message ?? e) });
        for (const [id, s] of batch) if (!this.pending.has(id)) this.pending.set(id, s);
      }
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is pending (at shutdown, before the records close). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}
