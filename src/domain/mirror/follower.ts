import type { Logger } from "../../config/log";
import type { MirrorReplacement, MirrorStateStore } from "../../store/mirror-state";
import type { Clock } from "../clock";
import { changesOf } from "./changes";
import { FeedProblem, type EventsPage, type SnapshotPage } from "./feed-answer";
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
  readonly clock: Clock;
  /** [0, 1): the jitter of the backoff. */
  readonly random: () => number;
  readonly log: Logger;
  /** Called for every activation or license refused anew, so cached tokens are dropped at once. */
  readonly onRevoked: (match: { readonly activation?: string; readonly license?: string }) => void;
  readonly requestTimeoutMs?: number;
  /** Entries kept at most (revocations, expiries, release controls); a page or snapshot beyond is refused. */
  readonly maxEntries?: number;
}

export type PollOutcome =
  | { readonly ok: true; readonly applied: number; /** A full page came: there is more to read soon. */ readonly more: boolean }
  | { readonly ok: false; readonly problem: string };

/** Items asked for at a time (the feed's default; its maximum is 1,000). */
const PAGE_LIMIT = 500;
/** Longest wait between attempts while the vendor fails, however many times it has. */
const MAX_BACKOFF_MS = 5 * 60_000;
/** The wait between the pages of a backlog or a snapshot: at most 10 pages a second, whatever the vendor sends. */
export const PAGE_GAP_MS = 100;
/** What a mirror keeps at most unless told otherwise: some 100 MB of SQLite at the longest ids. */
export const DEFAULT_MAX_ENTRIES = 250_000;

/** A snapshot being read, page after page: applied only whole, so a mirror never serves half of one. */
interface SnapshotInProgress extends MirrorReplacement {
  readonly epoch: string;
  readonly next: string;
  readonly revocations: MirrorReplacement["revocations"][number][];
  readonly expiries: MirrorReplacement["expiries"][number][];
  readonly releases: MirrorReplacement["releases"][number][];
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

  constructor(private readonly deps: MirrorFollowerDeps) {
    deps.knowledge.load(deps.state.load(deps.of, deps.clock()));
    this.maxEntries = deps.maxEntries ?? DEFAULT_MAX_ENTRIES;
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
    knowledge.prune(now);
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
      log.warn("mirror feed refused: keeping what is known", { of: this.deps.of, problem: escapeControl(e.message, 300), failures: this.failures, cursor: after });
      return { ok: false, problem: e.message };
    }
  }

  private applyEvents(page: EventsPage): PollOutcome {
    const { knowledge, state, clock, log } = this.deps;
    const changes = changesOf(page.events, clock());
    const entries = knowledge.entriesWith(changes);
    if (entries > this.maxEntries) throw new FeedProblem(`applying the page would keep ${entries} entries, more than this mirror's bound of ${this.maxEntries}`);
    const syncedAt = clock();
    state.commit(changes, page.cursor, syncedAt);
    knowledge.applyPage(changes, page.cursor, syncedAt);
    for (const c of changes) {
      if (c.op === "revoke") this.deps.onRevoked(c.kind === "activation" ? { activation: c.id } : { license: c.id });
      else if (c.op === "expiry") this.deps.onRevoked({ license: c.licenseId });
    }
    if (page.received > 0) log.info("mirror feed applied", { events: page.received, applied: changes.length, cursor: page.cursor });
    return { ok: true, applied: changes.length, more: page.received >= PAGE_LIMIT };
  }

  private takeSnapshotPage(page: SnapshotPage, continuing: SnapshotInProgress | null): PollOutcome {
    const { knowledge, state, clock, log } = this.deps;
    // A vendor's feed fills every page of a snapshot but the last: a short one with more to come is not a feed.
    if (page.next !== null && page.received < PAGE_LIMIT)
      throw new FeedProblem(`a snapshot page of ${page.received} items announces more: implausible (pages are full but the last)`);
    const into: SnapshotInProgress =
      continuing && continuing.epoch === page.epoch ? continuing : { epoch: page.epoch, next: "", revocations: [], expiries: [], releases: [] };
    const held = into.revocations.length + into.expiries.length + into.releases.length + page.received;
    if (held > this.maxEntries) throw new FeedProblem(`the vendor's snapshot holds more than ${this.maxEntries} entries, this mirror's bound: refused`);
    into.revocations.push(...page.revocations);
    into.expiries.push(...page.expiries);
    into.releases.push(...page.releases);
    if (page.next !== null) {
      this.snapshot = { ...into, next: page.next };
      return { ok: true, applied: 0, more: true };
    }
    this.snapshot = null;
    const now = clock();
    state.replace(into, page.cursor, now);
    knowledge.load(state.load(this.deps.of, now));
    for (const r of into.revocations) this.deps.onRevoked(r.kind === "activation" ? { activation: r.id } : { license: r.id });
    for (const e of into.expiries) this.deps.onRevoked({ license: e.licenseId });
    log.info("mirror resynchronised from the vendor's snapshot", {
      of: this.deps.of,
      reason: escapeControl(page.reason, 20),
      revocations: into.revocations.length,
      expiries: into.expiries.length,
      releaseControls: into.releases.length,
      cursor: page.cursor,
    });
    return { ok: true, applied: held, more: false };
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
