/**
 * Reading a provider's JSON payload, which is outside input even once its signature is good: a
 * field of the wrong type reads as absent, ids are visible ASCII of bounded length, texts are cut.
 */
export type Json = Readonly<Record<string, unknown>>;

const ID = /^[\x21-\x7e]{1,255}$/;
const TEXT_MAX = 500;

export function obj(v: unknown): Json | null {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Json) : null;
}

export function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v.slice(0, 100) : [];
}

/** A nested value: `at(o, "data", "object")`. */
export function at(v: unknown, ...path: string[]): unknown {
  let here: unknown = v;
  for (const key of path) {
    const o = obj(here);
    if (o === null || !Object.hasOwn(o, key)) return undefined;
    here = o[key];
  }
  return here;
}

/** An id: a string (or number, as Lemon Squeezy's are) of visible ASCII; an expanded object's `id`. */
export function id(v: unknown): string | null {
  const value = typeof v === "number" && Number.isSafeInteger(v) ? String(v) : typeof v === "string" ? v : obj(v) ? obj(v)!.id : null;
  if (typeof value === "number") return id(value);
  return typeof value === "string" && ID.test(value) ? value : null;
}

export function text(v: unknown): string | null {
  return typeof v === "string" && v.trim() !== "" ? v.slice(0, TEXT_MAX) : null;
}

/** A whole number at least 1 (a quantity), or null. */
export function count(v: unknown): number | null {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 1 ? v : null;
}

/** Unix seconds (Stripe) as milliseconds. */
export function unixTime(v: unknown): number | null {
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v * 1000 : null;
}

/** An RFC 3339 time (Paddle, Lemon Squeezy) as milliseconds. */
export function isoTime(v: unknown): number | null {
  if (typeof v !== "string" || v.length > 40) return null;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : null;
}

export const ids = (...values: unknown[]): string[] => [...new Set(values.map(id).filter((v): v is string => v !== null))];
