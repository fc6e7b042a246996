import { featureListProblem, splitFeature } from "../config/features";
import { KeyturnError } from "./errors";

/**
 * A licence's features (src/config/features.ts says how they are written): kept as the list typed
 * (`["export-pdf", "max-projects=50"]`), signed into tokens and shown in entitlements as an object
 * (`{ "export-pdf": true, "max-projects": "50" }`), so a program looks one up by its name.
 */
export type FeatureMap = Readonly<Record<string, string | true>>;

/** The list as kept: each name once, in the order given; invalid_request naming `field` otherwise. */
export function checkFeatures(list: readonly string[], field = "features"): string[] {
  const problem = featureListProblem(list, field);
  if (problem) throw new KeyturnError("invalid_request", `${problem}.`);
  return [...list];
}

/** The claim `ent` and the entitlement's `features`: name → value, or true for a name alone. */
export function featureMap(list: readonly string[]): FeatureMap {
  const map: Record<string, string | true> = {};
  for (const text of list) {
    const parts = splitFeature(text);
    if (parts) map[parts.name] = parts.value ?? true;
  }
  return map;
}
