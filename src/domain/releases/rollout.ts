import { ReleaseProblem } from "./problem";

/**
 * A manifest's optional `rollout`: a fixed share of installations (`percent`, 0–100) or a linear
 * ramp from 0 % at `released` to 100 % `days` days later. No rollout: every installation.
 */
export type Rollout = { readonly percent: number } | { readonly days: number };

/** 2^64: a share is kept as the integer threshold share × 2^64, and u × 2^64 is the bucket's integer. */
export const FULL = 1n << 64n;
const DAY_MS = 86_400_000n;

/** Checks a manifest's `rollout` value: exactly one of percent (0–100) or days (> 0), nothing else. */
export function parseRollout(value: unknown): Rollout | null {
  if (value === undefined) return null;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ReleaseProblem('manifest rollout must be an object: { "percent": P } or { "days": D }');
  const keys = Object.keys(value);
  const r = value as Record<string, unknown>;
  const unknown = keys.find((k) => k !== "percent" && k !== "days");
  if (unknown !== undefined) throw new ReleaseProblem(`manifest rollout has an unknown field ${JSON.stringify(unknown.slice(0, 40))} (only percent or days)`);
  if (keys.length !== 1) throw new ReleaseProblem("manifest rollout must have exactly one of percent or days");
  if ("percent" in r) {
    const p = r.percent;
    if (typeof p !== "number" || !Number.isFinite(p) || p < 0 || p > 100) throw new ReleaseProblem("manifest rollout percent must be a number from 0 to 100");
    return Object.freeze({ percent: p });
  }
  const d = r.days;
  if (typeof d !== "number" || !Number.isFinite(d) || d <= 0 || d > 3650)
    throw new ReleaseProblem("manifest rollout days must be a number above 0 (at most 3650)");
  return Object.freeze({ days: d });
}

/** A finite double as an exact fraction num/den (den a power of two). */
function fractionOf(x: number): { num: bigint; den: bigint } {
  let den = 1n;
  while (!Number.isInteger(x)) {
    x *= 2;
    den *= 2n;
  }
  return { num: BigInt(x), den };
}

/** ceil(a / b) for a >= 0, b > 0. */
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

/**
 * The admission threshold of a release at `now`: an installation whose bucket integer is below it is
 * admitted (u < share ⇔ u × 2^64 < share × 2^64 ⇔ bucket < ceil(share × 2^64), computed exactly).
 * `elapsed` is the ramp's time so far: now (or the halt time) − released − time spent halted.
 */
export function thresholdOf(rollout: Rollout | null, elapsedMs: number): bigint {
  if (rollout === null) return FULL;
  if ("percent" in rollout) {
    const { num, den } = fractionOf(rollout.percent);
    return ceilDiv(num * FULL, den * 100n);
  }
  if (elapsedMs <= 0) return 0n;
  const { num, den } = fractionOf(rollout.days);
  // share = elapsed / (days × DAY) = elapsed × den / (num × DAY)
  const t = ceilDiv(BigInt(Math.floor(elapsedMs)) * den * FULL, num * DAY_MS);
  return t > FULL ? FULL : t;
}

/**
 * For a ramp (days), the first elapsed time (whole ms) at which an installation with this bucket is
 * admitted: elapsed × den × 2^64 > bucket × num × DAY. Null for a fixed percent (never changes).
 */
export function admittedAfterMs(rollout: Rollout, bucket: bigint): number | null {
  if (!("days" in rollout)) return null;
  const { num, den } = fractionOf(rollout.days);
  return Number((bucket * num * DAY_MS) / (den * FULL)) + 1;
}

/** The installation's bucket for a release: the first 8 bytes of SHA-256("<dev>:<lane>:<version>"), big-endian. */
export function bucketOf(dev: string, lane: string, version: string): bigint {
  const digest = new Bun.CryptoHasher("sha256").update(`${dev}:${lane}:${version}`).digest();
  return digest.readBigUInt64BE(0);
}

/** A threshold as a percentage (for answers and events). */
export function percentOf(threshold: bigint): number {
  return Number((threshold * 1_000_000n) / FULL) / 10_000;
}
