import type { Database } from "bun:sqlite";
import { WAL_INDEX_HEADER_BYTES, walIndexReader } from "./sqlite-wal-index";

/** Whether anything was committed to the database (by any connection, any process) since the last call. */
export interface WriteStamp {
  /** Where the answer comes from: the WAL-index header read from the `-shm` file, or SQLite's data_version. */
  readonly source: "wal-index" | "data_version";
  changedSinceLastCall(): boolean;
  close(): void;
}

/**
 * Every commit in WAL mode ends by rewriting the WAL-index header at the start of the `-shm` file
 * (change counter, last frame, salts, checksum), and a commit is visible to readers only from that
 * moment. Reading those 48 bytes (one pread) tells "something was committed"; asking SQLite
 * (`PRAGMA data_version`) costs a read transaction with its file locks, which was most of an
 * authenticated update request's own work (bench/README.md, "Notes behind the code").
 *
 * Where the file cannot be read (no shared-memory WAL index), the stamp asks SQLite instead.
 */
export function sqliteWriteStamp(db: Database, file: string): WriteStamp {
  return walIndexStamp(file) ?? pragmaStamp(db);
}

function walIndexStamp(file: string): WriteStamp | null {
  const reader = walIndexReader(file);
  if (!reader) return null;
  const header = new Uint8Array(WAL_INDEX_HEADER_BYTES);
  const seen = new Uint8Array(WAL_INDEX_HEADER_BYTES);
  let first = true;
  return {
    source: "wal-index",
    changedSinceLastCall() {
      reader.read(header);
      let changed = first;
      first = false;
      for (let i = 0; i < WAL_INDEX_HEADER_BYTES; i++) {
        if (header[i] !== seen[i]) {
          seen[i] = header[i]!;
          changed = true;
        }
      }
      return changed;
    },
    close() {},
  };
}

/** data_version moves when another connection commits, total_changes when this one writes. */
function pragmaStamp(db: Database): WriteStamp {
  const query = db.prepare("SELECT data_version AS v, total_changes() AS t FROM pragma_data_version");
  let seen: unknown[] = [];
  return {
    source: "data_version",
    changedSinceLastCall() {
      const now = query.values()[0]!;
      const changed = now[0] !== seen[0] || now[1] !== seen[1];
      seen = now;
      return changed;
    },
    close: () => query.finalize(),
  };
}
