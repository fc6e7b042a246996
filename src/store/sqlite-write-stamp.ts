import type { Database } from "bun:sqlite";
import { fstatSync, openSync, readSync, statSync } from "node:fs";

/** Whether anything was committed to the database (by any connection, any process) since the last call. */
export interface WriteStamp {
  /** Where the answer comes from: the WAL-index header read from the `-shm` file, or SQLite's data_version. */
  readonly source: "wal-index" | "data_version";
  changedSinceLastCall(): boolean;
  close(): void;
}

/** Bytes of the WAL-index header: https://www.sqlite.org/walformat.html#the_wal_index_file_format */
const HEADER_BYTES = 48;

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
  return walIndexStamp(`${file}-shm`) ?? pragmaStamp(db);
}

// The descriptors of `-shm` files, one per file (by inode), opened once and NEVER closed. SQLite
// locks the `-shm` file with POSIX record locks, and closing any descriptor of a file drops all of
// the process's locks on it: had this one been closed (as Bun.mmap closes its own), another process
// opening the database would find no one holding it, take it for unused and truncate it under
// everyone's feet (a SIGBUS in this process, a corrupted WAL index for all). SQLite keeps its own
// descriptors open for the same reason.
const descriptors = new Map<string, { fd: number; ino: number; dev: number }>();

function walIndexStamp(shmFile: string): WriteStamp | null {
  let fd: number;
  try {
    const now = statSync(shmFile);
    let known = descriptors.get(shmFile);
    if (!known || known.ino !== now.ino || known.dev !== now.dev) {
      const opened = openSync(shmFile, "r");
      const id = fstatSync(opened);
      // The old descriptor (of a `-shm` file since deleted) is left open: see above.
      descriptors.set(shmFile, (known = { fd: opened, ino: id.ino, dev: id.dev }));
    }
    fd = known.fd;
    if (now.size < HEADER_BYTES) return null;
  } catch {
    return null;
  }
  const header = new Uint8Array(HEADER_BYTES);
  const seen = new Uint8Array(HEADER_BYTES);
  let first = true;
  return {
    source: "wal-index",
    changedSinceLastCall() {
      readSync(fd, header, 0, HEADER_BYTES, 0);
      let changed = first;
      first = false;
      for (let i = 0; i < HEADER_BYTES; i++) {
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
