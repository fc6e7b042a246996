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
  private known: Set<string>;
  private seen = new Set<string>();
  private added = false;

  private constructor(
    private readonly file: string | null,
    known: Iterable<string>,
  ) {
    this.known = new Set(known);
  }

  /** A cache held in `file` (read now, written after each scan), or in memory only when null. */
  static open(file: string | null): SignatureCache {
    let lines: string[] = [];
    if (file) {
      try {
        lines = readFileSync(file, "latin1")
          .split("\n")
          .filter((l) => /^[0-9a-f]{64}$/.test(l));
      } catch {
        // First start, or unreadable: every signature is checked once and the file written afresh.
      }
    }
    return new SignatureCache(file, lines);
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

  has(key: string): boolean {
    if (!this.known.has(key)) return false;
    this.seen.add(key);
    return true;
  }

  add(key: string): void {
    this.known.add(key);
    this.seen.add(key);
    this.added = true;
  }

  get size(): number {
    return this.known.size;
  }

  /** After a whole scan: forgets what that scan did not meet, and writes the file when it changed. */
  finishScan(): void {
    const changed = this.added || this.seen.size !== this.known.size;
    this.known = this.seen;
    this.seen = new Set();
    this.added = false;
    if (!changed || !this.file) return;
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, [...this.known].join("\n") + "\n", { mode: 0o600 });
      renameSync(tmp, this.file);
    } catch {
      // A read-only data directory only costs the next start its signature checks.
    }
  }
}
