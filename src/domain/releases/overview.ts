import { isoTime, type Clock } from "../clock";
import { feedsOffered } from "./feed-formats";
import { laneName, thresholdNow, type ReleaseControls } from "./release-controls";
import type { ReleaseIndex } from "./release-index";
import { percentOf, type Rollout } from "./rollout";

export interface ReleaseOverview {
  readonly lanes: readonly {
    readonly lane: string;
    /** Live releases, newest first, each with its rollout state now. */
    readonly releases: readonly {
      readonly version: string;
      readonly released: string;
      readonly folder: string;
      readonly installer: string;
      readonly size: number;
      readonly sha256: string;
      readonly rollout: Rollout | null;
      /** Percent of installations admitted now (0 when withdrawn). */
      readonly share: number;
      readonly halted: string | null;
      /** The rule that halted it by itself (rollout autoHalt, with its figures); null when a person halted it or it runs. */
      readonly haltRule: string | null;
      readonly withdrawn: string | null;
      /** The existing updaters' feeds that offer it (feedsOffered). */
      readonly feeds: readonly string[];
    }[];
  }[];
  /** Controls of releases not (or no longer) in the tree: kept, and applied should they come back. */
  readonly otherControls: readonly { readonly lane: string; readonly version: string; readonly halted: string | null; readonly withdrawn: string | null }[];
  readonly skipped: readonly { readonly folder: string; readonly reason: string }[];
}

/** GET /admin/releases: every lane's live releases with their rollout state, and the folders skipped with why. */
export async function releaseOverview(d: {
  index: ReleaseIndex;
  skipped: ReadonlyMap<string, string>;
  controls: ReleaseControls;
  clock: Clock;
}): Promise<ReleaseOverview> {
  const controls = await d.controls.current();
  const now = d.clock();
  const lanes = new Map<string, ReleaseOverview["lanes"][number]["releases"][number][]>();
  const listed = new Set<string>();
  for (const r of d.index.all) {
    const m = r.manifest;
    const lane = laneName(m.product, m.channel, m.platform);
    const c = controls.get(lane, m.version);
    listed.add(`${lane}\n${m.version}`);
    let list = lanes.get(lane);
    if (!list) lanes.set(lane, (list = []));
    list.push({
      version: m.version,
      released: isoTime(m.released),
      folder: r.folder,
      installer: m.installer,
      size: m.size,
      sha256: m.sha256,
      rollout: m.rollout,
      share: c?.withdrawn != null ? 0 : percentOf(thresholdNow(m, c, now)),
      halted: c?.halted != null ? isoTime(c.halted) : null,
      haltRule: c?.halted != null ? (c.haltRule ?? null) : null,
      withdrawn: c?.withdrawn != null ? isoTime(c.withdrawn) : null,
      feeds: feedsOffered(m),
    });
  }
  return {
    lanes: [...lanes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([lane, releases]) => ({ lane, releases })),
    otherControls: controls.all
      .filter((c) => !listed.has(`${c.lane}\n${c.version}`) && (c.halted !== null || c.withdrawn !== null))
      .map((c) => ({
        lane: c.lane,
        version: c.version,
        halted: c.halted === null ? null : isoTime(c.halted),
        withdrawn: c.withdrawn === null ? null : isoTime(c.withdrawn),
      })),
    skipped: [...d.skipped].map(([folder, reason]) => ({ folder, reason })),
  };
}
