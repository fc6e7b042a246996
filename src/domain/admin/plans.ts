import type { PlanConfig } from "../../config/plans";
import { auditRead } from "./read-audit";
import { requireScope, type AdminCaller, type AdminDeps } from "./deps";

/** A plan as the admin API and the console show it: durations in seconds, null where the plan gives nothing. */
export type PlanView = PlanConfig;

/** The configuration's plans, in the file's order (scope licenses:read; audit plan-list). */
export async function listPlans(d: AdminDeps, caller: AdminCaller): Promise<PlanView[]> {
  requireScope(caller.principal, "licenses:read");
  await auditRead(d, caller, "plan-list");
  return [...(d.plans?.values() ?? [])];
}
