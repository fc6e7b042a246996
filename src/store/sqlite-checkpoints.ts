import type { Database } from "bun:sqlite";
import type { WalProgress } from "./sqlite-wal-index";

/** How long one checkpoint may hold the event loop before the next ones are made smaller. */
export const CHECKPOINT_BUDGET_MS = 2;
/** WAL pages per checkpoint: where the pacing starts, and its bounds. */
export const CHECKPOINT_PAGES = { start: 250, min: 32, max: 800 } as const;
/**
 * SQLite's own checkpoint (its default size), inside the commit that makes the WAL this long: the
 * bound for writes that do not go through the group commit, which the pacing does not see.
 */
export const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

export interface CheckpointPacingDeps {
  /** How far the WAL is ahead of the database file (sqlite-wal-index.ts). */
  readonly progress: () => WalProgress;
  /** Copies what it can of the WAL into the database file and syncs it; false when it could not start now. */
  readonly checkpoint: () => boolean;
  /** A monotonic clock in milliseconds (performance.now; tests move their own). */
  readonly now?: () => number;
  /** Runs the checkpoint once the commit's answers are on their way (setImmediate; tests run it when they choose). */
  readonly later?: (run: () => void) => void;
}

/**
 * Paces the copying of the WAL back into the database file (the checkpoint) by what each one costs
 * on this disk. A checkpoint writes the pages the WAL holds at their places in the file and syncs
 * it, on the event loop: every request waits meanwhile. What a page costs depends on where it goes:
 * a small set of records rewrites the same few pages (about 220 pages in 2 ms on the bench's disk),
 * a million licences scatter them over the file (250 pages took 7-9 ms, and were activate's p99;
 * bench/README.md, "4a and 5a, seventh round"). So the size adapts: the next checkpoint waits for
 * as many pages as would have taken CHECKPOINT_BUDGET_MS at the last one's cost, within
 * CHECKPOINT_PAGES. A fixed small size would not do: each checkpoint's two syncs are a fixed cost,
 * and a fifth of the size cost small records a fifth of their activations a second. Nor would few
 * large ones: every request in flight waits for the whole checkpoint, and a client that keeps its
 * pace meets a stall in proportion to its length (checkpoints of 10,000 pages took 113 ms each and
 * made activate's p99 82 ms; bench/README.md, "4a and 5a, seventeenth round").
 *
 * The checkpoint runs after the commit whose WAL reached the size, in a turn of its own, so the
 * requests of that commit are answered first (SQLite's own would run inside the commit, before any
 * of them). It is PASSIVE: it never waits for another connection's readers or writers.
 */
export class CheckpointPacing {
  private pages: number = CHECKPOINT_PAGES.start;
  private scheduled = false;
  private closed = false;
  /** The WAL's frame count when the last checkpoint could not copy everything (readers held it): wait for as many new frames again. */
  private heldAt = 0;
  /** The salt of the WAL that heldAt counts in: a WAL started again has another. */
  private heldSalt = -1;
  private readonly now: () => number;
  private readonly later: (run: () => void) => void;

  constructor(private readonly deps: CheckpointPacingDeps) {
    this.now = deps.now ?? (() => performance.now());
    this.later = deps.later ?? ((run) => setImmediate(run));
  }

  /** WAL pages the next checkpoint waits for. */
  get pagesPerCheckpoint(): number {
    return this.pages;
  }

  /** Called after each commit: schedules a checkpoint once the WAL holds the pages it waits for. */
  committed(): void {
    if (this.scheduled || this.closed) return;
    const { frames, backfilled, salt } = this.deps.progress();
    // A WAL started again from its beginning (after a checkpoint that copied everything) drops the wait.
    if (salt !== this.heldSalt) this.heldAt = 0;
    if (frames - Math.max(backfilled, this.heldAt) < this.pages) return;
    this.scheduled = true;
    this.later(() => this.run());
  }

  private run(): void {
    this.scheduled = false;
    if (this.closed) return;
    let before: WalProgress;
    let after: WalProgress;
    let took: number;
    try {
      before = this.deps.progress();
      const started = this.now();
      // Not now (the connection is inside a transaction): a later commit asks again.
      if (!this.deps.checkpoint()) return;
      took = this.now() - started;
      after = this.deps.progress();
    } catch {
      // As with SQLite's own checkpoint, a failed one is left to a later commit: a disk that fails
      // fails that commit too, and it is reported to its writer.
      return;
    }
    this.heldAt = after.backfilled < after.frames ? after.frames : 0;
    this.heldSalt = after.salt;
    // What this checkpoint copied (none: readers or another process held the WAL; its time says nothing).
    const copied = after.salt === before.salt ? after.backfilled - before.backfilled : 0;
    if (copied <= 0) return;
    // The next size in proportion to what this one's pages cost (its sync is a fixed part, so the
    // sizes settle where a checkpoint takes the budget), by at most half or double in one step.
    const proportional = Math.round((copied * CHECKPOINT_BUDGET_MS) / Math.max(took, 0.01));
    const stepped = Math.min(this.pages * 2, Math.max(Math.ceil(this.pages / 2), proportional));
    this.pages = Math.min(CHECKPOINT_PAGES.max, Math.max(CHECKPOINT_PAGES.min, stepped));
  }

  /** No checkpoint is started from here on (the connection is closing; its close checkpoints). */
  close(): void {
    this.closed = true;
  }
}

/**
 * The checkpoint as the pacing runs it: PASSIVE, on the store's own connection, never inside one of
 * its transactions (SQLite refuses it there: a copy holds one across awaits); finalized before the
 * connection closes.
 */
export function passiveCheckpoint(db: Database): { readonly run: () => boolean; readonly finalize: () => void } {
  const statement = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  return {
    run: () => {
      if (db.inTransaction) return false;
      statement.get();
      return true;
    },
    finalize: () => statement.finalize(),
  };
}
