import type { IdRange, InstallationCount, Store } from "../store/types";
import type { MeterTotal } from "../store/meter-types";
import type { TrialCounts } from "../store/trial-types";
import { isoTime, type Clock } from "./clock";
import { thresholdNow, laneName, type ReleaseControls } from "./releases/release-controls";
import type { ReleaseIndex } from "./releases/release-index";
import { reportsPerRelease, type ReleaseReports } from "./releases/install-report-figures";
import { bucketOf, FULL, percentOf } from "./releases/rollout";

const DAY_MS = 86_400_000;
/** The window of every figure: installations seen, activations per day, licenses expiring. */
export const STATS_DAYS = 30;
const EXPIRING_LIMIT = 1000;

export interface Stats {
  /** Start of the window (ISO 8601). */
  readonly since: string;
  /** Active installations seen in the window, by product, lane (channel, platform) and version. */
  readonly installations: readonly {
    readonly product: string | null;
    /** null: not seen reading an update manifest yet. */
    readonly lane: string | null;
    readonly channel: string | null;
    readonly version: string;
    readonly installations: number;
  }[];
  /** Releases with a rollout or a control: the share now and how many installations seen on the lane it admits now. */
  readonly rollouts: readonly {
    readonly lane: string;
    readonly version: string;
    readonly share: number;
    readonly halted: string | null;
    readonly withdrawn: string | null;
    readonly seen: number;
    readonly admitted: number;
  }[];
  /** Per UTC day of the window (every day, zeros included), oldest first. */
  readonly activationsPerDay: readonly { readonly day: string; readonly activations: number; readonly seatLimitRefusals: number }[];
  /** Seats held on licenses (not revoked) now: in use, and lapsed (a leased seat not seen within its lease, free to the next activation). */
  readonly seats: { readonly inUse: number; readonly lapsed: number };
  /**
   * Install outcome reports made in the window, per release (by lane, then version): installations
   * by the outcome of their latest report on it, in all and per UTC day.
   */
  readonly installReports: readonly ReleaseReports[];
  /** Licenses (not revoked) expiring in the next STATS_DAYS days, soonest first. */
  readonly expiringLicenses: readonly { readonly id: string; readonly licensee: string; readonly organization: string; readonly expires: string }[];
  /** Trials started, and converted by a bought key (docs/trials-and-meters.md). */
  readonly trials: TrialCounts;
  /** Metered use by meter name, over licences not revoked, in their current periods. */
  readonly meters: readonly MeterTotal[];
}

/** The channel of a lane name (`product/channel/platform` or `channel/platform`). */
const channelOf = (lane: string) => {
  const parts = lane.split("/");
  return parts[parts.length - 2] ?? null;
};

/**
 * How long one slice may hold the thread: the rows of a slice are sized to it as the count goes
 * (between MIN_SLICE_ROWS and MAX_SLICE_ROWS), so a loaded machine gets smaller slices. At 4,000
 * rows a slice (about 40 ms of CPU with 12 ramping releases) `entitlements/current` p99 went from
 * 48-89 to 384-450 ms while a count ran, on a machine shared with six other sessions (bench/README.md).
 */
const SLICE_MS = 2;
const MIN_SLICE_ROWS = 50;
const MAX_SLICE_ROWS = 4000;
const FIRST_SLICE_ROWS = 250;
/** Installations hashed between two turns of the event loop (about 2 ms). */
const HASH_BATCH = 2000;
/** Stored buckets of releases no longer counted, dropped per pass (the rest at the next). */
const DROP_LIMIT = 20_000;

/** Lets the requests waiting behind a slice run before the next one. */
const yieldToRequests = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Calls `count` for each slice of `table`, one event-loop turn each, sized so that a slice takes about SLICE_MS. */
async function eachSlice(store: Store, table: "activations" | "licenses", count: (range: IdRange) => Promise<void>): Promise<void> {
  let from: string | null = null;
  let rows = FIRST_SLICE_ROWS;
  for (;;) {
    const started = performance.now();
    const to = await store.sliceEnd(table, from, rows);
    await count({ from, to });
    if (to === null) return;
    from = to;
    const took = performance.now() - started;
    // At most twice as many rows as the last slice, as many fewer as it took too long.
    rows = Math.round(Math.min(MAX_SLICE_ROWS, rows * 2, Math.max(MIN_SLICE_ROWS, (rows * SLICE_MS) / Math.max(took, 0.01))));
    await yieldToRequests();
  }
}

/**
 * GET /admin/stats, the console's dashboard and `keyturn stats`: adoption by version per lane,
 * rollouts' reach, activations, expiring licenses. Counted in the records a slice at a time (the
 * requests of other callers run between slices); an installation's rollout bucket is hashed the
 * first time it is counted for a release and stored (Store.rolloutReachIn), so a count compares
 * stored integers.
 */
export async function collectStats(d: { store: Store; clock: Clock; controls: ReleaseControls; index: ReleaseIndex | null }): Promise<Stats> {
  const now = d.clock();
  const since = now - STATS_DAYS * DAY_MS;
  /** The first of the STATS_DAYS UTC days counted, today the last. */
  const firstDay = Math.floor(now / DAY_MS) * DAY_MS - (STATS_DAYS - 1) * DAY_MS;
  const controls = await d.controls.current();

  const releases = (d.index?.all ?? []).flatMap((r) => {
    const m = r.manifest;
    const lane = laneName(m.product, m.channel, m.platform);
    const control = controls.get(lane, m.version);
    if (m.rollout === null && control === undefined) return [];
    const threshold = control?.withdrawn != null ? 0n : thresholdNow(m, control, now);
    return [{ lane, version: m.version, control, threshold, ramps: m.rollout !== null, seen: 0, admitted: 0 }];
  });
  // Counted from stored buckets unless every installation or none is admitted; a withdrawn
  // release keeps its buckets (it may be restored).
  const isCounted = (r: (typeof releases)[number]) => r.control?.withdrawn == null && r.threshold < FULL;
  const bucketed = releases.filter((r) => isCounted(r) || (r.ramps && r.control?.withdrawn != null));
  // Without a release index (`keyturn stats` with the tree unreadable) nothing is known to be over:
  // the stored buckets stay.
  const { numbers } = d.index === null ? { numbers: [] } : await d.store.rolloutReleaseNumbers(bucketed, DROP_LIMIT);
  const counted = bucketed.flatMap((r, i) => (isCounted(r) ? [{ release: r, query: { no: numbers[i]!, lane: r.lane, threshold: r.threshold } }] : []));
  const whole = releases.filter((r) => !counted.some((c) => c.release === r));
  const wholeLanes = new Map(whole.map((r) => [r.lane, 0]));

  const seen = new Map<string, InstallationCount>();
  await eachSlice(d.store, "activations", async (range) => {
    for (const c of await d.store.installationsSeenIn(range, since)) {
      const key = JSON.stringify([c.product, c.lane, c.version]);
      const known = seen.get(key);
      seen.set(key, known ? { ...known, installations: known.installations + c.installations } : c);
      if (c.lane !== null && wholeLanes.has(c.lane)) wholeLanes.set(c.lane, wholeLanes.get(c.lane)! + c.installations);
    }
    const reaches = await d.store.rolloutReachIn(
      range,
      counted.map((c) => c.query),
      since,
    );
    for (const [i, { release, query }] of counted.entries()) {
      const reach = reaches[i]!;
      release.seen += reach.seen;
      release.admitted += reach.admitted;
      // PostgreSQL answers the whole table as one slice: the hashing is paced here instead.
      for (let at = 0; at < reach.unbucketed.length; at += HASH_BATCH) {
        if (at > 0) await yieldToRequests();
        const buckets = reach.unbucketed
          .slice(at, at + HASH_BATCH)
          .map((x) => ({ activationId: x.activationId, bucket: bucketOf(x.deviceHash, release.lane, release.version) }));
        await d.store.storeRolloutBuckets(query.no, buckets);
        release.admitted += buckets.filter((b) => b.bucket < release.threshold).length;
      }
    }
  });
  for (const r of whole) {
    r.seen = wholeLanes.get(r.lane)!;
    r.admitted = r.threshold >= FULL ? r.seen : 0;
  }

  let seats = { inUse: 0, lapsed: 0 };
  await eachSlice(d.store, "licenses", async (range) => {
    const part = await d.store.seatCountsIn(range, now);
    seats = { inUse: seats.inUse + part.inUse, lapsed: seats.lapsed + part.lapsed };
  });

  const activationsPerDay: Stats["activationsPerDay"][number][] = [];
  for (let i = 0; i < STATS_DAYS; i++) {
    const day = firstDay + i * DAY_MS;
    const c = await d.store.activationsOnDay(day);
    activationsPerDay.push({ day: isoTime(day).slice(0, 10), activations: c?.activations ?? 0, seatLimitRefusals: c?.seatLimitRefusals ?? 0 });
  }
  const expiring = await d.store.licensesExpiring(now, now + STATS_DAYS * DAY_MS, EXPIRING_LIMIT);
  const [trials, meters] = await Promise.all([d.store.trialCounts(), d.store.meterTotals(now)]);
  const installReports = reportsPerRelease(await d.store.installReportsPerDay(since));

  return {
    since: isoTime(since),
    installations: [...seen.values()].sort(byLane).map((s) => ({ ...s, channel: s.lane === null ? null : channelOf(s.lane) })),
    rollouts: releases.map((r) => ({
      lane: r.lane,
      version: r.version,
      share: percentOf(r.threshold),
      halted: r.control?.halted != null ? isoTime(r.control.halted) : null,
      withdrawn: r.control?.withdrawn != null ? isoTime(r.control.withdrawn) : null,
      seen: r.seen,
      admitted: r.admitted,
    })),
    activationsPerDay,
    seats,
    installReports,
    expiringLicenses: expiring.map((l) => ({ id: l.id, licensee: l.licensee, organization: l.organization, expires: isoTime(l.expires!) })),
    trials,
    meters,
  };
}

/** The records' order of installationsSeen: lanes first (by name), then product and version. */
function byLane(a: InstallationCount, b: InstallationCount): number {
  return (
    Number(a.lane === null) - Number(b.lane === null) ||
    compareText(a.lane ?? "", b.lane ?? "") ||
    compareText(a.product ?? "", b.product ?? "") ||
    compareText(a.version, b.version)
  );
}
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
