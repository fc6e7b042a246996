/**
 * A licence's features as people write them: a name, or a name with a short value
 * (`export-pdf`, `max-projects=50`). Written in the configuration's plans, the admin API, the
 * console and the CLI; signed into tokens as the claim `ent` (docs/licence-models.md).
 */

/** A feature's name: what a program asks `hasFeature` for. */
export const FEATURE_NAME = /^[a-z0-9]+([._-][a-z0-9]+)*$/;
export const FEATURE_NAME_MAX = 40;
/** A value: short visible ASCII without spaces (a number, a tier, a list with commas). */
export const FEATURE_VALUE = /^[\x21-\x7e]{1,40}$/;
/** At most this many per licence: each is signed into every token. */
export const FEATURES_MAX = 32;
/** `name` or `name=value`, as a pattern (TypeBox models, the console's field). */
export const FEATURE_TEXT = /^[a-z0-9]+([._-][a-z0-9]+)*(=[\x21-\x7e]{1,40})?$/;
export const FEATURE_TEXT_MAX = FEATURE_NAME_MAX + 1 + 40;

/** `name` or `name=value` as its parts; null when it is not one (the caller names the field). */
export function splitFeature(text: string): { name: string; value: string | null } | null {
  if (text.length > FEATURE_TEXT_MAX || !FEATURE_TEXT.test(text)) return null;
  const eq = text.indexOf("=");
  const name = eq < 0 ? text : text.slice(0, eq);
  if (name.length > FEATURE_NAME_MAX) return null;
  return { name, value: eq < 0 ? null : text.slice(eq + 1) };
}

/**
 * What is wrong with a list of features, in words naming `field`, or null when nothing is: each
 * `name` or `name=value`, each name once, at most FEATURES_MAX.
 */
export function featureListProblem(list: readonly string[], field: string): string | null {
  if (list.length > FEATURES_MAX) return `${field} lists more than ${FEATURES_MAX} features`;
  const names = new Set<string>();
  for (const text of list) {
    const parts = splitFeature(text);
    if (!parts)
      return `${field}: "${text.slice(0, 60)}" is not a feature (a name of lower-case letters and digits joined by . _ or -, at most ${FEATURE_NAME_MAX} characters, and an optional =value of up to 40 visible characters)`;
    if (names.has(parts.name)) return `${field} names the feature "${parts.name}" twice`;
    names.add(parts.name);
  }
  return null;
}
