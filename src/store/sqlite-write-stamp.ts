import type { Database } from "bun:sqlite";

/** Whether anything was committed to the database (by any connection, any process) since the last call. */
export interface WriteStamp {
  /** Where the answer comes from: the mapped WAL-index header, or SQLite's data_version. */
  readonly source: "wal-index" | "data_version";
  changedSinceLastCall(): boolean;
  close(): void;
}

/** Bytes of the WAL-index header: https://www.sqlite.org/walformat.html#the_wal_index_file_format */
const HEADER_BYTES = 48;

/**
 * Every commit in WAL mode ends by rewriting the WAL-index header at the start of the `-shm` file
 * (change counter, last frame, salts, checksum), and a commit is visible to readers only from that
 * moment. Comparing those 48 bytes through a shared mapping tells "something was committed" in
 * nanoseconds; asking SQLite (`PRAGMA data_version`) costs a read transaction with its file locks,
 * 3–9 µs, which was most of an authenticated update request's own work.
 *
 * The `-shm` file stays in place while this connection is open (SQLite truncates it only when the
 * first connection opens the database), so the mapping stays valid. Where it cannot be mapped (no
 * shared-memory WAL index), the stamp falls back to asking SQLite.
 */
export function sqliteWriteStamp(db: Database, file: string): WriteStamp {
  return mappedStamp(file) ?? pragmaStamp(db);
}

function mappedStamp(file: string): WriteStamp | null {
  let header: Uint32Array;
  try {
    const shm = Bun.mmap(`${file}-shm`, { shared: true });
    if (shm.byteLength < HEADER_BYTES) return null;
    header = new Uint32Array(shm.buffer, shm.byteOffset, HEADER_BYTES / 4);
  } catch {
    return null;
  }
  const seen = new Uint32Array(HEADER_BYTES / 4).fill(0xffffffff);
  return {
    source: "wal-index",
    changedSinceLastCall() {
      let changed = false;
      for (let i = 0; i < seen.length; i++) {
        const word = header[i]!;
        if (word !== seen[i]) {
          seen[i] = word;
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
