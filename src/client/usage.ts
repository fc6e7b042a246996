import { KeyturnClientError } from "./errors.js";
import type { Transport } from "./transport.js";

/** What a use of a meter left (POST /entitlements/usage's answer). */
export interface UsageAnswer {
  /** What is left of the meter in its current period (or in all, for a one-time pool). */
  readonly remaining: number;
  /** When the period starts again from zero; absent for a one-time pool. */
  readonly resetsAt?: string;
}

export interface MeterUse {
  readonly meter: string;
  readonly amount: number;
  /**
   * New for each use, the same when the use is retried (within 24 h): the site counts it once and
   * answers the retry with the first answer. Absent: the kit makes one (a retry is then a new use).
   */
  readonly idempotencyKey?: string;
}

/** A meter as GET /entitlements/usage answers it. */
export interface MeterState {
  readonly limit: number;
  /** `30d`; null for a one-time pool. */
  readonly period: string | null;
  readonly used: number;
  readonly remaining: number;
  readonly resetsAt: string | null;
}

const KEY = /^[\x21-\x7e]{1,255}$/;

/** GET /entitlements/usage: the licence's meters by name as they stand (nothing spent); `{}` without meters. */
export async function readMeters(transport: Transport, token: string, signal?: AbortSignal): Promise<Record<string, MeterState>> {
  const answer = await transport.json<{ meters?: unknown }>("GET", "/entitlements/usage", { token, ...(signal ? { signal } : {}) });
  const meters = answer.meters;
  const ok =
    typeof meters === "object" &&
    meters !== null &&
    Object.values(meters).every(
      (m) => typeof m === "object" && m !== null && Number.isSafeInteger((m as MeterState).remaining) && Number.isSafeInteger((m as MeterState).limit),
    );
  if (!ok) throw new KeyturnClientError("bad_answer", "The site's answer has no meters.");
  return meters as Record<string, MeterState>;
}

/**
 * POST /entitlements/usage with the bearer. Over the meter's limit the site refuses `usage_limit`
 * (a KeyturnClientError with that code, the site's message and status 403); nothing was spent.
 */
export async function useMeter(transport: Transport, token: string, use: MeterUse, signal?: AbortSignal): Promise<UsageAnswer> {
  const idempotencyKey = use.idempotencyKey ?? crypto.randomUUID();
  if (!KEY.test(idempotencyKey)) throw new TypeError("idempotencyKey must be 1 to 255 visible ASCII characters");
  if (!Number.isSafeInteger(use.amount) || use.amount < 1) throw new TypeError("amount must be a whole number of at least 1");
  const answer = await transport.json<Record<string, unknown>>("POST", "/entitlements/usage", {
    token,
    body: { meter: use.meter, amount: use.amount, idempotencyKey },
    ...(signal ? { signal } : {}),
  });
  const { remaining, resetsAt } = answer;
  if (
    !Number.isSafeInteger(remaining) ||
    (remaining as number) < 0 ||
    (resetsAt !== undefined && (typeof resetsAt !== "string" || Number.isNaN(Date.parse(resetsAt))))
  )
    throw new KeyturnClientError("bad_answer", "The site's answer to a use of a meter is not { remaining, resetsAt? }.");
  return { remaining: remaining as number, ...(resetsAt !== undefined ? { resetsAt: resetsAt as string } : {}) };
}
