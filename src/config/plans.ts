import { featureListProblem } from "./features";
import { ConfigError, parseDuration } from "./parse";
import { MAX_TOKEN_TTL } from "./settings";

/**
 * Plans: templates of licences in the TOML configuration, one `[plans.NAME]` table each
 * (docs/licence-models.md). A licence created naming the plan takes its values where the caller
 * gave none (src/domain/plans.ts).
 *
 * ```toml
 * [plans.pro]
 * title = "Pro"
 * seats = 3
 * channels = ["stable", "preview"]
 * features = ["export-pdf", "max-projects=50"]
 * seatLease = "30d"
 * tokenTtl = "14d"
 * updatesFor = "365d"
 * expiresAfter = "365d"
 * ```
 */
export interface PlanConfig {
  readonly name: string;
  /** The licences' planTitle; null: the plan's name. */
  readonly title: string | null;
  readonly seats: number | null;
  readonly channels: readonly string[] | null;
  readonly features: readonly string[] | null;
  /** A seat lease as the licences take it (`30d`). */
  readonly seatLease: string | null;
  /** Seconds. */
  readonly tokenTtl: number | null;
  /** The maintenance window a new licence gets, in seconds from its creation (and a renewal adds). */
  readonly updatesFor: number | null;
  /** A new licence's expiry, in seconds from its creation. */
  readonly expiresAfter: number | null;
}

export type Plans = ReadonlyMap<string, PlanConfig>;

export const PLAN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const PLANS_MAX = 100;
const PLAN_KEYS = ["title", "seats", "channels", "features", "seatLease", "tokenTtl", "updatesFor", "expiresAfter"] as const;
/** As the admin API's (src/domain/admin/licenses.ts SEATS_MAX). */
const SEATS_MAX = 1_000_000_000;
/** As a licence's seat lease (src/domain/seat-lease.ts: at least twice the sightings' flush interval, at most a year and a day). */
const SEAT_LEASE_MIN_SECONDS = 60;
const SEAT_LEASE_MAX_SECONDS = 366 * 86_400;
const TITLE_MAX = 200;

const fail = (where: string, message: string): never => {
  throw new ConfigError("config", `${where} ${message}`);
};

const describe = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value.slice(0, 60)) : (JSON.stringify(value) ?? String(value)));

/**
 * The `plans` table of the TOML file (absent: none) as plans, checked against the site's channels.
 * Each refusal is a ConfigError naming the key (`[plans.pro] seats ...`).
 */
export function parsePlans(table: unknown, siteChannels: readonly string[]): Plans {
  const plans = new Map<string, PlanConfig>();
  if (table === undefined) return plans;
  if (!isTable(table)) return fail("plans", "must be tables, one [plans.NAME] for each plan");
  const entries = Object.entries(table);
  if (entries.length > PLANS_MAX) fail("plans", `lists more than ${PLANS_MAX} plans`);
  for (const [name, body] of entries) {
    const where = `[plans.${name.slice(0, 64)}]`;
    if (!PLAN_NAME.test(name)) fail(where, "is not a plan name (letters, digits, dots, dashes and underscores, at most 64 characters)");
    if (!isTable(body)) fail(`plans.${name}`, "must be a table ([plans.NAME] with its keys below it)");
    plans.set(name, parsePlan(name, body as Record<string, unknown>, siteChannels, where));
  }
  return plans;
}

function parsePlan(name: string, body: Record<string, unknown>, siteChannels: readonly string[], where: string): PlanConfig {
  for (const key of Object.keys(body))
    if (!(PLAN_KEYS as readonly string[]).includes(key)) fail(where, `has an unknown key "${key.slice(0, 60)}" (known: ${PLAN_KEYS.join(", ")})`);
  const title = optional(body.title, (v) => {
    if (typeof v !== "string" || !v.trim() || v.length > TITLE_MAX || /[\x00-\x1f\x7f]/.test(v))
      fail(where, `title must be text of 1 to ${TITLE_MAX} characters without control characters (got ${describe(v)})`);
    return (v as string).trim();
  });
  const seats = optional(body.seats, (v) => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > SEATS_MAX)
      fail(where, `seats must be a whole number from 1 to ${SEATS_MAX} (got ${describe(v)})`);
    return v as number;
  });
  const channels = optional(body.channels, (v) => {
    if (!Array.isArray(v) || v.length === 0 || v.some((c) => typeof c !== "string"))
      fail(where, `channels must be a list of channel names, such as ["stable"] (got ${describe(v)})`);
    const list = [...new Set(v as string[])];
    const unknown = list.find((c) => !siteChannels.includes(c));
    if (unknown !== undefined) fail(where, `channels names "${unknown.slice(0, 60)}", not among the site's channels (${siteChannels.join(", ")})`);
    return list;
  });
  const features = optional(body.features, (v) => {
    if (!Array.isArray(v) || v.some((c) => typeof c !== "string"))
      fail(where, `features must be a list such as ["export-pdf", "max-projects=50"] (got ${describe(v)})`);
    const problem = featureListProblem(v as string[], "features");
    if (problem) fail(where, problem);
    return v as string[];
  });
  const seatLease = optional(body.seatLease, (v) => {
    const seconds = duration(where, "seatLease", v, "366d");
    if (seconds < SEAT_LEASE_MIN_SECONDS || seconds > SEAT_LEASE_MAX_SECONDS || !/^\d{1,9}[smhdw]$/.test(v as string))
      fail(where, `seatLease must be a duration with its unit from 60s to 366d, such as 30d (got ${describe(v)})`);
    return v as string;
  });
  const tokenTtl = optional(body.tokenTtl, (v) => {
    const seconds = duration(where, "tokenTtl", v, MAX_TOKEN_TTL);
    if (seconds < 60) fail(where, `tokenTtl must be at least 60s (got ${describe(v)})`);
    return seconds;
  });
  const updatesFor = optional(body.updatesFor, (v) => duration(where, "updatesFor", v));
  const expiresAfter = optional(body.expiresAfter, (v) => duration(where, "expiresAfter", v));
  return { name, title, seats, channels, features, seatLease, tokenTtl, updatesFor, expiresAfter };
}

const optional = <T>(value: unknown, read: (v: unknown) => T): T | null => (value === undefined ? null : read(value));

/** A duration written as a setting's (`365d`), as seconds, refused naming the key. */
function duration(where: string, key: string, value: unknown, max?: string): number {
  if (typeof value !== "string") return fail(where, `${key} must be a duration in quotes, such as "365d" (got ${describe(value)})`);
  try {
    return parseDuration(key, value, max);
  } catch (e) {
    return fail(where, `${key}: ${(e as Error).message}`);
  }
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}
