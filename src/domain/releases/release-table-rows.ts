import { closeSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";

/** Where a release table keeps its rows' bytes: read back a span at a time. */
export interface TableRows {
  /** The bytes from `from` up to `to`. */
  read(from: number, to: number): Buffer;
}

/** Rows held in the process's memory: a copy of `bytes` (which may be part of a larger buffer). */
export function rowsInMemory(bytes: Buffer): TableRows {
  const held = Buffer.from(bytes);
  return { read: (from, to) => held.subarray(from, to) };
}

/** Closes a file's descriptor once the rows reading through it are unreachable. */
const closeWhenCollected = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing holds it.
  }
});

/**
 * Rows written to a file in `dir` and read from it when asked, so that a tree's thousands of older
 * releases cost the process a few small arrays instead of megabytes of memory held for good
 * (bench/README.md, "4a and 5a, fifteenth round"). The file is removed as soon as it is written,
 * while its descriptor stays open: nothing is left behind for anyone to clean, even after a crash,
 * and nothing else can open it. When it cannot be written (no such directory, a full disk, a
 * read-only one), the rows stay in memory, as they would without a directory.
 */
export function rowsInFile(dir: string, bytes: Buffer): TableRows {
  const path = join(dir, `.release-table-${process.pid}-${crypto.randomUUID()}`);
  let fd: number;
  try {
    fd = openSync(path, "wx+", 0o600);
  } catch {
    return rowsInMemory(bytes);
  }
  try {
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at, at);
  } catch {
    closeSync(fd);
    return rowsInMemory(bytes);
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // Left behind only if the directory changed under us; its name says what it is.
    }
  }
  const rows: TableRows = {
    read: (from, to) => {
      const out = Buffer.allocUnsafe(to - from);
      for (let got = 0; got < out.length; ) {
        const n = readSync(fd, out, got, out.length - got, from + got);
        if (n === 0) throw new Error("a release table's file ended early");
        got += n;
      }
      return out;
    },
  };
  closeWhenCollected.register(rows, fd);
  return rows;
}
