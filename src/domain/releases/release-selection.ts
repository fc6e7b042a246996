import type { Variant } from "../../config/variants";
import type { Store } from "../../store/types";
import type { Clock } from "../clock";
import { thresholdNow, laneName, type ControlsView, type ReleaseControls } from "./release-controls";
import { collectSoon } from "../collect-soon";
import { laneKey, newestFirst, type Release, type ReleaseIndex, type ServedRelease } from "./release-index";
import { decide, RELEASE_RULES, type Installation, type ReleaseRule, type Verdict } from "./release-rules";
import { offeredUnder, refuseOutsideWindow, termsKey } from "./licence-terms";
import type { Manifest, ReleasePlace } from "./manifest";
import { percentOf } from "./rollout";

export type { Installation } from "./release-rules";

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
/** How often the installations running a release halted by itself are read again (reports and sightings are written every 30 s). */
export const RUNNERS_REFRESH_MS = 30_000;
/** Installations read as running one halted release, at most. */
const RUNNERS_LIMIT = 1_000_000;

/** What a lane's choices depend on: the controls' generation and the runners read. */
interface Runners {
  readonly generation: number;
  readonly read: number;
  /** Whether any release stands halted by a rule under this generation (then the runners are read again every RUNNERS_REFRESH_MS). */
  readonly anyHalted: boolean;
  /** By `lane\nversion`: device hashes running that release (only releases halted by a rule). */
  readonly byRelease: ReadonlyMap<string, ReadonlySet<string>>;
}

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
    /**
     * What the installation may install: in each lane the release it is served and every older one
     * not withdrawn, by manifest (one made per release listed: a packed release's is made when asked for).
     */
    readonly releases: readonly Manifest[];
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
  private cache = new WeakMap<ReleaseIndex, { generation: number; runners: Runners; lanes: Map<string, LaneState> }>();
  private runners: Runners = { generation: -1, read: -Infinity, anyHalted: false, byRelease: new Map() };
  private readingRunners: Promise<Runners> | null = null;

  constructor(
    private readonly variant: Variant,
    readonly controls: ReleaseControls,
    private readonly clock: Clock,
    /** Where the installations running a release halted by itself are read; without it, only the request's own version says. */
    private readonly store: Store | null = null,
    /** The rules asked of each release, in order (release-rules.ts). */
    readonly rules: readonly ReleaseRule[] = RELEASE_RULES,
  ) {}

  /**
   * The installations running each release halted by a rule: read again when the controls change
   * and every RUNNERS_REFRESH_MS while any release stands halted so (none: nothing is read).
   */
  private async runnersOf(controls: ControlsView): Promise<Runners> {
    const r = this.runners;
    // The usual request: no release halted by a rule under this generation, so nothing to read or filter.
    if (r.generation === controls.generation && !r.anyHalted) return r;
    const now = this.clock();
    if (r.generation === controls.generation && now - r.read < RUNNERS_REFRESH_MS) return r;
    const halted = controls.all.filter((c) => c.halted !== null && c.haltRule);
    if (halted.length === 0 || !this.store) {
      this.runners = { generation: controls.generation, read: now, anyHalted: halted.length > 0, byRelease: new Map() };
      return this.runners;
    }
    const store = this.store;
    this.readingRunners ??= (async () => {
      try {
        const byRelease = new Map<string, ReadonlySet<string>>();
        for (const c of halted) byRelease.set(`${c.lane}\n${c.version}`, new Set(await store.releaseRunners(c, RUNNERS_LIMIT)));
        this.runners = { generation: controls.generation, read: now, anyHalted: true, byRelease };
        return this.runners;
      } finally {
        this.readingRunners = null;
      }
    })();
    return this.readingRunners;
  }

  private async current(): Promise<{ controls: ControlsView; runners: Runners }> {
    const controls = await this.controls.current();
    return { controls, runners: await this.runnersOf(controls) };
  }

  private laneState(index: ReleaseIndex, controls: ControlsView, runners: Runners, product: string | null, channel: string, platform: string): LaneState {
    let entry = this.cache.get(index);
    if (!entry || entry.generation !== controls.generation || entry.runners !== runners)
      this.cache.set(index, (entry = { generation: controls.generation, runners, lanes: new Map() }));
    const key = laneKey(product, channel, platform);
    let state = entry.lanes.get(key);
    if (!state) {
      const lane = laneName(product, channel, platform);
      const releases = index.releasesOf(product, channel, platform);
      const conditional = releases.some((r) => {
        const m = r.manifest;
        return m.rollout !== null || controls.get(lane, m.version) !== undefined;
      });
      entry.lanes.set(key, (state = { lane, releases, conditional, choices: new Map() }));
    }
    return state;
  }

  /** Whether `who` runs `version` of `lane`: the request says so, or its reports or sightings do (releases halted by a rule only). */
  private runs(runners: Runners, who: Installation, lane: string, version: string): boolean {
    return who.running === version || (runners.byRelease.get(`${lane}\n${version}`)?.has(who.dev) ?? false);
  }

  /**
   * The newest release the rules admit (release-rules.ts) and whose files read; a release whose
   * files no longer read as live (its bytes cannot be read again) is passed over like a withdrawn one.
   */
  private choose(index: ReleaseIndex, state: LaneState, controls: ControlsView, runners: Runners, who: Installation, now: number): Choice {
    let until = Infinity;
    for (let at = 0; at < state.releases.length; at++) {
      const manifest = state.releases[at]!.manifest;
      const d = decide(
        {
          lane: state.lane,
          manifest,
          control: controls.get(state.lane, manifest.version),
          who,
          now,
          runs: () => this.runs(runners, who, state.lane, manifest.version),
          explain: false,
        },
        this.rules,
      );
      if (d.admitted) {
        if (index.withBytes(state.releases[at]!)) return { at, until };
        continue;
      }
      until = Math.min(until, d.until);
    }
    return { at: -1, until };
  }

  private choiceOf(index: ReleaseIndex, state: LaneState, controls: ControlsView, runners: Runners, who: Installation): Choice {
    if (!state.conditional) return { at: state.releases.findIndex((r) => offeredUnder(who, r.manifest)), until: Infinity };
    // Targets and the request's version make the choice depend on more than the device.
    const id = who.kind === "staff" ? STAFF : `${who.dev}\n${who.license ?? ""}\n${who.plan ?? ""}\n${who.running ?? ""}${termsKey(who)}`;
    const now = this.clock();
    let choice = state.choices.get(id);
    if (!choice || now >= choice.until) {
      choice = this.choose(index, state, controls, runners, who, now);
      if (state.choices.size >= CHOICES_PER_LANE) state.choices.clear();
      state.choices.set(id, choice);
    }
    return choice;
  }

  /**
   * Every release of a lane, newest first, with each rule's verdict on it for `who` (`release why`),
   * and the one served (the first admitted whose files read; null: none).
   */
  async explain(
    index: ReleaseIndex,
    who: Installation,
    product: string | null,
    channel: string,
    platform: string,
  ): Promise<{ lane: string; served: string | null; releases: { version: string; admitted: boolean; readable: boolean; verdicts: Verdict[] }[] }> {
    const { controls, runners } = await this.current();
    const state = this.laneState(index, controls, runners, product, channel, platform);
    const now = this.clock();
    let served: string | null = null;
    const releases = state.releases.map((r) => {
      const m = r.manifest;
      const d = decide(
        {
          lane: state.lane,
          manifest: m,
          control: controls.get(state.lane, m.version),
          who,
          now,
          runs: () => this.runs(runners, who, state.lane, m.version),
          explain: true,
        },
        this.rules,
      );
      const readable = index.withBytes(r) !== null;
      if (served === null && d.admitted && readable) served = m.version;
      return { version: m.version, admitted: d.admitted, readable, verdicts: d.verdicts };
    });
    return { lane: state.lane, served, releases };
  }

  /**
   * The release (with its manifest and signature bytes) served to this installation on a lane, or
   * null when none admits it (no_release). A release whose files no longer read as live is passed
   * over like a withdrawn one.
   */
  async served(index: ReleaseIndex, who: Installation, product: string | null, channel: string, platform: string): Promise<ServedRelease | null> {
    const { controls, runners } = await this.current();
    const state = this.laneState(index, controls, runners, product, channel, platform);
    if (!state.conditional) {
      // No rollout or control: the newest that reads (a snapshot's may not, once its files changed).
      for (const r of state.releases) {
        if (!offeredUnder(who, r.manifest)) continue;
        const bytes = index.withBytes(r);
        if (bytes) return bytes;
      }
      return null;
    }
    const { at } = this.choiceOf(index, state, controls, runners, who);
    return at < 0 ? null : index.withBytes(state.releases[at]!);
  }

  /**
   * Whether this installation may download `release`'s installer: never a withdrawn release's; else
   * only the release it is served on that lane or an older one, so manifest, signature and installer
   * answers agree (an installation outside a rollout cannot fetch the release it is not offered).
   */
  async installerAllowed(index: ReleaseIndex, who: Installation, release: Release): Promise<boolean> {
    return (await this.allowedOn(index, who, release.manifest))(release);
  }

  /**
   * The release whose installer this installation gets when it asks for `name` on a lane (with
   * `version`, of that version only). Several releases of a lane may share an installer's name (a
   * vendor's `AlphaSetup.exe` in every version, each in its own folder), so it is the newest of them
   * this installation may install: the one it is served, when that one names it, as its manifest
   * said. Null when it may download none of them; updates_window_ended when the newest of them is
   * refused for the licence's maintenance window.
   */
  async installerNamed(index: ReleaseIndex, who: Installation, place: ReleasePlace, name: string, version?: string): Promise<Release | null> {
    const named = [...index.installersNamed(place.product, place.channel, place.platform, name)].filter(
      (r) => version === undefined || r.manifest.version === version,
    );
    const found = await this.firstAllowed(index, who, place, named);
    if (!found && named[0]) refuseOutsideWindow(who, named[0].manifest);
    return found;
  }

  /**
   * The newest release of a lane this installation may install that `fits` (what an updater can
   * install: a feed's own limit), or null.
   */
  newestAllowedWhere(index: ReleaseIndex, who: Installation, place: ReleasePlace, fits: (r: Release) => boolean): Promise<Release | null> {
    return this.firstAllowed(index, who, place, filtered(index.releasesOf(place.product, place.channel, place.platform), fits));
  }

  /** The first of `candidates` (releases of the lane at `place`) the installation may install, in one pass, its rollout's choice made once. */
  private async firstAllowed(index: ReleaseIndex, who: Installation, place: ReleasePlace, candidates: Iterable<Release>): Promise<Release | null> {
    let allowed: ((r: Release) => boolean) | undefined;
    for (const r of candidates) {
      allowed ??= await this.allowedOn(index, who, place);
      if (allowed(r)) return r;
    }
    return null;
  }

  /** installerAllowed's test for the releases of one lane. */
  private async allowedOn(index: ReleaseIndex, who: Installation, place: ReleasePlace): Promise<(r: Release) => boolean> {
    const { controls, runners } = await this.current();
    const state = this.laneState(index, controls, runners, place.product, place.channel, place.platform);
    const { at } = this.choiceOf(index, state, controls, runners, who);
    const served = at >= 0 ? state.releases[at]! : null;
    return (r) =>
      served !== null && offeredUnder(who, r.manifest) && controls.get(state.lane, r.manifest.version)?.withdrawn == null && newestFirst(r, served) >= 0;
  }

  /**
   * GET /releases for one installation: on each lane of its channels (and `product`, when given),
   * the releases it may install and the newest one not yet rolled out to it (with its share now).
   */
  async listing(index: ReleaseIndex, who: Installation, channels: readonly string[], product: string | null): Promise<ReleaseListing> {
    const { controls, runners } = await this.current();
    const products: (string | null)[] = this.variant.products.length === 0 ? [null] : product !== null ? [product] : [...this.variant.products];
    const states = products.flatMap((p) =>
      channels.flatMap((channel) => this.variant.platforms.map((platform) => this.laneState(index, controls, runners, p, channel, platform))),
    );
    const base = `${controls.generation}|${channels.join(",")}|${product ?? ""}${termsKey(who)}`;
    if (!states.some((s) => s.conditional)) {
      // As before rollouts: the index's own order (newest first, ties in folder order).
      return {
        key: base,
        build: () => ({
          releases: collectedAfter(
            index.all.flatMap((r) => {
              const m = r.manifest;
              return channels.includes(m.channel) && (product === null || m.product === product) && offeredUnder(who, m) ? [m] : [];
            }),
          ),
          notYetAvailable: [],
        }),
      };
    }
    const now = this.clock();
    // Offered to the installation and, in a lane with a rollout or a control, not withdrawn.
    const open = (state: LaneState, m: Manifest) => offeredUnder(who, m) && (!state.conditional || controls.get(state.lane, m.version)?.withdrawn == null);
    const listed = (state: LaneState, from: number) =>
      state.releases.slice(from).flatMap((release) => {
        const m = release.manifest;
        return open(state, m) ? [{ release, manifest: m }] : [];
      });
    const lanes = states.map((state) => {
      if (!state.conditional) return { state, from: 0, pending: undefined, share: 0 };
      const { at } = this.choiceOf(index, state, controls, runners, who);
      const from = at < 0 ? state.releases.length : at;
      const pending = state.releases.slice(0, from).find((r) => open(state, r.manifest));
      const share = pending ? percentOf(thresholdNow(pending.manifest, controls.get(state.lane, pending.manifest.version), now)) : 0;
      return { state, from, pending, share };
    });
    return {
      key: `${base}|${lanes.map((l) => (l.state.conditional ? `${l.from}:${l.share}` : "")).join(",")}`,
      build: () => {
        const releases = lanes.flatMap((l) => listed(l.state, l.state.conditional ? l.from : 0));
        releases.sort((a, b) => newestFirst(a.release, b.release));
        const notYetAvailable = lanes.flatMap((l) => (l.pending ? [{ release: l.pending, share: l.share }] : []));
        return { releases: collectedAfter(releases.map((r) => r.manifest)), notYetAvailable };
      },
    };
  }
}

/** A listing this long (an answer of about 256 KB) leaves enough garbage to collect at once. */
const COLLECT_AFTER_LISTED = 1_500;

/**
 * `listed`, with a whole collection asked for after this turn when it is long: it made a manifest
 * for each packed release, and its answer is serialised in the same turn (collect-soon.ts).
 */
function collectedAfter(listed: Manifest[]): Manifest[] {
  if (listed.length >= COLLECT_AFTER_LISTED) collectSoon();
  return listed;
}

/** The releases of `list` that `fits`, in order, without copying the list (a lane may hold thousands). */
function* filtered(list: readonly Release[], fits: (r: Release) => boolean): Generator<Release> {
  for (const r of list) if (fits(r)) yield r;
}
