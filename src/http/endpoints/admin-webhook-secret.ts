import type { AdminDeps } from "../../domain/admin/deps";
import { rotateWebhookSecret } from "../../domain/webhooks/endpoints";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS } from "./shared";

/** POST /admin/webhooks/{id}/rotate-secret: what the console's "Rotate secret" and `keyturn webhook rotate-secret` do. */
export function adminWebhookSecretEndpoints(admin: AdminDeps): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/admin/webhooks/{id}/rotate-secret",
      summary: "Give a webhook endpoint a new signing secret (whsec_…), in this answer only; every later attempt, retries included, is signed with it alone",
      auth: { scope: "webhooks:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "webhook-rotate-secret",
      params: [{ name: "id", description: "The webhook endpoint's id (whe_…)" }],
      answer: S.WebhookEndpointCreated,
      errors: [...ADMIN_ERRORS, "not_found"],
      handler: async ({ params, admin: caller }) => json({ ok: true, ...(await rotateWebhookSecret(admin, caller, params.id)) }),
    }),
  ];
}
