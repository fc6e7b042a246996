import type { AdminDeps } from "../../domain/admin/deps";
import {
  createLicense,
  deactivateActivation,
  listActivations,
  reinstateLicense,
  rekeyLicense,
  revokeLicense,
  searchLicenses,
  showLicense,
  updateLicense,
} from "../../domain/admin/licenses";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS, BODY_ERRORS } from "./shared";

const LICENSE_ID: ParamDoc = { name: "id", description: "The license's id (lic_… or staff:…) or its key" };
const ACTIVATION_ID: ParamDoc = { name: "id", description: "The activation's id (act_…)" };

/** The licence lifecycle and the installations of a licence, under /admin. */
export function adminLicenseEndpoints(admin: AdminDeps): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/admin/licenses",
      summary: "Create a license; its key is in this answer only (and in a replay of the same Idempotency-Key within 24 h)",
      auth: { scope: "licenses:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "license-create",
      headers: [
        {
          name: "Idempotency-Key",
          description: "Makes a retried create safe: the same key and body within 24 h answers the first answer again",
          schema: S.IdempotencyKeyHeader,
        },
      ],
      body: S.AdminLicenseCreateBody,
      answer: S.AdminLicenseCreated,
      status: 201,
      errors: [...ADMIN_ERRORS, ...BODY_ERRORS, "idempotency_conflict"],
      handler: async ({ request, body, admin: caller }) => {
        const created = await createLicense(admin, caller, body, request.headers.get("idempotency-key") ?? undefined);
        return json({ ok: true, license: created.license, key: created.key }, 201);
      },
    }),
    endpoint({
      method: "GET",
      path: "/admin/licenses",
      summary: "Licenses, searched and filtered, a page at a time (oldest first)",
      auth: { scope: "licenses:read" },
      budget: "admin",
      audit: "license-list",
      querySchema: S.AdminLicenseQuery,
      answer: S.AdminLicensePage,
      errors: [...ADMIN_ERRORS],
      handler: async ({ queryValues, admin: caller }) => json({ ok: true, ...(await searchLicenses(admin, caller, queryValues)) }),
    }),
    endpoint({
      method: "GET",
      path: "/admin/licenses/{id}",
      summary: "A license with its seats in use and its installations",
      auth: { scope: "licenses:read" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "license-show",
      params: [LICENSE_ID],
      answer: S.AdminLicenseShown,
      errors: [...ADMIN_ERRORS, "not_found"],
      handler: async ({ params, admin: caller }) => json({ ok: true, ...(await showLicense(admin, caller, params.id)) }),
    }),
    endpoint({
      method: "PATCH",
      path: "/admin/licenses/{id}",
      summary: "Change a license (applies from the next refresh); seats below those in use are refused",
      auth: { scope: "licenses:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "license-update",
      params: [LICENSE_ID],
      body: S.AdminLicenseUpdateBody,
      answer: S.AdminLicenseUpdated,
      errors: [...ADMIN_ERRORS, ...BODY_ERRORS, "not_found", "seats_in_use"],
      handler: async ({ params, body, admin: caller }) => json({ ok: true, ...(await updateLicense(admin, caller, params.id, body)) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/licenses/{id}/revoke",
      summary: "Revoke a license: every token of it stops working at once",
      auth: { scope: "licenses:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "license-revoke",
      params: [LICENSE_ID],
      answer: S.AdminLicenseAnswer,
      errors: [...ADMIN_ERRORS, "not_found", "license_revoked"],
      handler: async ({ params, admin: caller }) => json({ ok: true, license: await revokeLicense(admin, caller, params.id) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/licenses/{id}/reinstate",
      summary: "Reinstate a revoked license",
      auth: { scope: "licenses:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "license-reinstate",
      params: [LICENSE_ID],
      answer: S.AdminLicenseAnswer,
      errors: [...ADMIN_ERRORS, "not_found", "invalid_request"],
      handler: async ({ params, admin: caller }) => json({ ok: true, license: await reinstateLicense(admin, caller, params.id) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/licenses/{id}/rekey",
      summary: "Give a license a new key (shown in this answer only); the old key is refused from now on, installations keep their seats and tokens",
      auth: { scope: "licenses:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "license-rekey",
      params: [LICENSE_ID],
      answer: S.AdminLicenseCreated,
      errors: [...ADMIN_ERRORS, "not_found", "invalid_request"],
      handler: async ({ params, admin: caller }) => {
        const rekeyed = await rekeyLicense(admin, caller, params.id);
        return json({ ok: true, license: rekeyed.license, key: rekeyed.key });
      },
    }),
    endpoint({
      method: "GET",
      path: "/admin/activations",
      summary: "The installations of a license, active and deactivated",
      auth: { scope: "activations:read" },
      budget: "admin",
      audit: "activation-list",
      querySchema: S.AdminActivationQuery,
      answer: S.AdminActivationList,
      errors: [...ADMIN_ERRORS, "not_found"],
      handler: async ({ queryValues, admin: caller }) => json({ ok: true, activations: await listActivations(admin, caller, queryValues.license) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/activations/{id}/deactivate",
      summary: "Deactivate an installation: its seat is free and its tokens stop working at once",
      auth: { scope: "activations:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "activation-deactivate",
      params: [ACTIVATION_ID],
      answer: S.AdminActivationAnswer,
      errors: [...ADMIN_ERRORS, "not_found", "already_deactivated"],
      handler: async ({ params, admin: caller }) => json({ ok: true, activation: await deactivateActivation(admin, caller, params.id) }),
    }),
  ];
}
