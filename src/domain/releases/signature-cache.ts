import { readFileSync, renameSync, writeFileSync } from "node:fs";

/**
 * Signatures that verified, remembered by the SHA-256 of (release key, signature, manifest bytes),
 * each part prefixed with its length (so no byte can move from one part to the next unnoticed),
 * so a re-scan or a restart checks only new or changed releases: the ECDSA verifies are most of a
 * start with many release folders (bench/README.md). The key covers everything the result depends on,
 * so a changed manifest, signature or key is a miss. Kept in the data directory (one hex line per
 * signature), never in the release tree a mirror copies.
 */
export class SignatureCache {
  /** Null until first needed, and again between scans once the file holds it all (see finishScan). */
  private knownNow: Set<string> | null = null;
  private seen = new Set<string>();
  private added = false;
  /** Set after a scan that left the file holding every signature known: until the next scan, nothing is held. */
  private resting = false;

  private constructor(
    private readonly file: string | null,
    known?: Iterable<string>,
  ) {
    if (known) this.knownNow = new Set(known);
  }

  /** A cache held in `file` (read when a scan first needs it, written after each scan), or in memory only when null. */
  static open(file: string | null): SignatureCache {
    return file ? new SignatureCache(file) : new SignatureCache(null, []);
  }

  private get known(): Set<string> {
    if (this.knownNow) return this.knownNow;
    let lines: string[] = [];
    try {
      lines = readFileSync(this.file!, "latin1")
        .split("\n")
        .filter((l) => /^[0-9a-f]{64}$/.test(l));
    } catch {
      // First start, or unreadable: every signature is checked once and the file written afresh.
    }
    return (this.knownNow = new Set(lines));
  }

  static keyOf(spki: string, sigBytes: Uint8Array, manifestBytes: Uint8Array): string {
    const hasher = new Bun.CryptoHasher("sha256");
    for (const part of [Buffer.from(spki, "utf8"), sigBytes, manifestBytes]) {
      const length = Buffer.allocUnsafe(8);
      length.writeBigUInt64BE(BigInt(part.length));
      hasher.update(length).update(part);
    }
    return hasher.digest("hex");
  }

  /** At the start of a whole scan: the file is read again if it was let go. */
  beginScan(): void {
    this.resting = false;
  }

  /**
   * Between scans (resting) the cache answers no: a release read again then (a lane falling back to
   * an older release, ReleaseIndex.withBytes) has its signature checked, once per index, rather than
   * the process holding every signature's key for good (bench/README.md, 4a).
   */
  has(key: string): boolean {
    if (this.resting || !this.known.has(key)) return false;
    this.seen.add(key);
    return true;
  }

  add(key: string): void {
    if (this.resting) return;
    this.known.add(key);
    this.seen.add(key);
    this.added = true;
  }

  get size(): number {
    return this.resting ? 0 : this.known.size;
  }

  /**
   * After a whole scan: forgets what that scan did not meet, and writes the file when it changed.
   * A cache with a file then lets go of its keys until the next scan reads them again (once the
   * file holds them all: when it cannot be written, they stay in memory).
   */
  finishScan(): void {
    const changed = this.added || this.seen.size !== this.known.size;
    this.knownNow = this.seen;
    this.seen = new Set();
    this.added = false;
    if (!this.file) return;
    if (changed) {
      const tmp = `${this.file}.${process.pid}.tmp`;
      try {
        writeFileSync(tmp, [...this.knownNow].join("\n") + "\n", { mode: 0o600 });
        renameSync(tmp, this.file);
      } catch {
        // A read-only data directory only costs the next start its signature checks.
        return;
      }
    }
    this.knownNow = null;
    this.resting = true;
  }
}
