import { ReleaseProblem } from "./problem";

/**
 * A manifest's optional `rollout`: a fixed share of installations (`percent`, 0–100) or a linear
 * ramp from 0 % at `released` to 100 % `days` days later, and optionally `targets` (licences and
 * plans admitted whatever the share) and `autoHalt` (the failure rate of install reports that halts
 * the release by itself, release-health.ts). No rollout: every installation.
 */
export type Rollout = ({ readonly percent: number } | { readonly days: number }) & {
  readonly targets?: RolloutTargets;
  readonly autoHalt?: AutoHalt;
};

/** 2^64: a share is kept as the integer threshold share × 2^64, and u × 2^64 is the bucket's integer. */
export const FULL = 1n << 64n;
const DAY_MS = 86_400_000n;

/** Licences (by id) and plans (by name) a rollout admits first, whatever its share. */
export interface RolloutTargets {
  readonly licenses: readonly string[];
  readonly plans: readonly string[];
}

/**
 * Halt the release by itself when, among the install reports of the last `window` (a duration such
 * as `6h`, `2d`), at least `minReports` installations reported and the failed share of them is at
 * least `failureRate` (0–1).
 */
export interface AutoHalt {
  readonly failureRate: number;
  readonly minReports: number;
  readonly window: string;
}

/** A target list's limits: enough for a beta programme; a larger group is a plan. */
const MAX_TARGETS = 1000;
const TARGET_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;
const WINDOW = /^([1-9][0-9]{0,3})([mhd])$/;
const WINDOW_UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** An autoHalt window: from 5 minutes to 90 days. */
const MIN_WINDOW_MS = 5 * 60_000;
const MAX_WINDOW_MS = 90 * 86_400_000;

/** An autoHalt window's length in milliseconds (the manifest's text was checked by parseRollout). */
export function windowMs(window: string): number {
  const m = WINDOW.exec(window);
  return m ? Number(m[1]) * WINDOW_UNIT_MS[m[2] as keyof typeof WINDOW_UNIT_MS] : 0;
}

const ROLLOUT_FIELDS = ["percent", "days", "targets", "autoHalt"];

/** Checks a manifest's `rollout` value: exactly one of percent (0–100) or days (> 0), with optional targets and autoHalt. */
export function parseRollout(value: unknown): Rollout | null {
  if (value === undefined) return null;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ReleaseProblem('manifest rollout must be an object: { "percent": P } or { "days": D }');
  const keys = Object.keys(value);
  const r = value as Record<string, unknown>;
  const unknown = keys.find((k) => !ROLLOUT_FIELDS.includes(k));
  if (unknown !== undefined)
    throw new ReleaseProblem(`manifest rollout has an unknown field ${JSON.stringify(unknown.slice(0, 40))} (only percent or days, targets, autoHalt)`);
  if (("percent" in r ? 1 : 0) + ("days" in r ? 1 : 0) !== 1) throw new ReleaseProblem("manifest rollout must have exactly one of percent or days");
  const extra = {
    ...("targets" in r ? { targets: parseTargets(r.targets) } : {}),
    ...("autoHalt" in r ? { autoHalt: parseAutoHalt(r.autoHalt) } : {}),
  };
  if ("percent" in r) {
    const p = r.percent;
    if (typeof p !== "number" || !Number.isFinite(p) || p < 0 || p > 100) throw new ReleaseProblem("manifest rollout percent must be a number from 0 to 100");
    return Object.freeze({ percent: p, ...extra });
  }
  const d = r.days;
  if (typeof d !== "number" || !Number.isFinite(d) || d <= 0 || d > 3650)
    throw new ReleaseProblem("manifest rollout days must be a number above 0 (at most 3650)");
  return Object.freeze({ days: d, ...extra });
}

function parseTargets(value: unknown): RolloutTargets {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ReleaseProblem('manifest rollout targets must be an object: { "licenses": [...], "plans": [...] }');
  const t = value as Record<string, unknown>;
  const unknown = Object.keys(t).find((k) => k !== "licenses" && k !== "plans");
  if (unknown !== undefined)
    throw new ReleaseProblem(`manifest rollout targets has an unknown field ${JSON.stringify(unknown.slice(0, 40))} (only licenses, plans)`);
  const list = (field: "licenses" | "plans"): readonly string[] => {
    const v = t[field] ?? [];
    if (!Array.isArray(v) || v.length > MAX_TARGETS || !v.every((x) => typeof x === "string" && TARGET_NAME.test(x)))
      throw new ReleaseProblem(
        `manifest rollout targets.${field} must be a list of at most ${MAX_TARGETS} names (letters, digits, _ . : -, at most 100 characters)`,
      );
    return Object.freeze([...new Set(v as string[])]);
  };
  const targets = { licenses: list("licenses"), plans: list("plans") };
  if (targets.licenses.length + targets.plans.length === 0) throw new ReleaseProblem("manifest rollout targets must name at least one licence or plan");
  return Object.freeze(targets);
}

function parseAutoHalt(value: unknown): AutoHalt {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ReleaseProblem('manifest rollout autoHalt must be an object: { "failureRate": R, "minReports": N, "window": "24h" }');
  const a = value as Record<string, unknown>;
  const unknown = Object.keys(a).find((k) => k !== "failureRate" && k !== "minReports" && k !== "window");
  if (unknown !== undefined)
    throw new ReleaseProblem(`manifest rollout autoHalt has an unknown field ${JSON.stringify(unknown.slice(0, 40))} (only failureRate, minReports, window)`);
  const { failureRate, minReports, window } = a;
  if (typeof failureRate !== "number" || !Number.isFinite(failureRate) || failureRate <= 0 || failureRate > 1)
    throw new ReleaseProblem("manifest rollout autoHalt.failureRate must be a number above 0, at most 1 (0.05: 5 % of the installations reporting)");
  if (typeof minReports !== "number" || !Number.isInteger(minReports) || minReports < 1 || minReports > 1_000_000)
    throw new ReleaseProblem("manifest rollout autoHalt.minReports must be a whole number from 1 to 1000000");
  const ms = typeof window === "string" ? windowMs(window) : 0;
  if (ms < MIN_WINDOW_MS || ms > MAX_WINDOW_MS)
    throw new ReleaseProblem('manifest rollout autoHalt.window must be a duration from 5m to 90d, such as "30m", "6h" or "2d"');
  return Object.freeze({ failureRate, minReports, window: window as string });
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
