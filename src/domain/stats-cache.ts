import type { Store } from "../store/types";
import { isoTime, type Clock } from "./clock";
import { KeyturnError } from "./errors";
import type { ReleaseControls } from "./releases/release-controls";
import type { ReleaseIndex } from "./releases/release-index";
import { collectStats, type Stats } from "./stats";

/**
 * A count of at most this many installations is not kept: the next caller counts again, so a small
 * site's figures are always current (issue 34 allows a stats request 50 ms of CPU at 300,000); a
 * count of rows rather than a time, so that a loaded machine does not change what is kept.
 */
export const STATS_INLINE_INSTALLATIONS = 10_000;
/** Figures older than this are counted again in the background; the ones there are answered meanwhile. */
export const STATS_REFRESH_MS = 30_000;
/** Figures are never answered older than this: a caller waits for a count instead. */
export const STATS_MAX_AGE_MS = 300_000;
/**
 * How long a caller waits for a count (real time) before it is told to ask again: a site's first
 * count hashes and stores every installation's rollout buckets, which outlasts an idle connection.
 */
export const STATS_WAIT_MS = 5_000;

/** Stats as answered: the figures and when they were counted. */
export interface CountedStats extends Stats {
  /** When these figures were counted (ISO 8601). */
  readonly counted: string;
  /** Seconds since then (at most STATS_MAX_AGE_MS / 1000 and a count's own time). */
  readonly ageSeconds: number;
}

interface StatsDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly controls: ReleaseControls;
  readonly index: ReleaseIndex | null;
}

interface Counted {
  readonly stats: Stats;
  /** When the count began (the answer's `counted`: its figures are at least this new). */
  readonly at: number;
  /** When it ended: the next count in the background starts STATS_REFRESH_MS after this, so counts never run back to back. */
  readonly ended: number;
  /** It counted at most STATS_INLINE_INSTALLATIONS: not worth keeping. */
  readonly cheap: boolean;
  /** What the figures were counted against: a new release index or control change counts again. */
  readonly index: ReleaseIndex | null;
  readonly controls: number;
}

/**
 * The figures of GET /admin/stats and the console's dashboard, counted off the request path
 * (issue 34): a count reads every installation (a slice at a time, collectStats), so each process
 * keeps the last one (unless it counted at most STATS_INLINE_INSTALLATIONS: then the next caller counts again)
 * and answers it while it is younger than STATS_REFRESH_MS; older, it still
 * answers it and starts one count in the background; only with none, one older than
 * STATS_MAX_AGE_MS, or one counted against another release index or other release controls, does a
 * caller wait. At most one count runs at a time.
 */
export class StatsCache {
  private last: Counted | null = null;
  private counting: { readonly index: ReleaseIndex | null; readonly controls: number; readonly done: Promise<Counted> } | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly waitMs = STATS_WAIT_MS,
    private readonly inlineInstallations = STATS_INLINE_INSTALLATIONS,
  ) {}

  async get(d: StatsDeps): Promise<CountedStats> {
    const now = this.clock();
    const controls = (await d.controls.current()).generation;
    const last = this.last;
    const usable = last !== null && !last.cheap && last.index === d.index && last.controls === controls && now - last.ended <= STATS_MAX_AGE_MS;
    if (!usable) return answer(await waited(this.count(d, controls), this.waitMs), this.clock());
    if (now - last.ended > STATS_REFRESH_MS) void this.count(d, controls).catch(() => undefined);
    return answer(last, now);
  }

  private count(d: StatsDeps, controls: number): Promise<Counted> {
    const running = this.counting;
    if (running?.index === d.index && running.controls === controls) return running.done;
    const entry: { index: ReleaseIndex | null; controls: number; done: Promise<Counted> } = { index: d.index, controls, done: Promise.resolve(null!) };
    entry.done = (async () => {
      // One count at a time: one against older releases or controls ends first.
      await running?.done.catch(() => undefined);
      try {
        const at = this.clock();
        const stats = await collectStats(d);
        const installations = stats.installations.reduce((n, i) => n + i.installations, 0);
        const counted = { stats, at, ended: this.clock(), cheap: installations <= this.inlineInstallations, index: d.index, controls };
        this.last = counted;
        return counted;
      } finally {
        if (this.counting === entry) this.counting = null;
      }
    })();
    this.counting = entry;
    return entry.done;
  }
}

/** The count, or `unavailable` (503, Retry-After) when it takes longer than STATS_WAIT_MS; it goes on either way. */
async function waited(count: Promise<Counted>, waitMs: number): Promise<Counted> {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const refusal = () => {
    const e = new KeyturnError("unavailable", `The stats are being counted; ask again in ${seconds} seconds.`);
    e.headers = { "retry-after": String(seconds) };
    return e;
  };
  // No wait at all: refused at once, the count going on.
  if (waitMs <= 0) {
    count.catch(() => undefined);
    throw refusal();
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(refusal()), waitMs);
  });
  try {
    return await Promise.race([count, late]);
  } finally {
    clearTimeout(timer);
  }
}

function answer(c: Counted, now: number): CountedStats {
  return { ...c.stats, counted: isoTime(c.at), ageSeconds: Math.max(0, Math.floor((now - c.at) / 1000)) };
}

/** One cache per site's records (every endpoint and page of a process shares it). */
const caches = new WeakMap<Store, StatsCache>();

/** Makes `cache` the one of `store`'s site (a test's own timings); the first caller makes one otherwise. */
export function keepStatsIn(store: Store, cache: StatsCache): void {
  caches.set(store, cache);
}

/** The stats of `d.store`'s site, counted at most STATS_MAX_AGE_MS ago (StatsCache). */
export function cachedStats(d: StatsDeps): Promise<CountedStats> {
  let cache = caches.get(d.store);
  if (!cache) caches.set(d.store, (cache = new StatsCache(d.clock)));
  return cache.get(d);
}
