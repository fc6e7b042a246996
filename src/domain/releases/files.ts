import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from "node:fs";
import { ReleaseProblem } from "./problem";

/**
 * Reads a small file of a release folder. Only a regular file is read: a symbolic link could point
 * outside the tree (keys live next door in many deployments) and a FIFO would hang the scan.
 */
export function readRegularFile(path: string, name: string, maxBytes: number, seen?: (stats: Stats) => void): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ReleaseProblem(code === "ENOENT" ? `${name} is missing` : code === "ELOOP" ? `${name} is a symbolic link` : `${name} cannot be read (${code})`);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new ReleaseProblem(`${name} is not a regular file`);
    if (stats.size > maxBytes) throw new ReleaseProblem(`${name} is larger than ${maxBytes} bytes`);
    seen?.(stats);
    const buffer = Buffer.allocUnsafe(stats.size);
    let read = 0;
    while (read < stats.size) {
      const n = readSync(fd, buffer, read, stats.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/** The installer's metadata, refusing anything but a regular file (no symbolic links). */
export function statInstaller(path: string, name: string): Stats {
  const stats = lstatSync(path, { throwIfNoEntry: false });
  if (!stats) throw new ReleaseProblem(`installer ${name} is missing`);
  if (stats.isSymbolicLink()) throw new ReleaseProblem(`installer ${name} is a symbolic link`);
  if (!stats.isFile()) throw new ReleaseProblem(`installer ${name} is not a regular file`);
  return stats;
}

/** SHA-256 (hex; or `algorithm`) of a file, read in chunks: installers can be large. Used by `release check` and `release sign`. */
export function hashFile(path: string, algorithm: "sha256" | "sha512" | "sha1" = "sha256"): string {
  const hasher = new Bun.CryptoHasher(algorithm);
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      hasher.update(chunk.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return hasher.digest("hex");
}

/**
 * What identifies one version of a file without reading it: device, inode, size, modification and
 * change times. A file replaced (rename onto it) gets another inode; one written in place another
 * size, mtime or ctime (ctime also moves when mtime is set back, as rsync -t does).
 */
export type FileIdentity = readonly [dev: number, ino: number, size: number, mtimeMs: number, ctimeMs: number];

/**
 * A release's manifest, signature and installer as they were when read and checked (see
 * index-snapshot.ts): their three identities one after the other, 15 numbers in one array. Kept
 * for every live release between scans; one array instead of four is a third of their memory
 * (bench/README.md, 4a).
 */
export type ReleaseFiles = readonly number[] & { readonly length: 15 };

/** Which of a release's files: its manifest, its signature, its installer. */
export type ReleaseFile = 0 | 1 | 2;

export function releaseFilesOf(manifest: FileIdentity, signature: FileIdentity, installer: FileIdentity): ReleaseFiles {
  const [a, b, c] = [manifest, signature, installer];
  return [a[0], a[1], a[2], a[3], a[4], b[0], b[1], b[2], b[3], b[4], c[0], c[1], c[2], c[3], c[4]] as unknown as ReleaseFiles;
}

/** The identity of one of a release's files. */
export function identityIn(files: ReleaseFiles, file: ReleaseFile): FileIdentity {
  return files.slice(file * 5, file * 5 + 5) as unknown as FileIdentity;
}

export function sameFiles(a: ReleaseFiles, b: ReleaseFiles): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export function identityOf(stats: Stats): FileIdentity {
  return [stats.dev, stats.ino, stats.size, stats.mtimeMs, stats.ctimeMs];
}

export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.every((v, i) => v === b[i]);
}

/** Whether a path is still the very file of `id` (a symbolic link never is). */
export function sameFile(stats: Stats | undefined, id: FileIdentity): boolean {
  return !!stats && !stats.isSymbolicLink() && sameIdentity(identityOf(stats), id);
}

/** Whether a release folder's manifest, signature and installer are still the files of `files`, by lstat. */
export function releaseFilesUnchanged(paths: readonly [manifest: string, signature: string, installer: string], files: ReleaseFiles): boolean {
  return paths.every((path, i) => sameFile(lstatSync(path, { throwIfNoEntry: false }), identityIn(files, i as ReleaseFile)));
}
