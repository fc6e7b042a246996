import type { FileIdentity } from "./files";
import { SHA256_HEX } from "./manifest";

/** An identity's five numbers, then the SHA-256's 32 bytes and the SHA-512's 64. */
const NUMBERS = 5;
const DIGEST_BYTES = 32 + 64;
/** A SHA-512 as electron-updater's `sha512` and the cache file write it: base64 of 64 bytes. */
export const SHA512_BASE64 = /^[A-Za-z0-9+/]{86}==$/;

/**
 * Installers whose bytes were hashed and found equal to a manifest's sha256, each with its SHA-512,
 * packed: an entry is five doubles (the file's identity) and 96 bytes (both digests) in two growing
 * arrays, found by the file's inode. Exact: an entry matches only when all five numbers and the
 * SHA-256 are equal. A map from 151-character text keys to base64 strings held 3.0 MB of the heap
 * at 10,000 releases, packed 1.6 MB, and every megabyte a process keeps costs about two at the peak
 * of a load (bench/README.md, "4a and 5a, tenth round").
 */
export class VerifiedInstallers {
  private numbers: Float64Array;
  private digests: Buffer;
  private count = 0;
  /** Open addressing by inode: entry + 1, or 0 for a free slot; never more than half full. */
  private slots: Int32Array;

  /** `expected`: how many entries it will likely hold (the arrays grow by half beyond it). */
  constructor(expected = 16) {
    const capacity = Math.max(1, Math.ceil(expected));
    this.numbers = new Float64Array(NUMBERS * capacity);
    this.digests = Buffer.alloc(DIGEST_BYTES * capacity);
    this.slots = new Int32Array(slotsFor(capacity));
  }

  get size(): number {
    return this.count;
  }

  /** Whether the file of `id` with this SHA-256 (hex) is recorded. */
  has(id: FileIdentity, sha256: string): boolean {
    return this.find(id, sha256) >= 0;
  }

  /** The SHA-512 (base64) recorded for the file of `id` with this SHA-256 (hex), or null. */
  sha512Of(id: FileIdentity, sha256: string): string | null {
    const entry = this.find(id, sha256);
    if (entry < 0) return null;
    const at = entry * DIGEST_BYTES + 32;
    return this.digests.toString("base64", at, at + 64);
  }

  /** Records (or replaces) the SHA-512 (base64) of the file of `id` whose SHA-256 (hex) is `sha256`. */
  set(id: FileIdentity, sha256: string, sha512: string): void {
    // Checked before anything is written: an entry is never left with a digest half stored.
    if (!SHA256_HEX.test(sha256)) throw new Error("a SHA-256 is 64 lower-case hex digits");
    if (!SHA512_BASE64.test(sha512)) throw new Error("a SHA-512 is the base64 of 64 bytes");
    let entry = this.find(id, sha256);
    if (entry < 0) {
      this.grow(this.count + 1);
      entry = this.count++;
      this.numbers.set(id, entry * NUMBERS);
      this.digests.write(sha256, entry * DIGEST_BYTES, 32, "hex");
      this.place(entry);
    }
    this.digests.write(sha512, entry * DIGEST_BYTES + 32, 64, "base64");
  }

  /** Every entry, in the order recorded: identity, SHA-256 (hex), SHA-512 (base64). */
  *entries(): Generator<[FileIdentity, string, string]> {
    for (let entry = 0; entry < this.count; entry++) {
      const id = Array.from(this.numbers.subarray(entry * NUMBERS, entry * NUMBERS + NUMBERS)) as unknown as FileIdentity;
      const at = entry * DIGEST_BYTES;
      yield [id, this.digests.toString("hex", at, at + 32), this.digests.toString("base64", at + 32, at + DIGEST_BYTES)];
    }
  }

  private find(id: FileIdentity, sha256: string): number {
    const mask = this.slots.length - 1;
    for (let slot = slotOf(id[1], mask); this.slots[slot] !== 0; slot = (slot + 1) & mask) {
      const entry = this.slots[slot]! - 1;
      if (this.matches(entry, id, sha256)) return entry;
    }
    return -1;
  }

  private place(entry: number): void {
    const mask = this.slots.length - 1;
    let slot = slotOf(this.numbers[entry * NUMBERS + 1]!, mask);
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    this.slots[slot] = entry + 1;
  }

  private matches(entry: number, id: FileIdentity, sha256: string): boolean {
    const numbers = entry * NUMBERS;
    for (let i = 0; i < NUMBERS; i++) if (this.numbers[numbers + i] !== id[i]) return false;
    const at = entry * DIGEST_BYTES;
    return this.digests.toString("hex", at, at + 32) === sha256;
  }

  /** Room for `needed` entries: the arrays and slots made again half as big again. */
  private grow(needed: number): void {
    if (needed * NUMBERS <= this.numbers.length) return;
    const capacity = Math.ceil((this.numbers.length / NUMBERS) * 1.5);
    const numbers = new Float64Array(capacity * NUMBERS);
    numbers.set(this.numbers);
    this.numbers = numbers;
    const digests = Buffer.alloc(capacity * DIGEST_BYTES);
    digests.set(this.digests);
    this.digests = digests;
    this.slots = new Int32Array(slotsFor(capacity));
    for (let entry = 0; entry < this.count; entry++) this.place(entry);
  }
}

/** A power of two at least twice `capacity`, so probes stay short. */
const slotsFor = (capacity: number) => 2 ** Math.ceil(Math.log2(Math.max(2, capacity * 2)));

/** The first slot of an inode (a double: inodes may exceed 32 bits). */
const slotOf = (ino: number, mask: number) => (Math.imul((ino % 0x1_0000_0000) ^ Math.floor(ino / 0x1_0000_0000), 0x9e3779b1) >>> 7) & mask;
