import type { Database } from "bun:sqlite";
import type { WalProgress } from "./sqlite-wal-index";

/** How long one checkpoint may hold the event loop before the next ones are made smaller. */
export const CHECKPOINT_BUDGET_MS = 2;
/** WAL pages per checkpoint: where the pacing starts, and its bounds. */
export const CHECKPOINT_PAGES = { start: 250, min: 32, max: 1000 } as const;
/**
 * SQLite's own checkpoint, inside the commit that makes the WAL this long: only a bound, for writes
 * that do not go through the group commit (the pacing checkpoints long before).
 */
export const SQLITE_AUTOCHECKPOINT_PAGES = 2 * CHECKPOINT_PAGES.max;

export interface CheckpointPacingDeps {
  /** How far the WAL is ahead of the database file (sqlite-wal-index.ts). */
  readonly progress: () => WalProgress;
  /** Copies what it can of the WAL into the database file and syncs it. */
  readonly checkpoint: () => void;
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
 * and a fifth of the size cost small records a fifth of their activations a second.
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
    const { frames, backfilled } = this.deps.progress();
    // A WAL started again from its beginning (after a checkpoint that copied everything) drops the wait.
    if (frames < this.heldAt) this.heldAt = 0;
    if (frames - Math.max(backfilled, this.heldAt) < this.pages) return;
    this.scheduled = true;
    this.later(() => this.run());
  }

  private run(): void {
    this.scheduled = false;
    if (this.closed) return;
    const started = this.now();
    this.deps.checkpoint();
    const took = this.now() - started;
    const { frames, backfilled } = this.deps.progress();
    this.heldAt = backfilled < frames ? frames : 0;
    // The next size in proportion to what this one's pages cost (its sync is a fixed part, so the
    // sizes settle where a checkpoint takes the budget), by at most half or double in one step.
    const proportional = Math.round((this.pages * CHECKPOINT_BUDGET_MS) / Math.max(took, 0.01));
    const stepped = Math.min(this.pages * 2, Math.max(Math.ceil(this.pages / 2), proportional));
    this.pages = Math.min(CHECKPOINT_PAGES.max, Math.max(CHECKPOINT_PAGES.min, stepped));
  }

  /** No checkpoint is started from here on (the connection is closing; its close checkpoints). */
  close(): void {
    this.closed = true;
  }
}

/** The checkpoint as the pacing runs it: PASSIVE, on the store's own connection; finalized before the connection closes. */
export function passiveCheckpoint(db: Database): { readonly run: () => void; readonly finalize: () => void } {
  const statement = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  return { run: () => void statement.get(), finalize: () => statement.finalize() };
}
