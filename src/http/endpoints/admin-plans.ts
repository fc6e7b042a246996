import { Type } from "@sinclair/typebox";
import type { AdminDeps } from "../../domain/admin/deps";
import { listPlans } from "../../domain/admin/plans";
import { renewLicense } from "../../domain/admin/renewal";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS } from "./shared";

const Seconds = (description: string) => Type.Union([Type.Integer(), Type.Null()], { description });

const PlanView = Type.Object({
  name: Type.String(),
  title: Type.Union([Type.String(), Type.Null()], { description: "The licences' planTitle; null: the name" }),
  seats: Type.Union([Type.Integer(), Type.Null()]),
  channels: Type.Union([Type.Array(Type.String()), Type.Null()]),
  features: Type.Union([Type.Array(Type.String()), Type.Null()], { description: "name or name=value" }),
  seatLease: Type.Union([Type.String(), Type.Null()], { description: "e.g. 30d" }),
  tokenTtl: Seconds("Token lifetime in seconds"),
  updatesFor: Seconds("The maintenance window a new licence gets, and a renewal adds, in seconds"),
  expiresAfter: Seconds("A new licence's term in seconds"),
});
const AdminPlanList = Type.Object({ ok: Type.Literal(true), plans: Type.Array(PlanView) });

/** Plans ([plans.NAME] in the configuration) and renewals on them, under /admin (docs/licence-models.md). */
export function adminPlanEndpoints(admin: AdminDeps): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/admin/plans",
      summary: "The plans of the site's configuration: a create naming one takes its values for the fields it leaves out",
      auth: { scope: "licenses:read" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "plan-list",
      answer: AdminPlanList,
      errors: [...ADMIN_ERRORS],
      handler: async ({ admin: caller }) => json({ ok: true, plans: await listPlans(admin, caller) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/licenses/{id}/renew",
      summary:
        "Renew a licence on its plan: its maintenance window extended by the plan's updatesFor (from its end, or from now once ended), an expiry by expiresAfter",
      auth: { scope: "licenses:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "license-renew",
      params: [{ name: "id", description: "The license's id (lic_…) or its key" }],
      answer: S.AdminLicenseUpdated,
      errors: [...ADMIN_ERRORS, "not_found", "invalid_request"],
      handler: async ({ params, admin: caller }) => json({ ok: true, ...(await renewLicense(admin, caller, params.id)) }),
    }),
  ];
}
