import { parseDuration } from "../../config/parse";
import { MAX_TOKEN_TTL } from "../../config/settings";
import { KeyturnError } from "../errors";

/** Checks of untrusted admin input: every entry point refuses wrong types, excess length and unknown fields. */
const bad = (message: string): never => {
  throw new KeyturnError("invalid_request", `${message}.`);
};

/** A plain object with only the `allowed` fields. */
export function readObject(input: unknown, allowed: readonly string[], what = "body"): Record<string, unknown> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return bad(`${what} must be a JSON object`);
  const unknown = Object.keys(input).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) bad(`${what} has unknown field${unknown.length > 1 ? "s" : ""} ${unknown.slice(0, 5).map((k) => JSON.stringify(k.slice(0, 40))).join(", ")}`);
  return input as Record<string, unknown>;
}

export function text(o: Record<string, unknown>, field: string, max: number): string {
  const v = o[field];
  if (typeof v !== "string") return bad(`${field} must be a string`);
  const t = v.trim();
  if (t.length === 0) bad(`${field} must not be empty`);
  if (t.length > max) bad(`${field} must be at most ${max} characters`);
  if (/[\x00-\x1f\x7f]/.test(t)) bad(`${field} must not contain control characters`);
  return t;
}

export function optText(o: Record<string, unknown>, field: string, max: number): string | undefined {
  return o[field] === undefined ? undefined : text(o, field, max);
}

export function wholeNumber(o: Record<string, unknown>, field: string, min: number, max: number): number {
  const v = o[field];
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) return bad(`${field} must be a whole number from ${min} to ${max}`);
  return v;
}

export function optWholeNumber(o: Record<string, unknown>, field: string, min: number, max: number): number | undefined {
  return o[field] === undefined ? undefined : wholeNumber(o, field, min, max);
}

/** A license's own token lifetime in seconds: at least a minute, at most the site's cap (366 days); null: the site's. */
export const TOKEN_TTL_MIN = 60;
export const TOKEN_TTL_MAX = parseDuration("token-ttl", MAX_TOKEN_TTL);

export function tokenTtl(o: Record<string, unknown>, field: string): number | null | undefined {
  if (o[field] === undefined || o[field] === null) return o[field] as null | undefined;
  return wholeNumber(o, field, TOKEN_TTL_MIN, TOKEN_TTL_MAX);
}

export function textList(o: Record<string, unknown>, field: string, allowed: readonly string[], maxItems: number): string[] {
  const v = o[field];
  if (!Array.isArray(v) || v.length === 0 || v.length > maxItems || !v.every((x) => typeof x === "string"))
    return bad(`${field} must be a list of 1 to ${maxItems} strings`);
  const list = [...new Set(v as string[])];
  const unknown = list.filter((x) => !allowed.includes(x));
  if (unknown.length > 0) bad(`${field} must be among ${allowed.join(", ")}`);
  return list;
}

/** An ISO 8601 date (with a time zone when it has a time), as milliseconds. */
export function isoDate(value: unknown, field: string): number {
  if (typeof value !== "string" || value.length > 40 || !/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/.test(value))
    return bad(`${field} must be an ISO 8601 date`);
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) bad(`${field} must be an ISO 8601 date`);
  return ms;
}

/** null, or a future ISO date. */
export function expiry(o: Record<string, unknown>, field: string, now: number): number | null {
  const v = o[field];
  if (v === null || v === undefined) return null;
  const ms = isoDate(v, field);
  if (ms <= now) bad(`${field} must be in the future`);
  return ms;
}

export const EMAIL_MAX = 254;

export function email(o: Record<string, unknown>, field: string): string | null | undefined {
  const v = o[field];
  if (v === undefined || v === null) return v;
  const t = text(o, field, EMAIL_MAX);
  if (!/^[^\s@]+@[^\s@]+$/.test(t)) bad(`${field} must be an email address`);
  return t;
}

export const METADATA_LIMITS = { keys: 50, keyLength: 40, valueLength: 500 } as const;

/** An object of string → string: at most 50 keys of [A-Za-z0-9_.-]{1,40}, values up to 500 characters. */
export function metadata(o: Record<string, unknown>, field: string): Record<string, string> | undefined {
  const v = o[field];
  if (v === undefined) return undefined;
  if (typeof v !== "object" || v === null || Array.isArray(v)) return bad(`${field} must be an object of strings`);
  const entries = Object.entries(v);
  if (entries.length > METADATA_LIMITS.keys) bad(`${field} must have at most ${METADATA_LIMITS.keys} keys`);
  const out: Record<string, string> = {};
  for (const [k, value] of entries) {
    if (!/^[A-Za-z0-9_.-]{1,40}$/.test(k)) bad(`${field} keys must be 1 to 40 of A-Z a-z 0-9 _ . -`);
    if (typeof value !== "string" || value.length > METADATA_LIMITS.valueLength || /[\x00-\x1f\x7f]/.test(value))
      bad(`${field}.${k} must be a string of at most ${METADATA_LIMITS.valueLength} characters without control characters`);
    out[k] = value as string;
  }
  return out;
}

/** An id of the given prefix as a path or query parameter: a short string, or invalid_request. */
export function idParam(value: unknown, field: string, max = 100): string {
  if (typeof value !== "string" || value.trim().length === 0 || value.length > max || /[\x00-\x1f\x7f]/.test(value))
    return bad(`${field} must be a string of 1 to ${max} characters`);
  return value.trim();
}

/** The page size: absent = `fallback`, else a whole number 1..max (query strings arrive as text). */
export function pageLimit(value: unknown, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === "string" && /^\d{1,7}$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > max) return bad(`limit must be a whole number from 1 to ${max}`);
  return n;
}

/** JSON with object keys sorted at every level: equal for bodies that differ only in key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null)
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
  return JSON.stringify(value) ?? "null";
}
