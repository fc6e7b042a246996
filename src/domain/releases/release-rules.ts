import type { EntitlementKind, ReleaseControlRecord } from "../../store/types";
import { isoTime } from "../clock";
import type { Manifest } from "./manifest";
import { thresholdNow } from "./release-controls";
import { afterWindow, missingFeature, termsOfClaims, type LicenceTerms } from "./licence-terms";
import { NO_DEVICE } from "./public-lanes";
import { admittedAfterMs, bucketOf, FULL, percentOf } from "./rollout";

/** Who asks, as the entitlement token says (its licence's terms included), and what the request states of it. */
export interface Installation extends LicenceTerms {
  /** Its device hash (`dev`). */
  readonly dev: string;
  /** staff installations are always admitted. */
  readonly kind: EntitlementKind;
  /** Its licence (`lic`) and plan, for a rollout's targets; absent where no licence asks (the portal's own choice). */
  readonly license?: string;
  readonly plan?: string;
  /** The version the request says it runs (the update path's `installed`), when it says. */
  readonly running?: string;
}

/** The rules that decide whether a lane's release is served to an installation, in the order they are asked. */
export type RuleName = "withdraw" | "updates-window" | "feature" | "halt" | "staff" | "target" | "rollout";

/**
 * A rule's word on one release for one installation: `admit` serves it (if its files read), `pass`
 * passes over it to the next older release, `next` leaves it to the rules after this one.
 */
export interface Verdict {
  readonly rule: RuleName;
  readonly effect: "admit" | "pass" | "next";
  /** Said only when asked for (`explain`): the rule's reason in a sentence, for `release why`. */
  readonly reason: string;
  /** A pass that holds only until then (a ramp that admits the installation later). */
  readonly until?: number;
}

/** What a rule reads: the release, its control, who asks, and whether it runs this release. */
export interface RuleInput {
  readonly lane: string;
  readonly manifest: Manifest;
  readonly control: ReleaseControlRecord | undefined;
  readonly who: Installation;
  readonly now: number;
  /** Whether the installation runs this release (its reports, sightings, or the request's version). */
  readonly runs: () => boolean;
  /** Whether to word the reasons (only `release why` reads them). */
  readonly explain: boolean;
}

export interface ReleaseRule {
  readonly name: RuleName;
  decide(input: RuleInput): Verdict;
}

const say = (input: RuleInput, text: () => string) => (input.explain ? text() : "");
const time = (ms: number) => isoTime(ms);
const day = (ms: number) => isoTime(ms).slice(0, 10);

/** A withdrawn release is never served. */
const withdraw: ReleaseRule = {
  name: "withdraw",
  decide: (i) =>
    i.control?.withdrawn != null
      ? { rule: "withdraw", effect: "pass", reason: say(i, () => `withdrawn at ${time(i.control!.withdrawn!)}: never served`) }
      : { rule: "withdraw", effect: "next", reason: say(i, () => "not withdrawn") },
};

/** A release released after the licence's maintenance window (`upd`) is not offered; staff are offered every release. */
const updatesWindow: ReleaseRule = {
  name: "updates-window",
  decide: (i) => {
    const until = i.who.updatesUntil;
    if (until === undefined || i.who.kind === "staff")
      return { rule: "updates-window", effect: "next", reason: say(i, () => "the licence has no maintenance window") };
    return afterWindow(i.who, i.manifest)
      ? {
          rule: "updates-window",
          effect: "pass",
          reason: say(i, () => `released on ${day(i.manifest.released)}, after the licence's updates ended on ${day(until)}`),
        }
      : { rule: "updates-window", effect: "next", reason: say(i, () => `released within the licence's updates, which end on ${day(until)}`) };
  },
};

/** A release whose manifest `requiresFeature` is offered only to licences carrying that feature (`ent`). */
const feature: ReleaseRule = {
  name: "feature",
  decide: (i) => {
    const needed = i.manifest.requiresFeature;
    if (needed === undefined || i.who.kind === "staff") return { rule: "feature", effect: "next", reason: say(i, () => "it requires no feature") };
    return missingFeature(i.who, i.manifest) === null
      ? { rule: "feature", effect: "next", reason: say(i, () => `it requires feature ${needed}, which the licence carries`) }
      : { rule: "feature", effect: "pass", reason: say(i, () => `it requires feature ${needed}, which the licence lacks`) };
  },
};

/**
 * Halted by a rule (autoHalt): served only to the installations already running it, until a person
 * resumes it. Halted by a person: the ramp stands at its share, which the rollout rule applies.
 */
const halt: ReleaseRule = {
  name: "halt",
  decide: (i) => {
    const c = i.control;
    if (c?.halted == null) return { rule: "halt", effect: "next", reason: say(i, () => "not halted") };
    if (!c.haltRule) return { rule: "halt", effect: "next", reason: say(i, () => `halted by a person at ${time(c.halted!)}: its share stands where it was`) };
    return i.runs()
      ? { rule: "halt", effect: "admit", reason: say(i, () => `halted by itself at ${time(c.halted!)} (${c.haltRule}); this installation already runs it`) }
      : {
          rule: "halt",
          effect: "pass",
          reason: say(i, () => `halted by itself at ${time(c.halted!)} (${c.haltRule}): offered only to installations already running it`),
        };
  },
};

/** Staff installations are always admitted. */
const staff: ReleaseRule = {
  name: "staff",
  decide: (i) =>
    i.who.kind === "staff"
      ? { rule: "staff", effect: "admit", reason: say(i, () => "staff installations are admitted to every release") }
      : { rule: "staff", effect: "next", reason: say(i, () => "not a staff installation") },
};

/** A rollout's targets (licences, plans) are admitted whatever its share. */
const target: ReleaseRule = {
  name: "target",
  decide: (i) => {
    const t = i.manifest.rollout?.targets;
    if (!t) return { rule: "target", effect: "next", reason: say(i, () => "the rollout names no targets") };
    if (i.who.license !== undefined && t.licenses.includes(i.who.license))
      return { rule: "target", effect: "admit", reason: say(i, () => `licence ${i.who.license} is among the rollout's targets`) };
    if (i.who.plan !== undefined && t.plans.includes(i.who.plan))
      return { rule: "target", effect: "admit", reason: say(i, () => `plan ${i.who.plan} is among the rollout's targets`) };
    return { rule: "target", effect: "next", reason: say(i, () => "neither its licence nor its plan is among the rollout's targets") };
  },
};

/** The share: the installation's bucket below the release's threshold now (rollout.ts). */
const rollout: ReleaseRule = {
  name: "rollout",
  decide: (i) => {
    const m = i.manifest;
    if (m.rollout === null) return { rule: "rollout", effect: "admit", reason: say(i, () => "no rollout: every installation") };
    const threshold = thresholdNow(m, i.control, i.now);
    // A public lane's visitor without a device hash (NO_DEVICE) is admitted only where everyone is.
    const bucket = threshold >= FULL ? 0n : i.who.dev === NO_DEVICE ? FULL - 1n : bucketOf(i.who.dev, i.lane, m.version);
    const share = () => `${percentOf(threshold)}%`;
    const place = () => `bucket ${(Number((bucket * 1_000_000n) / FULL) / 10_000).toFixed(4)}%`;
    if (bucket < threshold) return { rule: "rollout", effect: "admit", reason: say(i, () => `its ${place()} is within the share admitted now, ${share()}`) };
    // Not admitted yet: a running ramp admits it at a time known now.
    const after = i.control?.halted == null ? admittedAfterMs(m.rollout, bucket) : null;
    const until = after === null ? undefined : m.released + (i.control?.haltedMs ?? 0) + after;
    return {
      rule: "rollout",
      effect: "pass",
      reason: say(i, () => `its ${place()} is beyond the share admitted now, ${share()}${until !== undefined ? `; the ramp admits it at ${time(until)}` : ""}`),
      ...(until !== undefined ? { until } : {}),
    };
  },
};

/**
 * The rules, in the order asked; the first `admit` or `pass` decides. A rule that takes a release
 * away from an installation whatever its share (the licence's updates window, a required feature)
 * goes before `staff`, beside `withdraw` and `halt`.
 */
export const RELEASE_RULES: readonly ReleaseRule[] = [withdraw, updatesWindow, feature, halt, staff, target, rollout];

/** One release's decision for one installation: whether it is admitted, and the verdicts that decided (all of them when explaining). */
export function decide(input: RuleInput, rules: readonly ReleaseRule[] = RELEASE_RULES): { admitted: boolean; verdicts: Verdict[]; until: number } {
  const verdicts: Verdict[] = [];
  for (const rule of rules) {
    const v = rule.decide(input);
    if (input.explain) verdicts.push(v);
    if (v.effect !== "next") {
      if (!input.explain) verdicts.push(v);
      return { admitted: v.effect === "admit", verdicts, until: v.until ?? Infinity };
    }
  }
  return { admitted: true, verdicts, until: Infinity };
}

/** The installation an entitlement token names (its claims, its licence's terms), and the version its request says it runs. */
export function installationOf(
  claims: { dev: string; kind: EntitlementKind; lic: string; plan: string; upd?: number; ent?: LicenceTerms["features"] },
  running?: string,
): Installation {
  return {
    dev: claims.dev,
    kind: claims.kind,
    license: claims.lic,
    plan: claims.plan,
    ...termsOfClaims(claims),
    ...(running !== undefined ? { running } : {}),
  };
}
