import { KeyturnError } from "../domain/errors";

/** A submitted form's fields; one value per name unless read with `all`. */
export type Form = URLSearchParams;

/** A form field as text, trimmed; undefined when absent or empty. */
export function field(f: Form, name: string): string | undefined {
  const v = f.get(name)?.trim();
  return v ? v : undefined;
}

/** A whole number typed in a form field; invalid_request names the field otherwise. */
export function numberField(f: Form, name: string): number | undefined {
  const v = field(f, name);
  if (v === undefined) return undefined;
  if (!/^\d{1,10}$/.test(v)) throw new KeyturnError("invalid_request", `${name} must be an integer.`);
  return Number(v);
}

/**
 * A form's date field (a browser sends YYYY-MM-DD) as the models' RFC 3339 time: the day's start in
 * UTC. Other text is passed on for the model to refuse in its own words; undefined when empty.
 */
export function dateField(f: Form, name: string): string | undefined {
  const v = field(f, name);
  return v !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : v;
}
