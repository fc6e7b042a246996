import { isoTime } from "../clock";
import { KeyturnError } from "../errors";
import { featureMap, type FeatureMap } from "../features";
import type { EntitlementClaims } from "../tokens";
import type { Manifest } from "./manifest";

/**
 * What a licence lets an installation be offered, beside its channels and the rollouts
 * (design.md "Licence models"): no release whose signed `released` is after the licence's
 * maintenance window (`upd`), and no release whose manifest `requiresFeature` the licence's
 * features (`ent`) lack. Read from the token, so a mirror offers what the vendor would. One rule
 * for the update path, GET /releases, every feed and the portal (release-selection.ts applies it
 * before a rollout's); staff are offered every release, as every rollout admits them.
 */
export interface LicenceTerms {
  readonly kind: EntitlementClaims["kind"];
  /** The end of the maintenance window in ms; absent: none. */
  readonly updatesUntil?: number;
  /** The licence's features; absent: none. */
  readonly features?: FeatureMap;
}

/** The terms a verified token carries (its `upd` and `ent` claims). */
export function termsOfClaims(claims: Pick<EntitlementClaims, "upd" | "ent">): { updatesUntil?: number; features?: FeatureMap } {
  return {
    ...(claims.upd !== undefined ? { updatesUntil: claims.upd * 1000 } : {}),
    ...(claims.ent !== undefined ? { features: claims.ent } : {}),
  };
}

/** Whether the release was released after the licence's maintenance window (staff have none). */
export function afterWindow(who: LicenceTerms, m: Pick<Manifest, "released">): boolean {
  return who.kind !== "staff" && who.updatesUntil !== undefined && m.released > who.updatesUntil;
}

/** The feature the release requires and the licence lacks, or null (staff lack none). */
export function missingFeature(who: LicenceTerms, m: Pick<Manifest, "requiresFeature">): string | null {
  const needed = m.requiresFeature;
  if (needed === undefined || who.kind === "staff") return null;
  return who.features !== undefined && Object.hasOwn(who.features, needed) ? null : needed;
}

/** Whether the licence lets the installation be offered a release with this manifest (release-rules.ts words the same two checks). */
export function offeredUnder(who: LicenceTerms, m: Pick<Manifest, "released" | "requiresFeature">): boolean {
  return !afterWindow(who, m) && missingFeature(who, m) === null;
}

/**
 * Names the terms in a choice's cache key: installations with equal keys are offered the same
 * releases. "" for none (most licences), so their choices are kept as before.
 */
export function termsKey(who: LicenceTerms): string {
  if (who.kind === "staff" || (who.updatesUntil === undefined && who.features === undefined)) return "";
  return `\u0000${who.updatesUntil ?? ""}\u0000${who.features ? Object.keys(who.features).sort().join(",") : ""}`;
}

/**
 * A direct download of a release released after the window: updates_window_ended (403), naming
 * the dates, so the person knows why and what to renew. Nothing for a release within it.
 */
export function refuseOutsideWindow(who: LicenceTerms, m: Pick<Manifest, "released" | "version">): void {
  if (!afterWindow(who, m) || who.updatesUntil === undefined) return;
  throw new KeyturnError(
    "updates_window_ended",
    `This licence's updates ended on ${isoTime(who.updatesUntil).slice(0, 10)}; version ${m.version} was released on ${isoTime(m.released).slice(0, 10)}. Renew the licence's updates to install it.`,
  );
}

/** The terms of a licence as its records hold them (the portal's downloads, which have no token). */
export function termsOfLicence(l: { readonly updatesUntil?: number | null; readonly features?: readonly string[] }): {
  updatesUntil?: number;
  features?: FeatureMap;
} {
  return {
    ...(l.updatesUntil != null ? { updatesUntil: l.updatesUntil } : {}),
    ...(l.features?.length ? { features: featureMap(l.features) } : {}),
  };
}
