import { type Static, Type } from "@sinclair/typebox";
import type { MeterDefinition, MeterRecord, MeterSet } from "../store/meter-types";
import type { Store } from "../store/types";
import { type Audit, type RequestContext } from "./audit";
import { isoTime, type Clock } from "./clock";
import { KeyturnError } from "./errors";
import { newEvent } from "./events";
import type { Principal } from "./licensing";
import { formatSeatLease } from "./seat-lease";

/**
 * Metered use (docs/trials-and-meters.md, "Metered use"): a licence may carry meters, each a limit
 * per period (`500` per `30d`) or a one-time pool (no period). A program spends from a meter with
 * its bearer token; the store counts each use under the meter's lock, so no number of processes
 * using one meter at once takes it past its limit.
 */

export const METER_NAME = "^[a-z0-9][a-z0-9._-]{0,39}$";
/** Below 2^53 with room for any sum of amounts: integers stay exact in JSON and in both stores. */
export const METER_LIMIT_MAX = 1_000_000_000_000;
export const METER_AMOUNT_MAX = 1_000_000_000;
export const METERS_MAX = 20;
const PERIOD_MIN_MS = 60_000;
const PERIOD_MAX_MS = 3660 * 86_400_000;
const IDEMPOTENCY_KEY = "^[\\x21-\\x7e]{1,255}$";

const PERIOD_UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export const MeterInput = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: METER_LIMIT_MAX, description: "How much may be used in a period (or in all, without one)" }),
    period: Type.Optional(
      Type.Union([Type.String({ maxLength: 12, description: "The period after which use starts again from zero (1h, 30d, 4w); at least 1m" }), Type.Null()]),
    ),
  },
  { additionalProperties: false },
);

/** A licence's meters as the admin API, the console and `keyturn license` give them: by name. */
export const MetersInput = Type.Record(Type.String({ pattern: METER_NAME }), MeterInput, {
  additionalProperties: false,
  maxProperties: METERS_MAX,
  description: `At most ${METERS_MAX} meters, named [a-z0-9][a-z0-9._-]{0,39}; each a limit and an optional period (absent or null: a one-time pool)`,
});
export type MetersInput = Static<typeof MetersInput>;

/** POST /entitlements/usage's body. */
export const UsageModel = Type.Object(
  {
    meter: Type.String({ pattern: METER_NAME, description: "The meter's name" }),
    amount: Type.Integer({ minimum: 1, maximum: METER_AMOUNT_MAX, description: "How much this use spends" }),
    idempotencyKey: Type.String({
      pattern: IDEMPOTENCY_KEY,
      description: "1 to 255 visible ASCII characters, new for each use: a retry with the same key within 24 h is answered the first answer and counted once",
    }),
  },
  { additionalProperties: false },
);
export type UsageInput = Static<typeof UsageModel>;

export interface UsageAnswer {
  readonly remaining: number;
  /** When the period starts again; absent for a one-time pool. */
  readonly resetsAt?: string;
}

/** A meter as the admin API, the console and stats show it. */
export interface MeterView {
  readonly limit: number;
  /** The period (`30d`), null for a one-time pool. */
  readonly period: string | null;
  readonly used: number;
  readonly remaining: number;
  readonly resetsAt: string | null;
}

/** `30d`, `12h`, `1w` → ms; refused (naming the meter) outside 1m..3660d. */
export function parsePeriod(text: string, meter: string): number {
  const m = /^(\d{1,9})([smhdw])$/.exec(text);
  const ms = m ? Number(m[1]) * PERIOD_UNITS[m[2]!]! : Number.NaN;
  if (!Number.isFinite(ms) || ms < PERIOD_MIN_MS || ms > PERIOD_MAX_MS)
    throw new KeyturnError("invalid_request", `meters.${meter}.period must be a duration from 1m to 3660d such as 30d or 1h (got "${text.slice(0, 20)}").`);
  return ms;
}

/** The decoded input as the store keeps meters, by name. */
export function meterDefinitions(input: MetersInput): MeterDefinition[] {
  return Object.entries(input)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, m]) => ({ name, limit: m.limit, period: m.period == null ? null : parsePeriod(m.period, name) }));
}

/** The meters to write with a licence's change, or undefined when none were given. */
export function meterSet(licenseId: string, input: MetersInput | undefined, now: number): MeterSet | undefined {
  return input === undefined ? undefined : { licenseId, meters: meterDefinitions(input), now };
}

/**
 * A licence's meters change, or undefined when `input` says what is already there (limits and
 * periods; use is not compared).
 */
export async function changedMeters(store: Store, licenseId: string, input: MetersInput | undefined, now: number): Promise<MeterSet | undefined> {
  const set = meterSet(licenseId, input, now);
  if (!set) return undefined;
  const same = (a: readonly MeterDefinition[], b: readonly MeterDefinition[]) =>
    a.length === b.length && a.every((m, i) => m.name === b[i]!.name && m.limit === b[i]!.limit && m.period === b[i]!.period);
  return same(set.meters, await store.listMeters(licenseId)) ? undefined : set;
}

/**
 * `exports=500/30d` or `credits=1000` (a one-time pool), as `keyturn license create --meter` takes
 * it; several are joined with commas or given as several options.
 */
export function parseMeterOption(texts: readonly string[]): MetersInput {
  const meters: Record<string, { limit: number; period: string | null }> = {};
  for (const text of texts
    .flatMap((t) => t.split(","))
    .map((t) => t.trim())
    .filter((t) => t !== "")) {
    const m = /^([^=]+)=(\d{1,13})(?:\/(.+))?$/.exec(text);
    if (!m) throw new KeyturnError("invalid_request", `--meter takes NAME=LIMIT or NAME=LIMIT/PERIOD, such as exports=500/30d (got "${text.slice(0, 60)}").`);
    meters[m[1]!.trim()] = { limit: Number(m[2]), period: m[3] ?? null };
  }
  return meters;
}

/** The meter as it stands at `now`: a period that ended starts again from zero (in the window `now` falls in). */
export function rolled(m: MeterRecord, now: number): MeterRecord {
  if (m.period === null || now < m.windowStart + m.period) return m;
  const windows = Math.floor((now - m.windowStart) / m.period);
  return { ...m, windowStart: m.windowStart + windows * m.period, used: 0 };
}

export function meterView(m: MeterRecord, now: number): MeterView {
  const r = rolled(m, now);
  return {
    limit: r.limit,
    period: r.period === null ? null : formatSeatLease(r.period),
    used: r.used,
    remaining: Math.max(0, r.limit - r.used),
    resetsAt: r.period === null ? null : isoTime(r.windowStart + r.period),
  };
}

/** A licence's meters, by name, as views. */
export function meterViews(meters: readonly MeterRecord[], now: number): Record<string, MeterView> {
  return Object.fromEntries(meters.map((m) => [m.name, meterView(m, now)]));
}

function usageAnswer(m: MeterRecord): UsageAnswer {
  return { remaining: m.limit - m.used, ...(m.period === null ? {} : { resetsAt: isoTime(m.windowStart + m.period) }) };
}

/** Whether a use from `before` to `after` crossed `percent` of the limit (integers only: exact at any size). */
const crossed = (before: number, after: number, limit: number, percent: number) => before * 100 < limit * percent && after * 100 >= limit * percent;

export interface MeteringDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly audit: Audit;
  /** The vendor's address when this site is a mirror: the meters live at the vendor. */
  readonly mirrorOf?: string | null;
}

/** POST /entitlements/usage: spends from a meter of the bearer's licence; GET: what is left of each. */
export class Metering {
  constructor(private readonly deps: MeteringDeps) {}

  /** The bearer's licence's meters as they stand (nothing spent): `{}` for a licence without. */
  async meters(principal: Principal): Promise<Record<string, MeterView>> {
    this.requireRecords();
    return meterViews(await this.deps.store.listMeters(principal.claims.lic), this.deps.clock());
  }

  private requireRecords(): void {
    if (this.deps.mirrorOf) throw new KeyturnError("licensing_unavailable", `This site is a mirror of ${this.deps.mirrorOf}: metered use is counted there.`);
  }

  async use(principal: Principal, input: UsageInput, ctx: RequestContext): Promise<UsageAnswer> {
    this.requireRecords();
    const { claims } = principal;
    const ids = { licenseId: claims.lic, activationId: claims.sub };
    const now = this.deps.clock();
    const result = await this.deps.store.useMeter({
      licenseId: claims.lic,
      meter: input.meter,
      amount: input.amount,
      key: input.idempotencyKey,
      now,
      apply: (current) => {
        const m = rolled(current, now);
        return m.used + input.amount > m.limit ? null : { ...m, used: m.used + input.amount };
      },
      journal: (before, after) => {
        const from = rolled(before, now).used;
        const meter = { name: after.name, ...meterView(after, now) };
        const data = { license: { id: claims.lic }, activation: { id: claims.sub }, meter };
        const events = [
          ...(crossed(from, after.used, after.limit, 80) && after.used < after.limit ? [newEvent("meter.warning", data, now)] : []),
          ...(crossed(from, after.used, after.limit, 100) ? [newEvent("meter.exhausted", data, now)] : []),
        ];
        return { answer: JSON.stringify(usageAnswer(after)), audit: { ...this.deps.audit.okLine("usage", ctx, claims.lic), activationId: claims.sub }, events };
      },
    });
    switch (result.outcome) {
      case "used":
        return JSON.parse(result.answer) as UsageAnswer;
      case "replayed":
        if (result.meter !== input.meter || result.amount !== input.amount)
          throw new KeyturnError("idempotency_conflict", "This idempotencyKey was used for another meter or amount in the last 24 hours.", ids);
        return JSON.parse(result.answer) as UsageAnswer;
      case "unknown":
        throw new KeyturnError("not_found", `The licence has no meter named ${input.meter}.`, ids);
      case "refused": {
        const m = rolled(result.meter, now);
        const left = Math.max(0, m.limit - m.used);
        const until = m.period === null ? "" : ` until ${isoTime(m.windowStart + m.period)}`;
        throw new KeyturnError(
          "usage_limit",
          `The meter ${m.name} has ${left} of ${m.limit} left${until}: this use of ${input.amount} is over the limit.`,
          ids,
        );
      }
    }
  }
}
