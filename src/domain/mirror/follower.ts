import type { ReleaseControlOp } from "../../store/types";
import type { Logger } from "../../config/log";
import type { MirrorStateStore } from "../../store/mirror-state";
import type { Clock } from "../clock";
import { changesOf } from "./changes";
import { FeedProblem } from "./feed-answer";
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
  /** Applies a vendor's release control to this mirror's own records, so it serves as the vendor does. */
  readonly onReleaseControl?: (op: ReleaseControlOp, lane: string, version: string) => Promise<unknown>;
  readonly requestTimeoutMs?: number;
}

export type PollOutcome =
  | { readonly ok: true; readonly applied: number; /** A full page came: there is more to read at once. */ readonly more: boolean }
  | { readonly ok: false; readonly problem: string };

/** Events asked for at a time (the contract's default; its maximum is 1,000). */
const PAGE_LIMIT = 500;
/** Longest wait between attempts while the vendor fails, however many times it has. */
const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * Follows the vendor's feed: reads a page after the persisted cursor, checks it, applies it to the
 * mirror's records and knowledge in order (cursor included, in one transaction), and waits the poll
 * interval, or backs off with jitter while the vendor fails. A failed or refused page changes
 * nothing: the mirror keeps serving what it knew, and its staleness grows.
 */
/** The control a release event's verb stands for (release.published is no control). */
const CONTROL_OF: Readonly<Record<string, ReleaseControlOp>> = { halted: "halt", resumed: "resume", withdrawn: "withdraw", restored: "restore" };

export class MirrorFollower {
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;
  private lastProblem: string | null = null;
  private readonly stopping = new AbortController();

  constructor(private readonly d: MirrorFollowerDeps) {
    d.knowledge.load(d.state.load(d.of, d.clock()));
  }

  /** The release controls the vendor's feed reported (for the release holder to apply). */
  mirroredReleaseControls(): MirroredReleaseControl[] {
    return this.d.knowledge.mirroredReleaseControls();
  }

  /** Reads and applies one page. Never throws for a feed problem; returns it. */
  async pollOnce(): Promise<PollOutcome> {
    const { knowledge, state, clock, log } = this.d;
    const now = clock();
    state.prune(now);
    knowledge.prune(now);
    const after = knowledge.feedCursor;
    const limit = PAGE_LIMIT;
    try {
      const page = await fetchFeedPage({
        of: this.d.of,
        token: this.d.token,
        after,
        limit,
        timeoutMs: this.d.requestTimeoutMs ?? 10_000,
        signal: this.stopping.signal,
      });
      const changes = changesOf(page.events);
      const cursor = page.cursor ?? after;
      const syncedAt = clock();
      state.commit(changes, cursor, syncedAt);
      knowledge.applyPage(changes, cursor, syncedAt);
      for (const c of changes) {
        if (c.op === "revoke") this.d.onRevoked(c.kind === "activation" ? { activation: c.id } : { license: c.id });
        else if (c.op === "expiry") this.d.onRevoked({ license: c.licenseId });
        else if (c.op === "release" && Object.hasOwn(CONTROL_OF, c.state)) await this.d.onReleaseControl?.(CONTROL_OF[c.state]!, c.lane, c.version);
      }
      if (this.failures > 0 || this.lastProblem !== null) log.info("mirror feed answers again", { of: this.d.of, failedAttempts: this.failures });
      this.failures = 0;
      this.lastProblem = null;
      if (page.received > 0) log.info("mirror feed applied", { events: page.received, applied: changes.length, cursor });
      return { ok: true, applied: changes.length, more: page.received >= limit };
    } catch (e) {
      if (!(e instanceof FeedProblem)) throw e;
      if (this.stopping.signal.aborted) return { ok: false, problem: "stopped" };
      this.failures++;
      this.lastProblem = e.message;
      log.warn("mirror feed refused: keeping what is known", { of: this.d.of, problem: escapeControl(e.message, 300), failures: this.failures, cursor: after });
      return { ok: false, problem: e.message };
    }
  }

  /** The wait before the next poll: the interval after an answer, at once after a full page, else exponential backoff with jitter. */
  nextDelayMs(outcome: PollOutcome): number {
    if (outcome.ok) return outcome.more ? 0 : this.d.pollMs;
    const cap = Math.max(this.d.pollMs, Math.min(MAX_BACKOFF_MS, this.d.pollMs * 8));
    const base = Math.min(cap, this.d.pollMs * 2 ** Math.min(this.failures - 1, 20));
    return Math.round(base / 2 + this.d.random() * (base / 2));
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
          this.d.log.error("mirror follower failed", { error: escapeControl(String((e as Error)?.message ?? e), 300) });
          this.schedule(this.nextDelayMs({ ok: false, problem: "internal" }));
        },
      );
      this.running = run;
    }, ms);
  }
}
