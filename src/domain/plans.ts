import type { PlanConfig, Plans } from "../config/plans";
import type { LicensePatch, LicenseRecord } from "../store/types";
import { isoTime } from "./clock";
import { KeyturnError } from "./errors";

/**
 * Plans (src/config/plans.ts) applied to licences: a licence created naming a configured plan takes
 * the plan's values for the fields its caller left out (the caller's own fields win, an explicit
 * null included), and a renewal extends its maintenance window by the plan's length. The admin
 * API, the console, `keyturn license create` and the payment bridges all come through here.
 */

/** The fields of a new licence a plan can give, as the create input writes them. */
export interface PlanFields {
  planTitle?: string;
  seats?: number;
  channels?: string[];
  features?: string[];
  seatLease?: string | null;
  tokenTtl?: number | null;
  updatesUntil?: string | null;
  expires?: string | null;
}

/** The configured plan of that name, or undefined (a plan not configured is only a label, as before plans). */
export function findPlan(plans: Plans | undefined, name: string): PlanConfig | undefined {
  return plans?.get(name.trim());
}

/** What `plan` gives a licence created at `now`: its windows counted from then. */
export function planFields(plan: PlanConfig, now: number): PlanFields {
  const fields: PlanFields = {};
  if (plan.title !== null) fields.planTitle = plan.title;
  if (plan.seats !== null) fields.seats = plan.seats;
  if (plan.channels !== null) fields.channels = [...plan.channels];
  if (plan.features !== null) fields.features = [...plan.features];
  if (plan.seatLease !== null) fields.seatLease = plan.seatLease;
  if (plan.tokenTtl !== null) fields.tokenTtl = plan.tokenTtl;
  if (plan.updatesFor !== null) fields.updatesUntil = isoTime(now + plan.updatesFor * 1000);
  if (plan.expiresAfter !== null) fields.expires = isoTime(now + plan.expiresAfter * 1000);
  return fields;
}

/**
 * The create input with the named plan's values where the caller gave none. Without a configured
 * plan of that name the input is returned as it came. Either way `seats` and `channels` must be
 * there afterwards: invalid_request in the schema's words otherwise.
 */
export function withPlan<T extends { plan: string } & PlanFields>(
  plans: Plans | undefined,
  input: T,
  now: number,
): T & PlanFields & { seats: number; channels: string[] } {
  const plan = findPlan(plans, input.plan);
  const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as T;
  const merged = (plan ? { ...planFields(plan, now), ...given } : given) as T;
  for (const field of ["seats", "channels"] as const)
    if (merged[field] === undefined)
      throw new KeyturnError("invalid_request", plan ? `${field} is required: the plan ${plan.name} gives none.` : `${field} is required.`);
  return merged as T & PlanFields & { seats: number; channels: string[] };
}

/**
 * What a renewal of `license` on `plan` changes (the payment bridges call it for a renewal): the
 * maintenance window extended by the plan's `updatesFor` from its end, or from now when it has
 * ended or there is none; a licence with an expiry extended by `expiresAfter` likewise. A licence
 * that expires never keeps expiring never. Empty when the plan gives neither length.
 */
export function renewalPatch(license: Pick<LicenseRecord, "updatesUntil" | "expires">, plan: PlanConfig, now: number): LicensePatch {
  const extend = (end: number | null | undefined, seconds: number) => Math.max(end ?? now, now) + seconds * 1000;
  return {
    ...(plan.updatesFor !== null ? { updatesUntil: extend(license.updatesUntil, plan.updatesFor) } : {}),
    ...(plan.expiresAfter !== null && license.expires !== null ? { expires: extend(license.expires, plan.expiresAfter) } : {}),
  };
}
