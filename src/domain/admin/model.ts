import "../formats";
import { Type, type TSchema } from "@sinclair/typebox";
import { parseDuration } from "../../config/parse";
import { MAX_TOKEN_TTL } from "../../config/settings";
import { LANE_LIST_MAX, LANE_WORD, LANE_WORD_MAX } from "../../config/variants";
import { FEATURE_TEXT, FEATURE_TEXT_MAX, FEATURES_MAX } from "../../config/features";
import { KeyturnError } from "../errors";

/**
 * The parts the admin operations' input models are made of (licenses.ts, tokens.ts, audit-query.ts,
 * feed.ts, webhooks/endpoints.ts own their models), and the rules no schema can state, as plain
 * functions on typed input. HTTP, the console and the CLI decode with the same models
 * (domain/decode.ts), so the same input is refused in the same words whichever way it came.
 */

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** An object with exactly these fields: an unknown one is refused, never silently dropped. */
export const closed = <T extends Record<string, TSchema>>(props: T, description?: string) =>
  Type.Object(props, { additionalProperties: false, ...(description ? { description } : {}) });

/** No control characters (C0 and DEL): what people type, never what a terminal or a log line obeys. */
const PRINTABLE = "[^\\x00-\\x1f\\x7f]";

/** Text people type (names, plans): not blank, no control characters; trimmed by `trimmed`. */
export const Text = (max: number, extra: { description?: string } = {}) =>
  Type.String({
    minLength: 1,
    maxLength: max,
    pattern: `^${PRINTABLE}*[^\\s\\x00-\\x1f\\x7f]${PRINTABLE}*$`,
    description: extra.description ?? "text that is not blank, without control characters",
  });

/** An id or key as a filter or a path's parameter: 1 to `max` characters, no control characters. */
export const IdText = (max: number, description = "an id, without control characters") =>
  Type.String({ minLength: 1, maxLength: max, pattern: `^${PRINTABLE}+$`, description });

/** A time in a request: RFC 3339 with Z or a numeric offset (src/domain/formats.ts). */
export const TimeInput = Type.String({ maxLength: 40, format: "date-time", description: "RFC 3339: date, time and Z or a numeric offset" });

export const Cursor = Type.String({ maxLength: 500, description: "Opaque; valid only with the query that answered it" });

/** A page size as a query string carries it; `pageSize` reads it and holds it to 1..max. */
export const Limit = (max: number, fallback: number) => Type.String({ pattern: "^[0-9]{1,7}$", description: `1 to ${max}, ${fallback} if absent` });

export const METADATA_LIMITS = { keys: 50, keyLength: 40, valueLength: 500 } as const;

export const Metadata = Type.Record(
  Type.String({ pattern: "^[A-Za-z0-9_.-]{1,40}$" }),
  Type.String({ maxLength: METADATA_LIMITS.valueLength, pattern: `^${PRINTABLE}*$`, description: "text without control characters" }),
  {
    // A key outside the pattern is refused (a record's keys are otherwise any).
    additionalProperties: false,
    maxProperties: METADATA_LIMITS.keys,
    description: `At most ${METADATA_LIMITS.keys} keys of [A-Za-z0-9_.-]{1,40}, values up to ${METADATA_LIMITS.valueLength} characters`,
  },
);

export const Channels = Type.Array(Type.String({ maxLength: LANE_WORD_MAX, pattern: LANE_WORD.source, description: "a channel's name" }), {
  minItems: 1,
  maxItems: LANE_LIST_MAX,
  description: "Among the site's channels (--channels; the spec's stable and preview unless configured)",
});

export const SeatLease = Nullable(
  Type.String({
    maxLength: 12,
    description: "How long an installation keeps its seat unless seen (10m, 12h, 30d; at least 60s); null: seats never lapse",
  }),
);

/** A licence's features (src/config/features.ts); each name once is the use case's rule (domain/features.ts). */
export const Features = Type.Array(
  Type.String({
    maxLength: FEATURE_TEXT_MAX,
    pattern: FEATURE_TEXT.source,
    description: "a feature: a name of lower-case letters and digits joined by . _ or -, and an optional =value (export-pdf, max-projects=50)",
  }),
  { maxItems: FEATURES_MAX, description: `At most ${FEATURES_MAX} features, each name once, signed into the licence's tokens (claim ent)` },
);

/** The end of a licence's maintenance window: releases released after it are not offered. */
export const UpdatesUntil = Nullable(
  Type.String({
    maxLength: 40,
    format: "date-time",
    description: "RFC 3339; releases released after it are not offered to this licence (may be past); null: every release",
  }),
);

export const EMAIL_MAX = 254;
export const Email = Type.String({ maxLength: EMAIL_MAX, pattern: "^[^\\s@\\x00-\\x1f\\x7f]+@[^\\s@\\x00-\\x1f\\x7f]+$", description: "an email address" });

/** A license's own token lifetime in seconds: at least a minute, at most the site's cap (366 days); null: the site's. */
export const TOKEN_TTL_MIN = 60;
export const TOKEN_TTL_MAX = parseDuration("token-ttl", MAX_TOKEN_TTL);

export const TokenTtl = Nullable(
  Type.Integer({
    minimum: TOKEN_TTL_MIN,
    maximum: TOKEN_TTL_MAX,
    description: "This license's token lifetime in seconds (at most 366 days; capped to its seatLease, never past its expiry); null: the site's --token-ttl",
  }),
);

const refuse = (message: string): never => {
  throw new KeyturnError("invalid_request", message);
};

/** Typed text as kept: without the spaces around it (the model refused blank text). */
export function trimmed(text: string): string;
export function trimmed(text: string | undefined): string | undefined;
export function trimmed(text: string | undefined): string | undefined {
  return text?.trim();
}

/** A time the model admitted, as milliseconds; null stays null (none). */
export function timeOf(text: string | null): number | null {
  return text === null ? null : Date.parse(text);
}

/** `expires` and the like: null (never), or a time after now. */
export function futureTime(text: string | null | undefined, field: string, now: number): number | null {
  const ms = timeOf(text ?? null);
  if (ms !== null && ms <= now) refuse(`${field} must be in the future.`);
  return ms;
}

/** Each name once, and each among the site's own (its variant's channels, say), in the model's words. */
export function amongAllowed(list: readonly string[], allowed: readonly string[], field: string): string[] {
  const unique = [...new Set(list)];
  if (unique.some((x) => !allowed.includes(x))) refuse(`${field} must be among ${allowed.join(", ")}.`);
  return unique;
}

/** A page size from the query (`Limit`): absent is `fallback`, else 1 to `max`. */
export function pageSize(limit: string | undefined, fallback: number, max: number): number {
  if (limit === undefined) return fallback;
  const size = Number(limit);
  if (size < 1 || size > max) refuse(`limit must be ${Limit(max, fallback).description}.`);
  return size;
}
