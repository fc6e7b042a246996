import { isLane, type Variant } from "../../config/variants";
import type { AuditRecord, ReleaseControlOp, ReleaseControlRecord, ReleaseKey, Store } from "../../store/types";
import type { Clock } from "../clock";
import { KeyturnError } from "../errors";
import { newEvent } from "../events";
import type { Manifest } from "./manifest";
import type { ReleaseIndex } from "./release-index";
import { FULL, percentOf, thresholdOf } from "./rollout";
import { compareVersions } from "./version-order";

/** A lane's name in controls, events and stats: `product/channel/platform`, gamma `channel/platform`. */
export const laneName = (product: string | null, channel: string, platform: string): string =>
  product === null ? `${channel}/${platform}` : `${product}/${channel}/${platform}`;

/** The product, channel and platform a lane name stands for in this variant; null when it is not one. */
export function placeOfLane(variant: Variant, lane: string): { product: string | null; channel: string; platform: string } | null {
  const parts = lane.split("/");
  const withProduct = variant.products.length > 0;
  if (parts.length !== (withProduct ? 3 : 2)) return null;
  const [product, channel, platform] = withProduct ? parts : [null, ...parts];
  if (!channel || !platform || !isLane(variant, product ?? null, channel, platform)) return null;
  return { product: product ?? null, channel, platform };
}

/** The controls of every release as one process last read them. */
export interface ControlsView {
  /** Moves whenever a control changes (any process). */
  readonly generation: number;
  get(lane: string, version: string): ReleaseControlRecord | undefined;
  readonly all: readonly ReleaseControlRecord[];
}

const controlKey = (lane: string, version: string) => `${lane}\n${version}`;

function viewOf(generation: number, records: readonly ReleaseControlRecord[]): ControlsView {
  const byKey = new Map(records.map((r) => [controlKey(r.lane, r.version), r]));
  return { generation, all: records, get: (lane, version) => byKey.get(controlKey(lane, version)) };
}

/**
 * The share (as a threshold, rollout.ts) a release admits at `now` under its control: the manifest's
 * percent, or its ramp at the time elapsed since `released` less the time it stood halted (a halted
 * ramp stands at its share when halted; a resumed one goes on from there).
 */
export function thresholdNow(manifest: Manifest, control: ReleaseControlRecord | undefined, now: number): bigint {
  const rollout = manifest.rollout;
  if (rollout === null) return FULL;
  if ("percent" in rollout) return thresholdOf(rollout, 0);
  const at = control?.halted ?? now;
  return thresholdOf(rollout, at - manifest.released - (control?.haltedMs ?? 0));
}

/** What a control changed: the lead emits release.halted|resumed|withdrawn|restored when `changed`. */
export interface ControlChange {
  readonly changed: boolean;
  readonly control: ReleaseControlRecord;
  /** The release's share now, in percent (at a halt: the share it stands at); null when it is not in the index given. */
  readonly share: number | null;
}

/**
 * The release controls (halt, resume, withdraw, restore), kept in the records, and an in-memory view
 * of them for the update path: `current()` reads the records only when their generation moved
 * (Store.releaseControlsGeneration: on SQLite after a commit by any process; on PostgreSQL at most
 * once per poll interval), so every process sharing the records sees a change within a millisecond
 * (SQLite) or within the poll interval (PostgreSQL), without a query per request.
 */
const CONTROL_EVENTS = { halt: "release.halted", resume: "release.resumed", withdraw: "release.withdrawn", restore: "release.restored" } as const;

export class ReleaseControls {
  private view: ControlsView = viewOf(-1, []);
  private loading: Promise<ControlsView> | null = null;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly variant: Variant,
  ) {}

  async current(): Promise<ControlsView> {
    const generation = await this.store.releaseControlsGeneration();
    if (generation === this.view.generation) return this.view;
    this.loading ??= (async () => {
      try {
        // The list is read after the generation: it is at least as new as the generation it is filed under.
        const records = await this.store.listReleaseControls();
        if (generation !== this.view.generation) this.view = viewOf(generation, records);
        return this.view;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /**
   * An operator's control (CLI, admin API): refused with not_found, naming the releases the lane
   * has, unless the release exists here: live in `index` (when given), recorded as known by any
   * scan (known_releases: a withdrawn release whose folder was removed stays restorable), or
   * carrying a kept control. Nothing is written for a refused control.
   */
  async applyToKnown(op: ReleaseControlOp, lane: string, version: string, index: ReleaseIndex | null, audit?: AuditRecord): Promise<ControlChange> {
    const place = this.placeOf(lane, version);
    const versions = new Set<string>();
    for (const r of index?.releasesOf(place.product, place.channel, place.platform) ?? []) versions.add(r.manifest.version);
    for (const k of await this.store.listKnownReleases()) if (k.lane === lane) versions.add(k.version);
    for (const c of await this.store.listReleaseControls()) if (c.lane === lane) versions.add(c.version);
    if (!versions.has(version)) {
      const known = [...versions].sort((a, b) => compareVersions(b, a));
      throw new KeyturnError(
        "not_found",
        known.length > 0 ? `${lane} has no release ${version}; its releases: ${known.join(", ")}.` : `${lane} has no releases; nothing to ${op}.`,
      );
    }
    return this.apply(op, lane, version, index, audit);
  }

  private placeOf(lane: string, version: string): { product: string | null; channel: string; platform: string } {
    const place = placeOfLane(this.variant, lane);
    if (!place)
      throw new KeyturnError(
        "invalid_request",
        `lane must be ${this.variant.products.length > 0 ? "product/channel/platform" : "channel/platform"} of ${this.variant.name}.`,
      );
    if (typeof version !== "string" || !/^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/.test(version))
      throw new KeyturnError("invalid_request", "version must be a release version like 1.4.2.");
    return place;
  }

  /**
   * Applies one control to the release `version` of `lane` (a lane name of this variant), known
   * here or not; a halt made by a rule names it (`haltRule`: release-health.ts), and its event says it (`rule`). Operators' controls come through applyToKnown and a mirror keeps the vendor's
   * apart (store/mirror-state.ts): besides applyToKnown, only tests call this.
   * `index`, when given, supplies the share reported. When it changes anything, `audit` (the
   * caller's line) and the event release.halted|resumed|withdrawn|restored are written in the same
   * transaction.
   */
  async apply(
    op: ReleaseControlOp,
    lane: string,
    version: string,
    index: ReleaseIndex | null = null,
    audit?: AuditRecord,
    haltRule?: string,
  ): Promise<ControlChange> {
    const place = this.placeOf(lane, version);
    const key: ReleaseKey = { lane, version };
    const now = this.clock();
    const release = index?.releasesOf(place.product, place.channel, place.platform).find((r) => r.manifest.version === version);
    const shareOf = (control: ReleaseControlRecord) => (release ? percentOf(thresholdNow(release.manifest, control, now)) : null);
    const { changed, control } = await this.store.applyReleaseControl(
      key,
      op,
      now,
      {
        ...(audit ? { audit } : {}),
        event: (after) =>
          newEvent(CONTROL_EVENTS[op], { release: { lane, version }, share: shareOf(after), ...(after.haltRule ? { rule: after.haltRule } : {}) }, now),
      },
      haltRule,
    );
    return { changed, control, share: shareOf(control) };
  }
}
