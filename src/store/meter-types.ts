/**
 * The records of metered use (migration 16), as the Store interface (types.ts) offers them. The
 * rules (windows, limits, thresholds) are the domain's (src/domain/meters.ts): the store runs them
 * inside its transaction, under the meter's lock.
 */
import type { AuditRecord, NewEvent } from "./types";

/** A meter as a licence is given it: a limit per period (ms), or a one-time pool (period null). */
export interface MeterDefinition {
  readonly name: string;
  readonly limit: number;
  readonly period: number | null;
}

/** A licence's meter as it stands: its current window's start and the use counted in it. */
export interface MeterRecord extends MeterDefinition {
  readonly licenseId: string;
  readonly windowStart: number;
  readonly used: number;
}

/**
 * A licence's meters, replaced whole in the transaction of the licence's change (Journal.meters):
 * a meter kept by name keeps its use and window; one not named is removed; a new one starts at `now`.
 */
export interface MeterSet {
  readonly licenseId: string;
  readonly meters: readonly MeterDefinition[];
  readonly now: number;
}

/** One use of a meter, decided and written in one transaction under the meter's lock. */
export interface MeterUse {
  readonly licenseId: string;
  readonly meter: string;
  readonly amount: number;
  /** The caller's idempotency key: a second use with it answers the first answer. */
  readonly key: string;
  readonly now: number;
  /** The meter after this use, or null when it is refused (over its limit). */
  readonly apply: (current: MeterRecord) => MeterRecord | null;
  /** What a granted use writes with it: its answer (kept for the key, JSON), audit line and events. */
  readonly journal: (
    before: MeterRecord,
    after: MeterRecord,
  ) => { readonly answer: string; readonly audit?: AuditRecord; readonly events: readonly NewEvent[] };
}

export type MeterUseResult =
  | { readonly outcome: "used"; readonly answer: string }
  /** The key was used before (with this meter and amount, or others: the domain decides). */
  | { readonly outcome: "replayed"; readonly answer: string; readonly meter: string; readonly amount: number }
  | { readonly outcome: "refused"; readonly meter: MeterRecord }
  | { readonly outcome: "unknown" };

/** Use per meter name over every licence (not revoked), as stats show it. */
export interface MeterTotal {
  readonly name: string;
  readonly licenses: number;
  readonly used: number;
  readonly limit: number;
  /** Licences whose meter has nothing left in its current window (as last written). */
  readonly exhausted: number;
}

export interface MeterStore {
  /** The licence's meters, by name. */
  listMeters(licenseId: string): Promise<MeterRecord[]>;
  /** One use, atomic across processes: never past the limit however many processes use the meter at once. */
  useMeter(use: MeterUse): Promise<MeterUseResult>;
  /** Use per meter name at `now` (a window that ended counts as unused). */
  meterTotals(now: number): Promise<MeterTotal[]>;
}
