import { KeyturnError } from "../errors";
import type { Logger } from "../../config/log";
import { dirname } from "node:path";
import { loadSnapshot, saveSnapshot, type LoadedSnapshot } from "./index-snapshot";
import { readFeedFile, type FeedFile } from "./feed-files";
import { identityIn, sameIdentity, type FileIdentity } from "./files";
import { InstallerHandles } from "./installer-handles";
import { ReleaseProblem } from "./problem";
import { InstallerVerifier } from "./installer-verification";
import { collectSoon } from "../collect-soon";
import { laneKey, ReleaseIndex, type KnownReleases, type Release } from "./release-index";
import { ReleaseTreeUnreadable, scanReleaseTree, type ScanOptions, type ScanResult } from "./scan";
import { SignatureCache } from "./signature-cache";
import { systemEvery, watchFailureReason, watchTree, type ChangeDetection, type Every, type WatchTree } from "./tree-watch";

/** How long after a start from the snapshot the tree is watched and scanned afresh. */
export const RESCAN_AFTER_SNAPSHOT_MS = 500;
/** How often the tree is scanned when it cannot be watched. */
export const RESCAN_EVERY_MS = 30_000;

export interface ReleaseHolderOptions extends Omit<ScanOptions, "hashInstallers" | "installers"> {
  readonly root: string;
  readonly log: Logger;
  /** Quiet time after the last change before a re-scan; a long copy still re-scans every maxWaitMs. */
  readonly debounceMs?: number;
  readonly maxWaitMs?: number;
  /** Where the last index is kept between starts (index-snapshot.ts); none when null or absent. */
  readonly snapshotFile?: string | null;
  /** The clock of `builtAt`. */
  readonly clock?: () => number;
  /** Installers verified against their manifest's sha256 (a fresh in-memory one when absent). */
  readonly installers?: InstallerVerifier;
  /** Injected by tests: the tree watch (inotify) and the timer of the periodic re-scans that replace it when it fails. */
  readonly watchTree?: WatchTree;
  readonly every?: Every;
  readonly rescanEveryMs?: number;
  /** Called with the index of each whole scan once it is swapped in (release.published: publications.ts). */
  readonly onScanned?: (index: ReleaseIndex) => void;
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
  private watcher: { close(): void } | null = null;
  private stopPolling: (() => void) | null = null;
  private detection: ChangeDetection = { mode: "none" };
  private readonly installers: InstallerVerifier;
  private readonly handles: InstallerHandles;
  /** Lanes with a release left out of the index now only because its installer is still being hashed. */
  private verifyingLanes: ReadonlySet<string> = new Set();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private firstChangeAt = 0;
  private closed = false;
  private readonly signatures: SignatureCache;
  private swappedAt: number | null = null;
  private scanned = false;
  private startVerifiedNow = false;
  private snapshot: LoadedSnapshot | null = null;
  /** The live releases of the index now, with their files: a scan takes those still the same files unread. */
  private known: KnownReleases | null = null;
  /** Folders the next scan reads again though their manifest, signature and installer did not change (a feed file did). */
  private readonly rereadFolders = new Set<string>();

  constructor(private readonly opts: ReleaseHolderOptions) {
    this.signatures = opts.signatures ?? SignatureCache.open(null);
    this.installers = opts.installers ?? InstallerVerifier.open(null);
    // A release whose installer was just hashed joins the index with the next (debounced) scan.
    this.installers.onSettled = () => this.changed();
    this.handles = new InstallerHandles({ verifiedSha512: (release, id) => this.verifiedSha512(release, id) }, undefined, opts.every);
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

  /** When the index now served was swapped in (ms since the epoch), or null before the first. */
  get builtAt(): number | null {
    return this.swappedAt;
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
      this.snapshot = loadSnapshot({ ...this.opts, file, signatures: this.signatures, installers: this.installers });
      if (this.snapshot) {
        // What the snapshot holds was verified before: a restart is ready with it at once.
        this.startVerifiedNow = true;
        this.swapIn(this.snapshot.index);
        this.opts.log.info("release index loaded from the snapshot", { releases: this.snapshot.index.size, ms: Math.round(performance.now() - started) });
      }
    }
    const scan = () => {
      if (opts.watch) this.watch();
      return this.rescan();
    };
    if (!this.snapshot) return scan();
    // Serving already: watching (a watch per directory, slow on a large tree) and the scan wait
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

  /**
   * Re-scans after changes under the root (debounced). When the tree cannot be watched (inotify's
   * max_user_watches exhausted: ENOSPC, at once or later), re-scans it every rescanEveryMs instead,
   * and says so in changeDetection (health shows it). Returns whether it is watched.
   */
  watch(): boolean {
    if (this.watcher || this.stopPolling) return this.watcher !== null;
    try {
      this.watcher = (this.opts.watchTree ?? watchTree)(
        this.opts.root,
        (filename) => {
          // rsync writes into hidden temporaries and renames them into place; the rename is the change.
          const name = filename.split(/[\\/]/).at(-1) ?? "";
          if (!name.startsWith(".")) this.changed();
        },
        (e) => this.watchFailed(e),
      );
      this.detection = { mode: "watch" };
      return true;
    } catch (e) {
      this.watchFailed(e);
      return false;
    }
  }

  /** How changes to the tree are noticed now. */
  get changeDetection(): ChangeDetection {
    return this.detection;
  }

  /**
   * Installers waiting to be hashed or being hashed; once none are, the lanes whose hashed release
   * still waits for the re-scan that serves it. Zero only when every release found is served.
   */
  get installersVerifying(): number {
    return this.installers.pending || this.verifyingLanes.size;
  }

  /**
   * Whether every installer the first whole scan found has been hashed and taken in (or the start
   * came from a snapshot, whose releases were verified): until then the site is not ready (/health
   * answers 503), so a client that waits for health gets its download.
   * Installers added later do not make a ready site unready; their lanes answer `unavailable`.
   */
  get startVerified(): boolean {
    return this.startVerifiedNow;
  }

  /**
   * Whether the lane has a release left out only because its installer is still being hashed. The
   * update path then answers `unavailable` (try again shortly) rather than `no_release` when the lane
   * has no verified release yet; when it has one, that one is served meanwhile.
   */
  verifying(product: string | null, channel: string, platform: string): boolean {
    return this.verifyingLanes.has(laneKey(product, channel, platform));
  }

  /** A path reading exactly the verified bytes of the release's installer, or null (it changed: a re-scan is started). */
  openInstaller(release: Release): string | null {
    return this.rescanUnless(this.handles.open(release), release);
  }

  /**
   * The path of the release's verified installer, or `unavailable` while it is being replaced: only
   * bytes hashed to the manifest's sha256 are ever sent, read through the descriptor that was checked.
   */
  verifiedInstaller(release: Release): string {
    const path = this.openInstaller(release);
    if (path === null) throw new KeyturnError("unavailable", "The installer is being replaced; try again shortly.");
    return path;
  }

  /** The verified installer's SHA-512 (base64), or null (it changed: a re-scan is started). */
  installerSha512(release: Release): string | null {
    return this.rescanUnless(this.handles.sha512(release), release);
  }

  /**
   * The verified SHA-512 of `release`'s installer when the file of `id` is the one verified: the
   * index's record when it is the file the release was read with (so the verifier need not be held
   * between scans: installer-verification.ts), else the verifier's (an installer replaced by one
   * verified since, or a snapshot's release).
   */
  private verifiedSha512(release: Release, id: FileIdentity): string | null {
    const files = this.index?.filesOf(release);
    const sha512 = this.index?.installerSha512Of(release);
    if (files && sha512 !== undefined && sameIdentity(identityIn(files, 2), id)) return sha512;
    return this.installers.sha512Of(id, release.manifest.sha256);
  }

  /** `found` as it is; null (the installer is not the verified one) also starts a re-scan. */
  private rescanUnless(found: string | null, release: Release): string | null {
    if (found === null) {
      this.opts.log.warn("installer on disk is not the verified one; re-scanning", { folder: release.folder });
      void this.rescan();
    }
    return found;
  }

  /**
   * A feed file of a release (its blockmap, its Tauri signature), read from its folder and checked
   * against the manifest's size and SHA-256 now; null when it no longer is that file (a re-scan is started).
   */
  readFeedFile(release: Release, file: FeedFile): Uint8Array | null {
    try {
      return readFeedFile(dirname(release.installerPath), file);
    } catch (e) {
      if (!(e instanceof ReleaseProblem)) throw e;
      this.opts.log.warn("feed file on disk is not the signed one; re-scanning", { folder: release.folder, reason: e.message });
      this.rereadFolders.add(release.folder);
      void this.rescan();
      return null;
    }
  }

  /** Once every installer queued for hashing has been hashed, a scan that takes them in. */
  async verified(): Promise<ReleaseIndex> {
    await this.installers.settled();
    return this.rescan();
  }

  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = null;
    this.stopPolling?.();
    this.stopPolling = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.handles.close();
  }

  private watchFailed(e: unknown): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.stopPolling) return;
    const everyMs = this.opts.rescanEveryMs ?? RESCAN_EVERY_MS;
    const reason = watchFailureReason(e);
    this.detection = { mode: "periodic", everyMs, reason };
    this.opts.log.warn("cannot watch the release tree; re-scanning it periodically", { root: this.opts.root, everySeconds: everyMs / 1000, reason });
    this.stopPolling = (this.opts.every ?? systemEvery)(everyMs, () => void this.rescan());
    // Changes made before the failure was noticed may have been missed.
    void this.rescan();
  }

  private changed(): void {
    if (this.closed) return;
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
      let previous = this.known ?? this.snapshot?.known;
      if (previous && this.rereadFolders.size > 0) {
        const [known, skip] = [previous, new Set(this.rereadFolders)];
        previous = { get: (folder) => (skip.has(folder) ? undefined : known.get(folder)) };
      }
      this.rereadFolders.clear();
      result = await scanReleaseTree(this.opts.root, { ...this.opts, signatures: this.signatures, installers: this.installers, previous });
    } catch (e) {
      const error = e instanceof ReleaseTreeUnreadable ? e.message : String((e as Error)?.stack ?? e);
      this.opts.log.error("release tree not scanned; keeping the releases already served", { error });
      return this.swapIn(this.index ?? ReleaseIndex.empty);
    }
    this.signatures.finishScan();
    this.installers.finishScan();
    this.verifyingLanes = result.verifying;
    this.report(result);
    this.scanned = true;
    if (this.installersVerifying === 0) this.startVerifiedNow = true;
    this.known = result.index.known;
    this.save(result);
    collectSoon();
    this.swapIn(result.index);
    this.opts.onScanned?.(result.index);
    return result.index;
  }

  private swapIn(index: ReleaseIndex): ReleaseIndex {
    const first = this.index === null;
    this.index = index;
    this.swappedAt = (this.opts.clock ?? Date.now)();
    if (first) this.resolveFirst();
    return index;
  }

  private save(result: ScanResult): void {
    const file = this.opts.snapshotFile;
    if (!file) return;
    try {
      this.snapshot = saveSnapshot({ ...this.opts, file }, result, this.snapshot);
    } catch (e) {
      // A read-only data directory only costs the next start a whole scan before it is ready.
      this.opts.log.warn("release index snapshot not written", { file, error: String((e as Error)?.message ?? e) });
    }
  }

  /** One warning per folder and reason, when it first appears (not again on every re-scan). */
  private report(result: ScanResult): void {
    const { log } = this.opts;
    const problems = new Map(result.problems.map((p) => [p.folder, p.reason]));
    for (const [folder, reason] of problems) if (this.lastProblems.get(folder) !== reason) log.warn("release folder skipped", { folder, reason });
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
      installersVerifying: this.installers.pending,
      ms: Math.round(result.stats.ms),
    });
  }
}
