import type { Database } from "bun:sqlite";

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

interface Pending {
  readonly write: () => unknown;
  readonly resolve: (value: any) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: the writes of concurrent requests that arrive within one event-loop turn are
 * applied in ONE `BEGIN IMMEDIATE` transaction. Should one of them fail, the transaction is rolled
 * back and applied again with each write in its own savepoint, so one failing write does not fail
 * the others (a write is its synchronous statements alone, so applying it twice is safe). Every
 * caller's promise settles only after the COMMIT (or the rollback), so an answer sent after it
 * still means "in the records".
 *
 * Why: the cost of a commit on SQLite is the pages it writes to the WAL. Concurrent activations
 * and audit lines share most of their pages (a table's last leaf, the license's row, the upper
 * levels of every index); committed together, each such page is written once per turn instead of
 * once per request.
 */
export class GroupCommit {
  private pending: Pending[] = [];
  private scheduled = false;
  private readonly begin;
  private readonly commit;
  private readonly rollback;
  private readonly savepoint;
  private readonly release;
  private readonly rollbackToSavepoint;

  /** `committed`: told after each commit, once its writers' promises are settled (the checkpoint pacing). */
  constructor(
    private readonly db: Database,
    private readonly committed: () => void = () => {},
  ) {
    this.begin = db.prepare("BEGIN IMMEDIATE");
    this.commit = db.prepare("COMMIT");
    this.rollback = db.prepare("ROLLBACK");
    this.savepoint = db.prepare("SAVEPOINT one_write");
    this.release = db.prepare("RELEASE one_write");
    this.rollbackToSavepoint = db.prepare("ROLLBACK TO one_write");
  }

  /** Runs `write` (synchronous statements) in the next group transaction; settles after its commit. */
  write<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ write, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate runs after the turn's I/O callbacks: every request read in this turn joins.
        setImmediate(() => this.flush());
      }
    });
  }

  /** Applies and commits everything queued (also called at close, so nothing queued is lost). */
  flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    let outcomes: Outcome[];
    try {
      outcomes = this.applyAll(batch) ?? this.applyEachInSavepoint(batch);
    } catch (error) {
      // The transaction itself failed (the write lock not obtained, the disk full): nothing is in.
      for (const p of batch) p.reject(error);
      return;
    }
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.value);
      else p.reject(o.error);
    });
    this.committed();
  }

  /**
   * The usual case: every write succeeds, and they share one transaction without savepoints (a
   * savepoint and its release per write doubled the CPU of an activation). Null when a write
   * failed: the transaction is rolled back, to be applied again write by write.
   */
  private applyAll(batch: readonly Pending[]): Outcome[] | null {
    const outcomes: Outcome[] = [];
    this.begin.run();
    try {
      for (const p of batch) outcomes.push({ ok: true, value: p.write() });
    } catch {
      this.rollbackIfOpen();
      return null;
    }
    this.commitOrRollback();
    return outcomes;
  }

  /** After a failure: each write in its own savepoint, so one failing write does not fail the others. */
  private applyEachInSavepoint(batch: readonly Pending[]): Outcome[] {
    const outcomes: Outcome[] = [];
    this.begin.run();
    try {
      for (const p of batch) {
        this.savepoint.run();
        try {
          outcomes.push({ ok: true, value: p.write() });
          this.release.run();
        } catch (error) {
          this.rollbackToSavepoint.run();
          this.release.run();
          outcomes.push({ ok: false, error });
        }
      }
    } catch (error) {
      this.rollbackIfOpen();
      throw error;
    }
    this.commitOrRollback();
    return outcomes;
  }

  private commitOrRollback(): void {
    try {
      this.commit.run();
    } catch (error) {
      this.rollbackIfOpen();
      throw error;
    }
  }

  private rollbackIfOpen(): void {
    if (this.db.inTransaction) this.rollback.run();
  }

  finalize(): void {
    for (const s of [this.begin, this.commit, this.rollback, this.savepoint, this.release, this.rollbackToSavepoint]) s.finalize();
  }
}
