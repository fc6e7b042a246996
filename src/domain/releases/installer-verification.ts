import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, renameSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { identityIn, identityOf, sameIdentity, type FileIdentity, type ReleaseFiles } from "./files";
import { sha256Of, type Release } from "./release-index";
import { SHA256_HEX } from "./manifest";
import { SHA512_BASE64, VerifiedInstallers } from "./verified-installers";

/** Installers up to this size are hashed during the scan itself: that costs about what reading the manifest does. */
export const INLINE_HASH_MAX_BYTES = 1 << 20;
/** What one scan hashes inline at most; the rest is hashed in the background. */
export const INLINE_HASH_BUDGET_BYTES = 64 << 20;
/** Read and hashed in one step; small enough that a step holds the event loop well under a millisecond. */
const CHUNK = 256 << 10;

/** Whether an installer may be served: its bytes hashed to the manifest's sha256, they did not, it cannot be read, or not known yet. */
export type InstallerVerdict = "verified" | "mismatch" | "unreadable" | "pending";

export interface InstallerVerifierOptions {
  readonly inlineMaxBytes?: number;
  readonly inlineBudgetBytes?: number;
}

/**
 * Installers whose bytes were hashed and found equal to a manifest's sha256, remembered by file
 * identity (device, inode, size, mtime, ctime) and that sha256, across restarts (a file in the data
 * directory, like the signature cache). An installer replaced by other bytes, even of the same
 * size, is another identity: it is not served until it has been hashed again. The identity is taken
 * from the descriptor that was hashed, before and after reading it, so a file written to while being
 * hashed is never recorded.
 *
 * Between scans, once the file holds every identity known and none waits to be hashed, nothing is
 * held in memory (1.3 MB at 10,000 releases): the index keeps each live release's installer
 * identity and SHA-512 (ReleaseIndex.installerSha512Of), which is what serving asks, and the file is
 * read again by the next scan, or by a question about a file the index does not know.
 */
export class InstallerVerifier {
  /**
   * Each verified identity with the installer's SHA-512 (base64, electron-updater's `sha512`),
   * hashed in the same pass; read from the file when first needed, so a start does not wait for it.
   */
  private knownNow: VerifiedInstallers | null = null;
  /** Those this scan met; sized to the known ones when first needed, so it seldom grows. */
  private seenNow: VerifiedInstallers | null = null;
  private added = false;
  /** Whether the file holds every identity known (it was read whole, or written since). */
  private fileHoldsKnown = false;
  /** Identities whose bytes did not match or could not be read, so they are not tried again on every scan (this process only). */
  private failed = new Map<string, "mismatch" | "unreadable">();
  private failedSeen = new Map<string, "mismatch" | "unreadable">();
  private readonly queue = new Map<string, { readonly path: string; readonly id: FileIdentity; readonly sha256: string }>();
  private draining: Promise<void> | null = null;
  private scanBudget = 0;

  private constructor(
    private readonly file: string | null,
    private readonly opts: InstallerVerifierOptions,
  ) {}

  /** Verified identities held in `file` (read when first needed, written after each scan that changed them), or in memory only when null. */
  static open(file: string | null, opts: InstallerVerifierOptions = {}): InstallerVerifier {
    return new InstallerVerifier(file, opts);
  }

  private get known(): VerifiedInstallers {
    if (this.knownNow) return this.knownNow;
    let text: Buffer = Buffer.alloc(0);
    this.fileHoldsKnown = false;
    if (this.file) {
      try {
        text = readFileSync(this.file);
        this.fileHoldsKnown = true;
      } catch {
        // First start, or unreadable: every installer is hashed once and the file written afresh.
      }
    }
    // A line is `<dev> <ino> <size> <mtime> <ctime> <sha256> <sha512>`, as `write` makes it; a line
    // that is not one (an older file's, without the SHA-512) is skipped, so its installer is hashed
    // again. Each line is decoded into a string of its own: a slice of the file's text, held by the
    // last regular expression that tested it, would keep all of it alive.
    const known = new VerifiedInstallers(text.length / LINE_BYTES);
    for (let start = 0; start < text.length; ) {
      const newline = text.indexOf(10, start);
      const end = newline < 0 ? text.length : newline;
      const fields = text.toString("latin1", start, end).split(" ");
      start = end + 1;
      if (fields.length !== 7) continue;
      const id = fields.slice(0, 5).map(Number);
      // Only the numbers `write` prints: the text of each is what keyOf makes of it.
      if (!id.every((n, i) => String(n) === fields[i]) || !SHA256_HEX.test(fields[5]!) || !SHA512_BASE64.test(fields[6]!)) continue;
      known.set(id as unknown as FileIdentity, fields[5]!, fields[6]!);
    }
    return (this.knownNow = known);
  }

  private get seen(): VerifiedInstallers {
    return (this.seenNow ??= new VerifiedInstallers(this.known.size));
  }

  static keyOf(id: FileIdentity, sha256: string): string {
    return `${id.join(" ")} ${sha256}`;
  }

  /** Called after each background hash settles (verified, mismatch, or the file changed meanwhile): the holder scans again. */
  onSettled: (() => void) | undefined;

  /** Whether the file of `id` was hashed and found to be `sha256` (serving checks this; it does not count as seen). */
  holds(id: FileIdentity, sha256: string): boolean {
    return this.known.has(id, sha256);
  }

  /** The SHA-512 (base64) of the verified file of `id` and `sha256`, or null when it is not verified. */
  sha512Of(id: FileIdentity, sha256: string): string | null {
    return this.known.sha512Of(id, sha256);
  }

  /** The same for `release`'s installer (installer-handles.ts). */
  verifiedSha512(release: Release, id: FileIdentity): string | null {
    return this.sha512Of(id, release.manifest.sha256);
  }

  /**
   * During a scan: the verdict for the installer at `path`, whose lstat gave `id`. Small ones not
   * yet known are hashed now (within the scan's budget); the others are queued for the background
   * and are "pending" until then.
   */
  verdict(path: string, id: FileIdentity, sha256: string): InstallerVerdict {
    const sha512 = this.known.sha512Of(id, sha256);
    if (sha512 !== null) {
      this.seen.set(id, sha256, sha512);
      return "verified";
    }
    const key = InstallerVerifier.keyOf(id, sha256);
    const failed = this.failed.get(key);
    if (failed) {
      this.failedSeen.set(key, failed);
      return failed;
    }
    const size = id[2];
    if (size <= (this.opts.inlineMaxBytes ?? INLINE_HASH_MAX_BYTES) && this.scanBudget >= size) {
      this.scanBudget -= size;
      const hashed = hashOpened(path, id);
      if (hashed !== null) return this.settle(key, id, sha256, hashed.sha256 === sha256 ? hashed.sha512 : "mismatch");
    }
    // Hashed once the scan is over (finishScan): hashing meanwhile would slow the scan a start waits for.
    if (!this.queue.has(key)) this.queue.set(key, { path, id, sha256 });
    return "pending";
  }

  /** At the start of a scan: its inline hashing budget. */
  beginScan(): void {
    this.scanBudget = this.opts.inlineBudgetBytes ?? INLINE_HASH_BUDGET_BYTES;
  }

  /** Installers queued or being hashed in the background. */
  get pending(): number {
    return this.queue.size;
  }

  /** Resolves once the background queue is empty (tests and the bench); the hashing starts when a scan finishes. */
  async settled(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** After a whole scan: forgets identities that scan did not meet, and writes the file when it changed. */
  finishScan(): void {
    this.failed = this.failedSeen;
    this.failedSeen = new Map();
    const changed = this.added || this.seen.size !== this.known.size;
    this.knownNow = this.seen;
    this.seenNow = null;
    this.added = false;
    if (changed) this.fileHoldsKnown = this.write();
    if (this.queue.size > 0) this.draining ??= this.drain();
    else if (this.fileHoldsKnown) this.knownNow = null;
  }

  /** Whether it holds its identities in memory now (false between scans once its file holds them all). */
  get held(): boolean {
    return this.knownNow !== null;
  }

  /** `verdict`: the SHA-512 of bytes that matched, or why they did not. */
  private settle(key: string, id: FileIdentity, sha256: string, verdict: string): InstallerVerdict {
    if (verdict === "mismatch" || verdict === "unreadable") {
      this.failed.set(key, verdict);
      this.failedSeen.set(key, verdict);
      return verdict;
    }
    this.known.set(id, sha256, verdict);
    this.seen.set(id, sha256, verdict);
    this.added = true;
    return "verified";
  }

  /** Writes the identities known to the file; whether it now holds them. */
  private write(): boolean {
    if (!this.file) return false;
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      const lines = Array.from(this.known.entries(), ([id, sha256, sha512]) => `${InstallerVerifier.keyOf(id, sha256)} ${sha512}\n`);
      writeFileSync(tmp, lines.join(""), { mode: 0o600 });
      renameSync(tmp, this.file);
      return true;
    } catch {
      // A read-only data directory only costs the next start its hashing; meanwhile they stay in memory.
      return false;
    }
  }

  /** One installer at a time (a few GiB would otherwise take both cores from the requests). */
  private async drain(): Promise<void> {
    try {
      for (const [key, job] of this.queue) {
        const hashed = await hashOpenedAsync(job.path, job.id).catch(() => "unreadable" as const);
        this.queue.delete(key);
        // null: the file changed since the scan saw it; the scan this triggers sees the new one.
        if (hashed === "unreadable") this.settle(key, job.id, job.sha256, "unreadable");
        else if (hashed !== null) this.settle(key, job.id, job.sha256, hashed.sha256 === job.sha256 ? hashed.sha512 : "mismatch");
        // The scan this triggers writes the file (finishScan), once for many settled installers.
        this.onSettled?.();
      }
    } finally {
      this.draining = null;
    }
  }
}

interface Hashes {
  /** Hex, as manifests declare it. */
  readonly sha256: string;
  /** Base64, as electron-updater's `files[].sha512`. */
  readonly sha512: string;
}

/** About the length of a line of the file: it sizes the store read from it, so that it seldom grows. */
const LINE_BYTES = 200;

/** Both hashes fed by each chunk read: one pass over the file. */
function hashers() {
  const sha256 = new Bun.CryptoHasher("sha256");
  const sha512 = new Bun.CryptoHasher("sha512");
  return {
    update(bytes: Uint8Array) {
      sha256.update(bytes);
      sha512.update(bytes);
    },
    digest: (): Hashes => ({ sha256: sha256.digest("hex"), sha512: sha512.digest("base64") }),
  };
}

/** SHA-256 and SHA-512 of the file at `path` if the descriptor opened is still the file of `id` before and after reading it; else null. */
function hashOpened(path: string, id: FileIdentity): Hashes | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    if (!sameIdentity(identityOf(fstatSync(fd)), id)) return null;
    const hasher = hashers();
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, id[2])));
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      hasher.update(chunk.subarray(0, n));
    }
    return sameIdentity(identityOf(fstatSync(fd)), id) ? hasher.digest() : null;
  } finally {
    closeSync(fd);
  }
}

async function hashOpenedAsync(path: string, id: FileIdentity): Promise<Hashes | null> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!sameIdentity(identityOf(await handle.stat()), id)) return null;
    const hasher = hashers();
    const chunk = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      hasher.update(chunk.subarray(0, bytesRead));
    }
    return sameIdentity(identityOf(await handle.stat()), id) ? hasher.digest() : null;
  } finally {
    await handle.close();
  }
}

/** A scan's question: true when the release's installer is verified, "pending" while it is hashed, else why it is not served. */
export function installerAdmitted(v: InstallerVerifier, r: { readonly release: Release; readonly files: ReleaseFiles }): true | "pending" | string {
  // A re-scan asks this of every release it takes unread: a packed one's manifest is made only to say why not.
  const verdict = v.verdict(r.release.installerPath, identityIn(r.files, 2), sha256Of(r.release));
  if (verdict === "verified") return true;
  if (verdict === "pending") return "pending";
  const m = r.release.manifest;
  return verdict === "mismatch" ? `installer ${m.installer} does not match the manifest's sha256` : `installer ${m.installer} cannot be read`;
}
