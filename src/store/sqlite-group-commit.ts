import type { Database } from "bun:sqlite";

interface Pending {
  readonly write: () => unknown;
  readonly resolve: (value: any) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: the writes of concurrent requests that arrive within one event-loop turn are
 * applied in ONE `BEGIN IMMEDIATE` transaction, each in its own savepoint so one failing write
 * does not fail the others. Every caller's promise settles only after the COMMIT (or the
 * rollback), so an answer sent after it still means "in the records".
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

  constructor(private readonly db: Database) {
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
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
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
        this.commit.run();
      } catch (error) {
        if (this.db.inTransaction) this.rollback.run();
        throw error;
      }
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
  }

  finalize(): void {
    for (const s of [this.begin, this.commit, this.rollback, this.savepoint, this.release, this.rollbackToSavepoint]) s.finalize();
  }
}
