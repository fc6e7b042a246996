import type { Variant } from "../../config/variants";
import type { EntitlementKind } from "../../store/types";
import type { Clock } from "../clock";
import { thresholdNow, laneName, type ControlsView, type ReleaseControls } from "./release-controls";
import { laneKey, newestFirst, type Release, type ReleaseIndex, type ServedRelease } from "./release-index";
import { NO_DEVICE } from "./public-lanes";
import { admittedAfterMs, bucketOf, FULL, percentOf } from "./rollout";
import { offeredUnder, termsKey, type LicenceTerms } from "./licence-terms";

/**
 * Who asks, as the entitlement token says: its device hash (`dev`) and kind (staff are always
 * admitted), and its licence's terms (licence-terms.ts: a release they exclude is passed over
 * before any rollout is asked, as a withdrawn one is).
 */
export interface Installation extends LicenceTerms {
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
  /**
   * Names the answer: equal keys (under one index) mean equal listings, so an answer may be built
   * once per key. It holds the controls' generation, the channels and product asked for, and in
   * each lane with a rollout or a control the installation's choice and the pending share.
   */
  readonly key: string;
  /** Builds the listing (newest first, across lanes). */
  build(): {
    /** What the installation may install: in each lane the release it is served and every older one not withdrawn. */
    readonly releases: readonly Release[];
    /** Per lane, the newest release that exists but is not rolled out to this installation yet. */
    readonly notYetAvailable: readonly NotYetAvailable[];
  };
}

/**
 * Which release each installation is served: in a lane, the newest
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

  /** A release whose files no longer read as live (its bytes cannot be read again) is passed over like a withdrawn one. */
  private choose(index: ReleaseIndex, state: LaneState, controls: ControlsView, who: Installation, now: number): Choice {
    let until = Infinity;
    for (let at = 0; at < state.releases.length; at++) {
      const r = state.releases[at]!;
      if (!offeredUnder(who, r.manifest)) continue;
      const control = controls.get(state.lane, r.manifest.version);
      if (control?.withdrawn != null) continue;
      const threshold = who.kind === "staff" ? FULL : thresholdNow(r.manifest, control, now);
      // A public lane's visitor without a device hash (NO_DEVICE) is admitted only where everyone is.
      const bucket = threshold >= FULL ? 0n : who.dev === NO_DEVICE ? FULL - 1n : bucketOf(who.dev, state.lane, r.manifest.version);
      if (bucket < threshold) {
        if (index.withBytes(r)) return { at, until };
        continue;
      }
      // Not admitted yet: a running ramp admits it at a time known now, and the choice holds until then.
      const after = control?.halted == null ? admittedAfterMs(r.manifest.rollout!, bucket) : null;
      if (after !== null) until = Math.min(until, r.manifest.released + (control?.haltedMs ?? 0) + after);
    }
    return { at: -1, until };
  }

  private choiceOf(index: ReleaseIndex, state: LaneState, controls: ControlsView, who: Installation): Choice {
    if (!state.conditional) return { at: state.releases.findIndex((r) => offeredUnder(who, r.manifest)), until: Infinity };
    const id = (who.kind === "staff" ? STAFF : who.dev) + termsKey(who);
    const now = this.clock();
    let choice = state.choices.get(id);
    if (!choice || now >= choice.until) {
      choice = this.choose(index, state, controls, who, now);
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
    if (!state.conditional) {
      // No rollout or control: the newest that reads (a snapshot's may not, once its files changed).
      for (const r of state.releases) {
        if (!offeredUnder(who, r.manifest)) continue;
        const bytes = index.withBytes(r);
        if (bytes) return bytes;
      }
      return null;
    }
    const { at } = this.choiceOf(index, state, controls, who);
    return at < 0 ? null : index.withBytes(state.releases[at]!);
  }

  /**
   * Whether this installation may download `release`'s installer: never a withdrawn release's; else
   * only the release it is served on that lane or an older one, so manifest, signature and installer
   * answers agree (an installation outside a rollout cannot fetch the release it is not offered).
   */
  async installerAllowed(index: ReleaseIndex, who: Installation, release: Release): Promise<boolean> {
    const m = release.manifest;
    if (!offeredUnder(who, m)) return false;
    const controls = await this.controls.current();
    const state = this.laneState(index, controls, m.product, m.channel, m.platform);
    if (controls.get(state.lane, m.version)?.withdrawn != null) return false;
    const { at } = this.choiceOf(index, state, controls, who);
    return at >= 0 && newestFirst(release, state.releases[at]!) >= 0;
  }

  /**
   * GET /releases for one installation: on each lane of its channels (and `product`, when given),
   * the releases it may install and the newest one not yet rolled out to it (with its share now).
   */
  async listing(index: ReleaseIndex, who: Installation, channels: readonly string[], product: string | null): Promise<ReleaseListing> {
    const controls = await this.controls.current();
    const products: (string | null)[] = this.variant.products.length === 0 ? [null] : product !== null ? [product] : [...this.variant.products];
    const states = products.flatMap((p) =>
      channels.flatMap((channel) => this.variant.platforms.map((platform) => this.laneState(index, controls, p, channel, platform))),
    );
    const base = `${controls.generation}|${channels.join(",")}|${product ?? ""}${termsKey(who)}`;
    if (!states.some((s) => s.conditional)) {
      // As before rollouts: the index's own order (newest first, ties in folder order).
      return {
        key: base,
        build: () => ({
          releases: index.all.filter(
            (r) => channels.includes(r.manifest.channel) && (product === null || r.manifest.product === product) && offeredUnder(who, r.manifest),
          ),
          notYetAvailable: [],
        }),
      };
    }
    const now = this.clock();
    const open = (state: LaneState) => (r: Release) => offeredUnder(who, r.manifest) && controls.get(state.lane, r.manifest.version)?.withdrawn == null;
    const lanes = states.map((state) => {
      if (!state.conditional) return { state, from: 0, pending: undefined, share: 0 };
      const { at } = this.choiceOf(index, state, controls, who);
      const from = at < 0 ? state.releases.length : at;
      const pending = state.releases.slice(0, from).find(open(state));
      const share = pending ? percentOf(thresholdNow(pending.manifest, controls.get(state.lane, pending.manifest.version), now)) : 0;
      return { state, from, pending, share };
    });
    return {
      key: `${base}|${lanes.map((l) => (l.state.conditional ? `${l.from}:${l.share}` : "")).join(",")}`,
      build: () => {
        const releases = lanes.flatMap((l) =>
          l.state.conditional ? l.state.releases.slice(l.from).filter(open(l.state)) : l.state.releases.filter((r) => offeredUnder(who, r.manifest)),
        );
        releases.sort(newestFirst);
        const notYetAvailable = lanes.flatMap((l) => (l.pending ? [{ release: l.pending, share: l.share }] : []));
        return { releases, notYetAvailable };
      },
    };
  }
}
