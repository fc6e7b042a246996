import { fstatSync, openSync, readSync, statSync } from "node:fs";
import { endianness } from "node:os";

/**
 * Reads the WAL index (the `-shm` file) of a database in WAL mode, as SQLite lays it out
 * (https://www.sqlite.org/walformat.html#the_wal_index_file_format): the header every commit
 * rewrites, then the checkpoint information. One `pread`, no lock and no transaction: what it
 * returns is a reading of a moment, good for "did anything change" and "how long is the WAL", never
 * for deciding what a reader sees.
 */
export interface WalIndexReader {
  /** Reads the first `into.length` bytes (at most WAL_INDEX_BYTES) of the WAL index into `into`. */
  read(into: Uint8Array): void;
}

/** The header's first copy, its second, and the checkpoint information (nBackfill and the read marks). */
export const WAL_INDEX_BYTES = 136;
/** The first copy of the header: what a commit rewrites (change counter, last frame, salts, checksum). */
export const WAL_INDEX_HEADER_BYTES = 48;

// The descriptors of `-shm` files, one per file (by inode), opened once and NEVER closed. SQLite
// locks the `-shm` file with POSIX record locks, and closing any descriptor of a file drops all of
// the process's locks on it: had this one been closed (as Bun.mmap closes its own), another process
// opening the database would find no one holding it, take it for unused and truncate it under
// everyone's feet (a SIGBUS in this process, a corrupted WAL index for all). SQLite keeps its own
// descriptors open for the same reason.
const descriptors = new Map<string, { fd: number; ino: number; dev: number }>();

/** A reader of the WAL index of the database `file`; null where it cannot be read (no shared-memory WAL index). */
export function walIndexReader(file: string): WalIndexReader | null {
  const shmFile = `${file}-shm`;
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
    if (now.size < WAL_INDEX_BYTES) return null;
  } catch {
    return null;
  }
  return { read: (into) => void readSync(fd, into, 0, Math.min(into.length, WAL_INDEX_BYTES), 0) };
}

/** Frames in the WAL, how many of them a checkpoint has already copied into the database file, and the WAL's salt (new each time it starts again from its beginning). */
export interface WalProgress {
  readonly frames: number;
  readonly backfilled: number;
  readonly salt: number;
}

// The WAL index is in the machine's own byte order (walformat.html, "native byte order").
const LITTLE_ENDIAN = endianness() === "LE";
/** mxFrame and salt-1 in the header's first copy; nBackfill first in the checkpoint information. */
const MX_FRAME_AT = 16;
const SALT_AT = 32;
const N_BACKFILL_AT = 96;

/** How far the WAL is ahead of the database file, read from the WAL index. */
export function walProgressOf(reader: WalIndexReader): () => WalProgress {
  const bytes = new Uint8Array(N_BACKFILL_AT + 4);
  const view = new DataView(bytes.buffer);
  return () => {
    reader.read(bytes);
    return {
      frames: view.getUint32(MX_FRAME_AT, LITTLE_ENDIAN),
      backfilled: view.getUint32(N_BACKFILL_AT, LITTLE_ENDIAN),
      salt: view.getUint32(SALT_AT, LITTLE_ENDIAN),
    };
  };
}
