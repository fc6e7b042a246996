import { closeSync, constants, fstatSync, openSync } from "node:fs";
import { systemClock, type Clock } from "../clock";
import { identityOf, type FileIdentity } from "./files";
import { InstallerVerifier } from "./installer-verification";
import type { Release } from "./release-index";
import { systemEvery, type Every } from "./tree-watch";

/** A descriptor's own path: opening it opens the very file the descriptor holds, whatever its path names now. */
const FD_DIR = process.platform === "linux" ? "/proc/self/fd" : "/dev/fd";
/** A descriptor unused this long is closed (the runtime opens a response's file as soon as the handler returns). */
export const HANDLE_IDLE_MS = 60_000;

/** Which installers are verified: the SHA-512 (base64) of `release`'s installer when the file of `id` is its verified one, else null. */
export interface VerifiedInstallerLookup {
  verifiedSha512(release: Release, id: FileIdentity): string | null;
}

/**
 * Opens installers for download so that only verified bytes are ever sent: the path is opened (the
 * last component with O_NOFOLLOW), the descriptor's identity (device, inode, size, mtime, ctime)
 * must be one whose bytes were hashed to this release's sha256, and the response reads the file
 * through the descriptor (its /proc/self/fd path), never through the tree's path again. A folder
 * swapped for a symbolic link, or an installer replaced, gives another identity and is refused.
 * Serving through the descriptor's path keeps the runtime's sendfile (a stream read in JavaScript
 * answered 0.83 x as fast). Descriptors are shared per identity and closed once idle.
 */
export class InstallerHandles {
  private readonly held = new Map<string, { readonly fd: number; used: number }>();
  private stopSweeping: (() => void) | null = null;

  constructor(
    private readonly verified: VerifiedInstallerLookup,
    private readonly clock: Clock = systemClock,
    private readonly every: Every = systemEvery,
  ) {}

  /** A path that reads exactly the verified installer of `release`, or null when the file there now is not it. */
  open(release: Release): string | null {
    const m = release.manifest;
    let fd: number;
    try {
      fd = openSync(release.installerPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      return null;
    }
    let keep = false;
    try {
      const stats = fstatSync(fd);
      const id = identityOf(stats);
      if (!stats.isFile() || stats.size !== m.size || this.verified.verifiedSha512(release, id) === null) return null;
      const key = InstallerVerifier.keyOf(id, m.sha256);
      const now = this.clock();
      const held = this.held.get(key);
      if (held) {
        held.used = now;
        return `${FD_DIR}/${held.fd}`;
      }
      this.held.set(key, { fd, used: now });
      keep = true;
      this.stopSweeping ??= this.every(HANDLE_IDLE_MS, () => this.sweep());
      return `${FD_DIR}/${fd}`;
    } finally {
      if (!keep) closeSync(fd);
    }
  }

  /**
   * The SHA-512 (base64) of the installer of `release` as hashed when it was verified, or null when
   * the file there now is not the verified one (the feeds then answer as the update path does).
   */
  sha512(release: Release): string | null {
    let fd: number;
    try {
      fd = openSync(release.installerPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      return null;
    }
    try {
      const stats = fstatSync(fd);
      return stats.isFile() && stats.size === release.manifest.size ? this.verified.verifiedSha512(release, identityOf(stats)) : null;
    } finally {
      closeSync(fd);
    }
  }

  /** Descriptors held now. */
  get size(): number {
    return this.held.size;
  }

  /** Closes the descriptors unused for HANDLE_IDLE_MS. */
  sweep(): void {
    const now = this.clock();
    for (const [key, h] of this.held)
      if (now - h.used >= HANDLE_IDLE_MS) {
        closeSync(h.fd);
        this.held.delete(key);
      }
    if (this.held.size === 0) this.stopTimer();
  }

  close(): void {
    for (const h of this.held.values()) closeSync(h.fd);
    this.held.clear();
    this.stopTimer();
  }

  private stopTimer(): void {
    this.stopSweeping?.();
    this.stopSweeping = null;
  }
}
