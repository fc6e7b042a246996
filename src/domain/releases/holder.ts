import { watch, type FSWatcher } from "node:fs";
import type { Logger } from "../../config/log";
import { knownOf, loadSnapshot, saveSnapshot, type LoadedSnapshot } from "./index-snapshot";
import { ReleaseIndex } from "./release-index";
import { ReleaseTreeUnreadable, scanReleaseTree, type KnownRelease, type ScanOptions, type ScanResult } from "./scan";
import { SignatureCache } from "./signature-cache";

/** How long after a start from the snapshot the tree is watched and scanned afresh. */
export const RESCAN_AFTER_SNAPSHOT_MS = 500;

export interface ReleaseHolderOptions extends Omit<ScanOptions, "hashInstallers"> {
  readonly root: string;
  readonly log: Logger;
  /** Quiet time after the last change before a re-scan; a long copy still re-scans every maxWaitMs. */
  readonly debounceMs?: number;
  readonly maxWaitMs?: number;
  /** Where the last index is kept between starts (index-snapshot.ts); none when null or absent. */
  readonly snapshotFile?: string | null;
  /** Called with the index of each whole scan once it is swapped in (release.published: publications.ts). */
  readonly onScanned?: (index: ReleaseIndex) => void;
}

/**
 * A whole scan leaves megabytes of garbage (stats, paths and bytes of every folder) and, after a
 * re-scan, the previous index. The runtime would collect them only once the heap grew further, and
 * until then their pages stay resident: collected just after the swap, they go back to the system
 * (RSS after a start with 10,000 release folders: 99–118 → about 80 MB).
 */
function collectSoon(): void {
  setTimeout(() => Bun.gc(true), 0).unref();
}

/**
 * Holds the live release index of a tree. A re-scan builds a whole new index aside and swaps it in
 * at once, so a request sees either the old tree or the new one, never a half-built index. A folder
 * that is not a live release (a mirror halfway through copying it) is not in the new index, so the
 * previous release of its lane stays the newest.
 */
export class ReleaseHolder {
  private index: ReleaseIndex | null = null;
  /** Settles with no value: a promise resolved with the first index would keep it (and a snapshot's, all it rests on) for good. */
  private readonly firstIndex: Promise<void>;
  private resolveFirst!: () => void;
  private running: Promise<ReleaseIndex> | null = null;
  private pending: Promise<ReleaseIndex> | null = null;
  private lastProblems = new Map<string, string>();
  private watcher: FSWatcher | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private firstChangeAt = 0;
  private readonly signatures: SignatureCache;
  private scanned = false;
  private snapshot: LoadedSnapshot | null = null;
  /** The live releases of the index now, with their files: a scan takes those still the same files unread. */
  private known: ReadonlyMap<string, KnownRelease> | null = null;

  constructor(private readonly opts: ReleaseHolderOptions) {
    this.signatures = opts.signatures ?? SignatureCache.open(null);
    this.firstIndex = new Promise((resolve) => (this.resolveFirst = resolve));
  }

  /** The folders the last scan skipped, with their reasons (GET /admin/releases). */
  get skipped(): ReadonlyMap<string, string> {
    return this.lastProblems;
  }

  /** The index now, or null before the first scan has finished. */
  get current(): ReleaseIndex | null {
    return this.index;
  }

  /** The index now; before the first scan has finished, waits for it. */
  ready(): Promise<ReleaseIndex> {
    return this.index ? Promise.resolve(this.index) : this.firstIndex.then(() => this.index!);
  }

  /**
   * The first index: the snapshot of the last one at once when it still holds (checked by stat),
   * then a whole scan of the tree, whose index replaces it. With `watch`, the tree is watched from
   * before that scan begins, so no change is missed.
   */
  start(opts: { watch?: boolean } = {}): Promise<ReleaseIndex> {
    const file = this.opts.snapshotFile;
    if (file && this.index === null) {
      const started = performance.now();
      this.snapshot = loadSnapshot({ ...this.opts, file, signatures: this.signatures });
      if (this.snapshot) {
        this.swapIn(this.snapshot.index);
        this.opts.log.info("release index loaded from the snapshot", { releases: this.snapshot.index.size, ms: Math.round(performance.now() - started) });
      }
    }
    const scan = () => {
      if (opts.watch) this.watch();
      return this.rescan();
    };
    if (!this.snapshot) return scan();
    // Serving already: watching (a watch per directory: ~80 ms at 10,000 folders) and the scan wait
    // a moment, so the first requests (a load balancer's health checks) are not held behind them.
    // Nothing is missed meanwhile: snapshot releases are checked by stat when first served, and the
    // scan that follows finds what was added.
    return new Promise((resolve) => setTimeout(() => resolve(scan()), RESCAN_AFTER_SNAPSHOT_MS));
  }

  /**
   * Scans the tree and swaps the result in. Calls during a scan share one further scan after it,
   * so a change made while scanning is never missed and scans never overlap.
   */
  rescan(): Promise<ReleaseIndex> {
    if (!this.running) {
      this.running = this.scanOnce().finally(() => (this.running = null));
      return this.running;
    }
    this.pending ??= this.running.then(() => {
      this.pending = null;
      return this.rescan();
    });
    return this.pending;
  }

  /** Re-scans after changes under the root (debounced). Returns false when the platform cannot watch it. */
  watch(): boolean {
    if (this.watcher) return true;
    try {
      this.watcher = watch(this.opts.root, { recursive: true }, (_event, filename) => {
        // rsync writes into hidden temporaries and renames them into place; the rename is the change.
        const name = String(filename ?? "").split(/[\\/]/).at(-1) ?? "";
        if (!name.startsWith(".")) this.changed();
      });
      this.watcher.on("error", (e) => this.opts.log.warn("release tree watch failed; send SIGHUP after changes", { root: this.opts.root, error: String(e) }));
      return true;
    } catch (e) {
      this.opts.log.warn("cannot watch the release tree; send SIGHUP after changes", { root: this.opts.root, error: String(e) });
      return false;
    }
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private changed(): void {
    const now = Date.now();
    const debounce = this.opts.debounceMs ?? 250;
    if (!this.timer) this.firstChangeAt = now;
    else clearTimeout(this.timer);
    const wait = Math.max(0, Math.min(debounce, this.firstChangeAt + (this.opts.maxWaitMs ?? 3000) - now));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.rescan();
    }, wait);
  }

  private async scanOnce(): Promise<ReleaseIndex> {
    let result: ScanResult;
    try {
      const previous = this.known ?? this.snapshot?.known;
      result = await scanReleaseTree(this.opts.root, { ...this.opts, signatures: this.signatures, previous });
    } catch (e) {
      const error = e instanceof ReleaseTreeUnreadable ? e.message : String((e as Error)?.stack ?? e);
      this.opts.log.error("release tree not scanned; keeping the releases already served", { error });
      return this.swapIn(this.index ?? ReleaseIndex.empty);
    }
    this.signatures.finishScan();
    this.report(result);
    this.scanned = true;
    this.known = knownOf(result);
    this.save(result);
    collectSoon();
    this.swapIn(result.index);
    this.opts.onScanned?.(result.index);
    return result.index;
  }

  private swapIn(index: ReleaseIndex): ReleaseIndex {
    const first = this.index === null;
    this.index = index;
    if (first) this.resolveFirst();
    return index;
  }

  private save(result: ScanResult): void {
    const file = this.opts.snapshotFile;
    if (!file) return;
    try {
      this.snapshot = saveSnapshot({ ...this.opts, file }, result, this.snapshot, this.known!);
    } catch (e) {
      // A read-only data directory only costs the next start a whole scan before it is ready.
      this.opts.log.warn("release index snapshot not written", { file, error: String((e as Error)?.message ?? e) });
    }
  }

  /** One warning per folder and reason, when it first appears (not again on every re-scan). */
  private report(result: ScanResult): void {
    const { log } = this.opts;
    const problems = new Map(result.problems.map((p) => [p.folder, p.reason]));
    for (const [folder, reason] of problems)
      if (this.lastProblems.get(folder) !== reason) log.warn("release folder skipped", { folder, reason });
    this.lastProblems = problems;
    if (this.opts.releaseKeys.size === 0 && result.stats.folders > 0 && !this.scanned)
      log.warn("no release public keys in the keys directory: manifest signatures are not checked");
    log.info("release index built", {
      root: this.opts.root,
      live: result.index.size,
      skipped: result.problems.length,
      reused: result.stats.reused,
      signaturesVerified: result.stats.verified,
      signaturesCached: result.stats.cached,
      ms: Math.round(result.stats.ms),
    });
  }
}
