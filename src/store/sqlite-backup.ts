import { Database } from "bun:sqlite";
import { closeSync, existsSync, fchmodSync, openSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { SQLITE_FILE } from "./sqlite";

export interface BackupSummary {
  readonly licenses: number;
  readonly activations: number;
  readonly audit: number;
}

export class BackupError extends Error {}

/**
 * Copies the SQLite records in `dataDir` to `file` with VACUUM INTO: one read transaction, so the
 * copy is a consistent snapshot even while `serve` writes (WAL readers do not block writers).
 * The target is created exclusively (never overwritten) and readable by its owner only; the copy
 * is checked with PRAGMA integrity_check before this returns.
 */
export function backupSqlite(dataDir: string, file: string): BackupSummary {
  const source = join(dataDir, SQLITE_FILE);
  if (!existsSync(source)) throw new BackupError(`no records at ${source}`);
  let fd: number;
  try {
    fd = openSync(file, "wx", 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new BackupError(code === "EEXIST" ? `${file} already exists; refusing to overwrite it` : `cannot create ${file} (${code})`);
  }
  try {
    fchmodSync(fd, 0o600); // whatever the umask: VACUUM INTO keeps the mode of the file it fills
  } finally {
    closeSync(fd);
  }
  try {
    const db = new Database(source, { create: false, strict: true });
    try {
      db.exec("PRAGMA busy_timeout = 10000");
      db.query("VACUUM INTO ?").run(file);
    } finally {
      db.close();
    }
    giveNewEpoch(file);
    return checkCopy(file);
  } catch (e) {
    unlinkSync(file);
    if (e instanceof BackupError) throw e;
    throw new BackupError(`backup failed: ${(e as Error).message}`);
  }
}

/**
 * A restored backup is other records than the ones mirrors followed since it was taken: under an
 * epoch of its own, a mirror's cursor into the live records is not taken for one into the copy
 *. Records older than the epoch (migration 6) get one when migrated.
 */
function giveNewEpoch(file: string): void {
  const copy = new Database(file, { strict: true });
  try {
    const hasEpoch = copy.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'feed_epoch'").get();
    if (hasEpoch) copy.query("UPDATE feed_epoch SET epoch = lower(hex(randomblob(12))) WHERE id = 1").run();
  } finally {
    copy.close();
  }
}

function checkCopy(file: string): BackupSummary {
  const copy = new Database(file, { readonly: true, strict: true });
  try {
    const check = copy.query("PRAGMA integrity_check").all() as Array<{ integrity_check: string }>;
    if (check.length !== 1 || check[0]!.integrity_check !== "ok")
      throw new BackupError(`the copy failed its integrity check: ${check.map((c) => c.integrity_check).join("; ")}`);
    const count = (table: string) => (copy.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { licenses: count("licenses"), activations: count("activations"), audit: count("audit") };
  } finally {
    copy.close();
  }
}
