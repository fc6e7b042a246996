import type { Store } from "../store/types";
import { isoTime, type Clock } from "./clock";
import { thresholdNow, laneName, type ReleaseControls } from "./releases/release-controls";
import type { ReleaseIndex } from "./releases/release-index";
import { bucketOf, FULL, percentOf } from "./releases/rollout";

const DAY_MS = 86_400_000;
/** The window of every figure: installations seen, activations per day, licenses expiring. */
export const STATS_DAYS = 30;
/** Installations of one lane counted for a rollout's reach (one SHA-256 each). */
const REACH_LIMIT = 200_000;
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
  /** Licenses (not revoked) expiring in the next STATS_DAYS days, soonest first. */
  readonly expiringLicenses: readonly { readonly id: string; readonly licensee: string; readonly organization: string; readonly expires: string }[];
}

/** The channel of a lane name (`product/channel/platform` or `channel/platform`). */
const channelOf = (lane: string) => {
  const parts = lane.split("/");
  return parts[parts.length - 2] ?? null;
};

/** GET /admin/stats and `keyturn stats`: adoption by version per lane, rollouts' reach, activations, expiring licenses. */
export async function collectStats(d: { store: Store; clock: Clock; controls: ReleaseControls; index: ReleaseIndex | null }): Promise<Stats> {
  const now = d.clock();
  const since = now - STATS_DAYS * DAY_MS;
  /** The first of the STATS_DAYS UTC days counted, today the last. */
  const firstDay = Math.floor(now / DAY_MS) * DAY_MS - (STATS_DAYS - 1) * DAY_MS;
  const [seen, perDay, expiring, controls, seats] = await Promise.all([
    d.store.installationsSeen(since),
    d.store.activationsPerDay(firstDay),
    d.store.licensesExpiring(now, now + STATS_DAYS * DAY_MS, EXPIRING_LIMIT),
    d.controls.current(),
    d.store.seatCounts(now),
  ]);

  const rollouts: Stats["rollouts"][number][] = [];
  const devicesByLane = new Map<string, Awaited<ReturnType<Store["devicesOnLane"]>>>();
  for (const r of d.index?.all ?? []) {
    const m = r.manifest;
    const lane = laneName(m.product, m.channel, m.platform);
    const control = controls.get(lane, m.version);
    if (m.rollout === null && control === undefined) continue;
    let devices = devicesByLane.get(lane);
    if (!devices) devicesByLane.set(lane, (devices = await d.store.devicesOnLane(lane, since, REACH_LIMIT)));
    const threshold = control?.withdrawn != null ? 0n : thresholdNow(m, control, now);
    const admitted =
      control?.withdrawn != null
        ? 0
        : threshold >= FULL
          ? devices.length
          : devices.filter((x) => x.kind === "staff" || bucketOf(x.deviceHash, lane, m.version) < threshold).length;
    rollouts.push({
      lane,
      version: m.version,
      share: percentOf(threshold),
      halted: control?.halted != null ? isoTime(control.halted) : null,
      withdrawn: control?.withdrawn != null ? isoTime(control.withdrawn) : null,
      seen: devices.length,
      admitted,
    });
  }

  const counts = new Map(perDay.map((c) => [c.day, c]));
  const activationsPerDay = Array.from({ length: STATS_DAYS }, (_, i) => {
    const day = firstDay + i * DAY_MS;
    const c = counts.get(day);
    return { day: isoTime(day).slice(0, 10), activations: c?.activations ?? 0, seatLimitRefusals: c?.seatLimitRefusals ?? 0 };
  });

  return {
    since: isoTime(since),
    installations: seen.map((s) => ({ ...s, channel: s.lane === null ? null : channelOf(s.lane) })),
    rollouts,
    activationsPerDay,
    seats,
    expiringLicenses: expiring.map((l) => ({ id: l.id, licensee: l.licensee, organization: l.organization, expires: isoTime(l.expires!) })),
  };
}
