import { PLATFORMS, type Variant } from "../../config/variants";
import type { EntitlementKind } from "../../store/types";
import type { Clock } from "../clock";
import { thresholdNow, laneName, type ControlsView, type ReleaseControls } from "./release-controls";
import { laneKey, newestFirst, type Release, type ReleaseIndex, type ServedRelease } from "./release-index";
import { admittedAfterMs, bucketOf, FULL, percentOf } from "./rollout";

/** Who asks, as the entitlement token says: its device hash (`dev`) and kind (staff are always admitted). */
export interface Installation {
  readonly dev: string;
  readonly kind: EntitlementKind;
}

/** One installation's choice in a lane: the position of the release it is served (-1: none), and until when that holds. */
interface Choice {
  readonly at: number;
  /** The choice holds before this time (a ramp that admits the installation later); Infinity: until the index or the controls change. */
  readonly until: number;
}

/** A lane of one index under one generation of the controls. */
interface LaneState {
  readonly lane: string;
  readonly releases: readonly Release[];
  /** Whether any release of the lane has a rollout or a control: if not, every installation gets the newest. */
  readonly conditional: boolean;
  /** Choices by device hash (`\u0000staff` for staff). */
  readonly choices: Map<string, Choice>;
}

/** Choices kept per lane before the lane's map is emptied (a choice costs one SHA-256 per release passed over to make again). */
const CHOICES_PER_LANE = 100_000;
const STAFF = "\u0000staff";

/** A lane's release not yet rolled out to an installation (the newest that is not withdrawn). */
export interface NotYetAvailable {
  readonly release: Release;
  /** The share of installations it admits now, in percent. */
  readonly share: number;
}

export interface ReleaseListing {
  /** What the installation may install: in each lane the release it is served and every older one not withdrawn; newest first. */
  readonly releases: readonly Release[];
  /** Per lane, the newest release that exists but is not rolled out to this installation yet. */
  readonly notYetAvailable: readonly NotYetAvailable[];
  /** True when the listing is the same for every installation with these channels (no rollout or control in its lanes), so it may be cached. */
  readonly shared: boolean;
  /** The controls' generation the listing was made under (part of a cache key). */
  readonly generation: number;
}

/**
 * Which release each installation is served (design.md "Staged rollouts"): in a lane, the newest
 * live release that is not withdrawn and admits the installation (u < share, rollout.ts), else the
 * one before it, and so on.
 *
 * Per request the work is kept small: lanes with no rollout and no control (the usual case) answer
 * the newest release with no hashing; otherwise an installation's choice is made once (one SHA-256
 * per release passed over) and kept per (index, controls generation, lane, device hash) until the
 * index or the controls change, or a ramp comes to admit it (the choice's `until`).
 */
export class ReleaseSelection {
  private cache = new WeakMap<ReleaseIndex, { generation: number; lanes: Map<string, LaneState> }>();

  constructor(
    private readonly variant: Variant,
    readonly controls: ReleaseControls,
    private readonly clock: Clock,
  ) {}

  private laneState(index: ReleaseIndex, controls: ControlsView, product: string | null, channel: string, platform: string): LaneState {
    let entry = this.cache.get(index);
    if (!entry || entry.generation !== controls.generation) this.cache.set(index, (entry = { generation: controls.generation, lanes: new Map() }));
    const key = laneKey(product, channel, platform);
    let state = entry.lanes.get(key);
    if (!state) {
      const lane = laneName(product, channel, platform);
      const releases = index.releasesOf(product, channel, platform);
      const conditional = releases.some((r) => r.manifest.rollout !== null || controls.get(lane, r.manifest.version) !== undefined);
      entry.lanes.set(key, (state = { lane, releases, conditional, choices: new Map() }));
    }
    return state;
  }

  private choose(state: LaneState, controls: ControlsView, who: Installation, now: number): Choice {
    let until = Infinity;
    for (let at = 0; at < state.releases.length; at++) {
      const r = state.releases[at]!;
      const control = controls.get(state.lane, r.manifest.version);
      if (control?.withdrawn != null) continue;
      if (who.kind === "staff") return { at, until };
      const threshold = thresholdNow(r.manifest, control, now);
      if (threshold >= FULL) return { at, until };
      const bucket = bucketOf(who.dev, state.lane, r.manifest.version);
      if (bucket < threshold) return { at, until };
      const rollout = r.manifest.rollout!;
      const after = control?.halted == null ? admittedAfterMs(rollout, bucket) : null;
      if (after !== null) until = Math.min(until, r.manifest.released + (control?.haltedMs ?? 0) + after);
    }
    return { at: -1, until };
  }

  private choiceOf(state: LaneState, controls: ControlsView, who: Installation): Choice {
    if (!state.conditional) return { at: state.releases.length > 0 ? 0 : -1, until: Infinity };
    const id = who.kind === "staff" ? STAFF : who.dev;
    const now = this.clock();
    let choice = state.choices.get(id);
    if (!choice || now >= choice.until) {
      choice = this.choose(state, controls, who, now);
      if (state.choices.size >= CHOICES_PER_LANE) state.choices.clear();
      state.choices.set(id, choice);
    }
    return choice;
  }

  /**
   * The release (with its manifest and signature bytes) served to this installation on a lane, or
   * null when none admits it (no_release). A release whose files no longer read as live is passed
   * over like a withdrawn one.
   */
  async served(index: ReleaseIndex, who: Installation, product: string | null, channel: string, platform: string): Promise<ServedRelease | null> {
    const controls = await this.controls.current();
    const state = this.laneState(index, controls, product, channel, platform);
    const { at } = this.choiceOf(state, controls, who);
    if (at < 0) return null;
    const chosen = index.withBytes(state.releases[at]!);
    if (chosen) return chosen;
    // Rare (files changed since the scan): the older releases, as they come, until one reads.
    for (let i = at + 1; i < state.releases.length; i++) {
      const r = state.releases[i]!;
      if (controls.get(state.lane, r.manifest.version)?.withdrawn != null) continue;
      const bytes = index.withBytes(r);
      if (bytes) return bytes;
    }
    return null;
  }

  /**
   * Whether this installation may download `release`'s installer: never a withdrawn release's; else
   * only the release it is served on that lane or an older one, so manifest, signature and installer
   * answers agree (an installation outside a rollout cannot fetch the release it is not offered).
   */
  async installerAllowed(index: ReleaseIndex, who: Installation, release: Release): Promise<boolean> {
    const m = release.manifest;
    const controls = await this.controls.current();
    const state = this.laneState(index, controls, m.product, m.channel, m.platform);
    if (controls.get(state.lane, m.version)?.withdrawn != null) return false;
    const { at } = this.choiceOf(state, controls, who);
    return at >= 0 && newestFirst(release, state.releases[at]!) >= 0;
  }

  /**
   * GET /releases for one installation: on each lane of its channels (and `product`, when given),
   * the releases it may install and the newest one not yet rolled out to it (with its share now).
   */
  async listing(index: ReleaseIndex, who: Installation, channels: readonly string[], product: string | null): Promise<ReleaseListing> {
    const controls = await this.controls.current();
    const products: (string | null)[] = this.variant.products.length === 0 ? [null] : product !== null ? [product] : [...this.variant.products];
    const releases: Release[] = [];
    const notYetAvailable: NotYetAvailable[] = [];
    const states = products.flatMap((p) => channels.flatMap((channel) => PLATFORMS.map((platform) => this.laneState(index, controls, p, channel, platform))));
    if (!states.some((s) => s.conditional)) {
      // As before rollouts: the index's own order (newest first, ties in folder order).
      const all = index.all.filter((r) => channels.includes(r.manifest.channel) && (product === null || r.manifest.product === product));
      return { releases: all, notYetAvailable: [], shared: true, generation: controls.generation };
    }
    const now = this.clock();
    for (const state of states) {
      if (!state.conditional) {
        releases.push(...state.releases);
        continue;
      }
      const { at } = this.choiceOf(state, controls, who);
      const open = (r: Release) => controls.get(state.lane, r.manifest.version)?.withdrawn == null;
      const from = at < 0 ? state.releases.length : at;
      releases.push(...state.releases.slice(from).filter(open));
      const pending = state.releases.slice(0, from).find(open);
      if (pending)
        notYetAvailable.push({ release: pending, share: percentOf(thresholdNow(pending.manifest, controls.get(state.lane, pending.manifest.version), now)) });
    }
    releases.sort(newestFirst);
    return { releases, notYetAvailable, shared: false, generation: controls.generation };
  }
}
