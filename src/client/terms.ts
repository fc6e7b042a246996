import type { EntitlementClaims, VerifiedToken } from "./token.js";

/**
 * What a licence's terms let the program do, read offline from its verified token (or from an
 * entitlement the site answered): its features (claim `ent`, entitlement `features`) and the end of
 * its maintenance window (claim `upd`, entitlement `updatesUntil`). A licence without them has
 * neither claim: no feature, and no window (every release is an update it may take).
 */
export type Features = Readonly<Record<string, string | true>>;

/** A verified token, its claims, or an entitlement: whatever the program holds. */
export type TermsSource =
  | Pick<VerifiedToken, "claims">
  | Pick<EntitlementClaims, "ent" | "upd">
  | { readonly features?: Features; readonly updatesUntil?: string };

function featuresOf(s: TermsSource): Features {
  if ("claims" in s) return s.claims.ent ?? {};
  if ("ent" in s && s.ent) return s.ent;
  if ("features" in s && s.features) return s.features;
  return {};
}

/** Whether the licence carries the feature `name` (with or without a value). */
export function hasFeature(s: TermsSource, name: string): boolean {
  return Object.hasOwn(featuresOf(s), name);
}

/**
 * The feature's value (`max-projects=50` gives "50"), true for a feature without one, null when the
 * licence does not carry it.
 */
export function feature(s: TermsSource, name: string): string | true | null {
  const features = featuresOf(s);
  return Object.hasOwn(features, name) ? features[name]! : null;
}

/** The end of the maintenance window (ms since the epoch), null when the licence has none. */
export function updatesUntil(s: TermsSource): number | null {
  if ("claims" in s) return s.claims.upd !== undefined ? s.claims.upd * 1000 : null;
  if ("upd" in s && s.upd !== undefined) return s.upd * 1000;
  if ("updatesUntil" in s && s.updatesUntil !== undefined) return Date.parse(s.updatesUntil);
  return null;
}

/**
 * Whether the window covers a release `released` then (an ISO 8601 time, as manifests say, or ms):
 * the site offers only such releases, and refuses a newer installer (updates_window_ended).
 */
export function updatesCover(s: TermsSource, released: string | number): boolean {
  const end = updatesUntil(s);
  return end === null || (typeof released === "number" ? released : Date.parse(released)) <= end;
}
