import type { LicenseRecord } from "../store/types";
import { SIGHTINGS_FLUSH_MS } from "./adoption";
import { isoTime } from "./clock";
import { KeyturnError } from "./errors";

/**
 * Seat leases (docs/architecture.md, "lease"): an installation keeps its seat while it is seen
 * within the lease. Sightings reach the records up to one flush interval late, so a lease shorter
 * than two intervals could lapse an installation that is in use.
 */
export const MIN_SEAT_LEASE_MS = 2 * SIGHTINGS_FLUSH_MS;
/** A year: longer leases reclaim nothing a support person would wait for. */
export const MAX_SEAT_LEASE_MS = 366 * 86_400_000;

const UNITS: ReadonlyArray<readonly [string, number]> = [
  ["w", 604_800_000],
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1000],
];

/** `90s`, `10m`, `12h`, `30d`, `2w` (or `none`/null: no lease) → ms, refused outside the bounds naming seatLease. */
export function parseSeatLease(text: string | null): number | null {
  if (text === null || text === "none") return null;
  const m = /^(\d{1,9})([smhdw])$/.exec(text);
  const ms = m ? Number(m[1]) * UNITS.find(([u]) => u === m[2])![1] : NaN;
  if (!Number.isFinite(ms))
    throw new KeyturnError("invalid_request", `seatLease must be a duration such as 10m, 12h or 30d, or none (got "${text.slice(0, 40)}").`);
  if (ms < MIN_SEAT_LEASE_MS)
    throw new KeyturnError(
      "invalid_request",
      `seatLease must be at least ${formatSeatLease(MIN_SEAT_LEASE_MS)}: twice the interval at which sightings are written, or a seat in use could lapse (got ${text})`,
    );
  if (ms > MAX_SEAT_LEASE_MS) throw new KeyturnError("invalid_request", `seatLease must be at most ${formatSeatLease(MAX_SEAT_LEASE_MS)} (got ${text}).`);
  return ms;
}

/** The lease in the largest unit that states it exactly: 2592000000 → `30d`. */
export function formatSeatLease(ms: number): string {
  const [unit, size] = UNITS.find(([, size]) => ms % size === 0) ?? ["s", 1000];
  return `${Math.floor(ms / size)}${unit}`;
}

/**
 * The token TTL for a license's tokens: no longer than its seat lease, so a reclaimed seat's token
 * stops being accepted by caches of the token (a mirror without the feed) soon after the seat lapses.
 * Kept apart so another per-license TTL composes with it (cap the result of the other).
 */
export function capTokenTtlToLease(ttlSeconds: number, license: Pick<LicenseRecord, "seatLease">): number {
  const lease = license.seatLease ?? null;
  return lease === null ? ttlSeconds : Math.min(ttlSeconds, Math.floor(lease / 1000));
}

export interface SeatLeaseView {
  readonly lease: string;
  readonly seconds: number;
  readonly lapses: string;
}

/** What an answer says of a leased seat: the lease and when the seat lapses unless seen again. */
export function seatLeaseView(license: Pick<LicenseRecord, "seatLease">, lastSeen: number): SeatLeaseView | null {
  const lease = license.seatLease ?? null;
  return lease === null ? null : { lease: formatSeatLease(lease), seconds: Math.floor(lease / 1000), lapses: isoTime(lastSeen + lease) };
}
