import type { Logger } from "../../config/log";
import { MirrorBoundError, type MirrorStateStore } from "../../store/mirror-state";
import type { ReleaseControlRecord } from "../../store/types";
import type { KeyHolder } from "../key-holder";
import type { Clock } from "../clock";
import { changesOf } from "./changes";
import { FeedProblem, type EventsPage, type FeedSite, type SnapshotPage } from "./feed-answer";
import { fetchFeedPage } from "./feed-client";
import type { MirroredReleaseControl, MirrorKnowledge } from "./knowledge";
import { escapeControl } from "../../config/text";

export interface MirrorFollowerDeps {
  /** The vendor's address and admin token (feed:read). */
  readonly of: string;
  readonly token: string;
  readonly pollMs: number;
  readonly state: MirrorStateStore;
  readonly knowledge: MirrorKnowledge;
  /** Taught the vendor's license public keys as the feed publishes them. */
  readonly keys: KeyHolder;
  readonly clock: Clock;
  /** [0, 1): the jitter of the backoff. */
  readonly random: () => number;
  readonly log: Logger;
  /** Called for every activation or license refused anew, so cached tokens are dropped at once. */
  readonly onRevoked: (match: { readonly activation?: string; readonly license?: string }) => void;
  /** Called when a snapshot replaced what was known: cached tokens it refuses are dropped. */
  readonly onReplaced: () => void;
  /** Called when a key the vendor published before is gone: every cached token is checked again. */
  readonly onKeysRemoved: () => void;
  readonly requestTimeoutMs?: number;
  /**
   * Entries kept at most (revocations, expiries, release controls; --mirror-max-entries): past it
   * the page or snapshot is refused and bearer requests answer 503. Revocations are looked up on
   * disk, not held in memory, so this bounds the SQLite file (some 130 bytes an entry).
   */
  readonly maxEntries: number;
}

export type PollOutcome =
  | { readonly ok: true; readonly applied: number /** A full page came: there is more to read soon. */; readonly more: boolean }
  | { readonly ok: false; readonly problem: string };

/** Items asked for at a time (the feed's default; its maximum is 1,000). */
const PAGE_LIMIT = 500;
/** Longest wait between attempts while the vendor fails, however many times it has. */
const MAX_BACKOFF_MS = 5 * 60_000;
/** The wait between the pages of a backlog or a snapshot: at most 10 pages a second, whatever the vendor sends. */
export const PAGE_GAP_MS = 100;
/** Release controls a snapshot may hold (kept in memory while its pages are read). */
const MAX_SNAPSHOT_RELEASES = 100_000;

/** A snapshot being read, page after page: staged on disk and applied only whole, so a mirror never serves half of one. */
interface SnapshotInProgress {
  readonly epoch: string;
  readonly next: string;
  /** Items staged so far. */
  readonly held: number;
  readonly releases: Omit<ReleaseControlRecord, "updated">[];
}

/**
 * Follows the vendor's feed: reads a page after the persisted cursor, checks it, applies it to the
 * mirror's records and knowledge in order (release controls and cursor included, in one
 * transaction), and waits the poll interval, or backs off with jitter while the vendor fails. When
 * the vendor answers a snapshot (no cursor yet, or one of other records, beyond its newest event,
 * or behind its retention), the mirror reads it whole, then replaces what it knew with it in one
 * transaction. A failed or refused page changes nothing: the mirror keeps serving what it knew,
 * its staleness grows and /health says why.
 */
export class MirrorFollower {
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;
  private lastProblem: string | null = null;
  private snapshot: SnapshotInProgress | null = null;
  private readonly stopping = new AbortController();
  private readonly maxEntries: number;

  /** Settles once the vendor's keys kept from an earlier run are held again. */
  readonly keysLoaded: Promise<void>;

  constructor(private readonly deps: MirrorFollowerDeps) {
    const loaded = deps.state.load(deps.of, deps.clock());
    deps.knowledge.load(loaded);
    this.keysLoaded = deps.keys.learn(loaded.vendorKeys).then(() => undefined);
    this.maxEntries = deps.maxEntries;
  }

  /** The release controls the vendor's feed reported (for the release holder to apply). */
  mirroredReleaseControls(): MirroredReleaseControl[] {
    return this.deps.knowledge.mirroredReleaseControls();
  }

  /** Reads and applies one page. Never throws for a feed problem; returns it. */
  async pollOnce(): Promise<PollOutcome> {
    const { knowledge, state, clock, log } = this.deps;
    const now = clock();
    state.prune(now);
    const after = knowledge.feedCursor;
    const continuing = this.snapshot;
    try {
      const page = await fetchFeedPage({
        of: this.deps.of,
        token: this.deps.token,
        after: continuing ? null : after,
        snapshot: continuing?.next ?? null,
        limit: PAGE_LIMIT,
        timeoutMs: this.deps.requestTimeoutMs ?? 10_000,
        signal: this.stopping.signal,
        now,
      });
      const outcome = page.mode === "snapshot" ? this.takeSnapshotPage(page, continuing) : this.applyEvents(page);
      await this.followSite(page.site);
      if (this.failures > 0 || this.lastProblem !== null) log.info("mirror feed answers again", { of: this.deps.of, failedAttempts: this.failures });
      this.failures = 0;
      this.lastProblem = null;
      knowledge.noteProblem(null);
      return outcome;
    } catch (e) {
      if (!(e instanceof FeedProblem)) throw e;
      if (this.stopping.signal.aborted) return { ok: false, problem: "stopped" };
      // A snapshot is read again from its start: its pages are kept in memory only until applied.
      this.snapshot = null;
      this.failures++;
      this.lastProblem = e.message;
      knowledge.noteProblem(escapeControl(e.message, 300));
      log.warn("mirror feed refused: keeping what is known", {
        of: this.deps.of,
        problem: escapeControl(e.message, 300),
        failures: this.failures,
        cursor: after,
      });
      return { ok: false, problem: e.message };
    }
  }

  private applyEvents(page: EventsPage): PollOutcome {
    const { knowledge, state, clock, log } = this.deps;
    const changes = changesOf(page.events, clock());
    const syncedAt = clock();
    try {
      state.commit(changes, page.cursor, syncedAt, this.maxEntries);
    } catch (e) {
      if (e instanceof MirrorBoundError)
        throw this.overflowed(`applying the page would keep ${e.entries} entries, more than this mirror's bound of ${e.bound}`);
      throw e;
    }
    knowledge.noteOverflow(null);
    knowledge.applyPage(changes, page.cursor, syncedAt);
    for (const c of changes) {
      if (c.op === "revoke") this.deps.onRevoked(c.kind === "activation" ? { activation: c.id } : { license: c.id });
      else if (c.op === "expiry") this.deps.onRevoked({ license: c.licenseId });
    }
    if (page.received > 0) log.info("mirror feed applied", { events: page.received, applied: changes.length, cursor: page.cursor });
    return { ok: true, applied: changes.length, more: page.received >= PAGE_LIMIT };
  }

  /**
   * The bound was hit: what the vendor revoked can no longer all be kept, so the mirror cannot tell
   * a good token from a revoked one and refuses every bearer request (503) until a page fits again
   * (revocations are forgotten as their tokens expire) or the bound is raised.
   */
  private overflowed(problem: string): FeedProblem {
    this.deps.knowledge.noteOverflow(
      `its vendor's feed holds more revocations than this mirror's bound of ${this.maxEntries} entries (--mirror-max-entries) lets it keep`,
    );
    return new FeedProblem(`${problem}: bearer requests answer 503 until it fits`);
  }

  private takeSnapshotPage(page: SnapshotPage, continuing: SnapshotInProgress | null): PollOutcome {
    const { knowledge, state, clock, log } = this.deps;
    // A vendor's feed fills every page of a snapshot but the last: a short one with more to come is not a feed.
    if (page.next !== null && page.received < PAGE_LIMIT)
      throw new FeedProblem(`a snapshot page of ${page.received} items announces more: implausible (pages are full but the last)`);
    const first = !(continuing && continuing.epoch === page.epoch);
    const held = (first ? 0 : continuing!.held) + page.received;
    const tooMany = () => this.overflowed(`the vendor's snapshot holds more than ${this.maxEntries} entries, this mirror's bound: refused`);
    if (held > this.maxEntries) throw tooMany();
    try {
      state.stage({ revocations: page.revocations, expiries: page.expiries }, first, this.maxEntries);
    } catch (e) {
      if (e instanceof MirrorBoundError) throw tooMany();
      throw e;
    }
    const releases = [...(first ? [] : continuing!.releases), ...page.releases];
    // Release controls are held in memory until the last page: a vendor has a few per lane, never this many.
    if (releases.length > MAX_SNAPSHOT_RELEASES) throw new FeedProblem(`a snapshot of more than ${MAX_SNAPSHOT_RELEASES} release controls is implausible`);
    if (page.next !== null) {
      this.snapshot = { epoch: page.epoch, next: page.next, held, releases };
      return { ok: true, applied: 0, more: true };
    }
    this.snapshot = null;
    const now = clock();
    state.replace(releases, page.cursor, now);
    knowledge.load(state.load(this.deps.of, now));
    knowledge.noteOverflow(null);
    this.deps.onReplaced();
    log.info("mirror resynchronised from the vendor's snapshot", {
      of: this.deps.of,
      reason: escapeControl(page.reason, 20),
      entries: state.entries(),
      releaseControls: releases.length,
      cursor: page.cursor,
    });
    return { ok: true, applied: held, more: false };
  }

  /** The vendor's lanes (for /health) and its license public keys, learnt and kept for a restart with the vendor away. */
  private async followSite(site: FeedSite | null): Promise<void> {
    if (site === null) return;
    const { knowledge, keys, state, clock, log } = this.deps;
    knowledge.noteVendorSite(site);
    const published = site.keys.filter((k) => keys.learnable(k.kid)).map(({ kid, spki }) => ({ kid, spki }));
    const { added, removed } = await keys.learn(published);
    if (added.length === 0 && removed.length === 0) return;
    state.setVendorKeys(published, clock());
    if (removed.length > 0) this.deps.onKeysRemoved();
    log.info("mirror follows its vendor's public keys", { of: this.deps.of, added, removed });
  }

  /** The wait before the next poll: the interval after an answer, at once after a full page, else exponential backoff with jitter. */
  nextDelayMs(outcome: PollOutcome): number {
    if (outcome.ok) return outcome.more ? PAGE_GAP_MS : this.deps.pollMs;
    const cap = Math.max(this.deps.pollMs, Math.min(MAX_BACKOFF_MS, this.deps.pollMs * 8));
    const base = Math.min(cap, this.deps.pollMs * 2 ** Math.min(this.failures - 1, 20));
    return Math.round(base / 2 + this.deps.random() * (base / 2));
  }

  /** Polls now, then on its own schedule until stop(). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops polling for good, abandoning a feed request in flight (a slow vendor does not hold up shutdown). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      const run = this.pollOnce().then(
        (outcome) => this.schedule(this.nextDelayMs(outcome)),
        (e: unknown) => {
          // Not a feed problem: the mirror's own records failed. Keep serving; try again later.
          this.failures++;
          this.snapshot = null;
          const error = escapeControl(String((e as Error)?.message ?? e), 300);
          this.deps.knowledge.noteProblem(`the mirror's own records failed: ${error}`);
          this.deps.log.error("mirror follower failed", { error });
          this.schedule(this.nextDelayMs({ ok: false, problem: "internal" }));
        },
      );
      this.running = run;
    }, ms);
  }
}
