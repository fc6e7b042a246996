import { KeyturnError } from "../errors";
import { licenseView, newEvent, type LicenseView } from "../events";
import { findPlan, renewalPatch } from "../plans";
import { adminAudit, requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { findLicense } from "./licenses";

/**
 * Renews a licence on its plan (a payment bridge's renewal, or a person's): the maintenance window
 * extended by the plan's `updatesFor`, an expiry by its `expiresAfter` (src/domain/plans.ts
 * `renewalPatch`). Scope licenses:write; audit license-renew; event license.updated with the
 * changed fields. `planName` absent: the licence's own plan. A plan that is not configured, or a
 * plan that gives neither length, is invalid_request: there is nothing to extend by.
 */
export async function renewLicense(
  d: AdminDeps,
  caller: AdminCaller,
  keyOrId: unknown,
  planName?: string,
): Promise<{ license: LicenseView; changed: string[] }> {
  requireScope(caller.principal, "licenses:write");
  const current = await findLicense(d, keyOrId);
  if (current.kind !== "license") throw new KeyturnError("invalid_request", "Staff entitlements follow the identity provider and are not renewed.");
  const name = planName ?? current.plan;
  const plan = findPlan(d.plans, name);
  if (!plan)
    throw new KeyturnError(
      "invalid_request",
      `No plan ${JSON.stringify(name.slice(0, 64))} is configured: a renewal extends by a plan's updatesFor and expiresAfter.`,
    );
  const now = d.clock();
  const patch = renewalPatch(current, plan, now);
  const changed = Object.keys(patch);
  if (changed.length === 0)
    throw new KeyturnError(
      "invalid_request",
      `The plan ${plan.name} gives neither updatesFor nor expiresAfter (or the licence never expires): nothing to extend.`,
    );
  const result = await d.store.updateLicense(current.id, patch, {
    audit: adminAudit(d, caller, "license-renew", { licenseId: current.id }),
    event: (l) => newEvent("license.updated", { license: licenseView(l), changed }, now),
  });
  if (result.outcome !== "updated") throw new KeyturnError("not_found", `No licence ${current.id}.`);
  return { license: licenseView(result.license, result.seatsUsed), changed };
}
