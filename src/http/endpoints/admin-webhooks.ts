import type { AdminDeps } from "../../domain/admin/deps";
import {
  addWebhookEndpoint,
  listDeliveries,
  listWebhookEndpoints,
  removeWebhookEndpoint,
  retryDelivery,
  setWebhookEndpointEnabled,
  showDelivery,
} from "../../domain/webhooks/endpoints";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS, BODY_ERRORS } from "./shared";

const ENDPOINT_ID: ParamDoc = { name: "id", description: "The webhook endpoint's id (whe_…)" };
const DELIVERY_ID: ParamDoc = { name: "id", description: "The delivery's id (dlv_…)" };

/** Webhook endpoints and their deliveries (every attempt kept), under /admin. */
export function adminWebhookEndpoints(admin: AdminDeps): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/admin/webhooks",
      summary: "Add a webhook endpoint; its signing secret (whsec_…) is in this answer only",
      auth: { scope: "webhooks:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "webhook-add",
      body: S.WebhookEndpointCreateBody,
      answer: S.WebhookEndpointCreated,
      status: 201,
      errors: [...ADMIN_ERRORS, ...BODY_ERRORS],
      handler: async ({ body, admin: caller }) => json({ ok: true, ...(await addWebhookEndpoint(admin, caller, body)) }, 201),
    }),
    endpoint({
      method: "GET",
      path: "/admin/webhooks",
      summary: "The webhook endpoints and the events each subscribes to",
      auth: { scope: "webhooks:read" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "webhook-list",
      answer: S.WebhookEndpointList,
      errors: [...ADMIN_ERRORS],
      handler: async ({ admin: caller }) => json({ ok: true, endpoints: await listWebhookEndpoints(admin, caller) }),
    }),
    endpoint({
      method: "PATCH",
      path: "/admin/webhooks/{id}",
      summary: "Enable or disable a webhook endpoint",
      auth: { scope: "webhooks:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "webhook-enable",
      params: [ENDPOINT_ID],
      body: S.WebhookEndpointUpdateBody,
      answer: S.WebhookEndpointAnswer,
      errors: [...ADMIN_ERRORS, ...BODY_ERRORS, "not_found"],
      handler: async ({ params, body, admin: caller }) => json({ ok: true, endpoint: await setWebhookEndpointEnabled(admin, caller, params.id, body.enabled) }),
    }),
    endpoint({
      method: "DELETE",
      path: "/admin/webhooks/{id}",
      summary: "Remove a webhook endpoint (its pending deliveries are dropped)",
      auth: { scope: "webhooks:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "webhook-remove",
      params: [ENDPOINT_ID],
      answer: S.AdminOkAnswer,
      errors: [...ADMIN_ERRORS, "not_found"],
      handler: async ({ params, admin: caller }) => {
        await removeWebhookEndpoint(admin, caller, params.id);
        return json({ ok: true });
      },
    }),
    endpoint({
      method: "GET",
      path: "/admin/webhook-deliveries",
      summary: "Deliveries, newest first, by endpoint and status",
      auth: { scope: "webhooks:read" },
      budget: "admin",
      audit: "delivery-list",
      querySchema: S.WebhookDeliveryQuery,
      answer: S.WebhookDeliveryPage,
      errors: [...ADMIN_ERRORS],
      handler: async ({ queryValues, admin: caller }) => json({ ok: true, ...(await listDeliveries(admin, caller, queryValues)) }),
    }),
    endpoint({
      method: "GET",
      path: "/admin/webhook-deliveries/{id}",
      summary: "A delivery with every attempt (status, duration, answer code)",
      auth: { scope: "webhooks:read" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "delivery-show",
      params: [DELIVERY_ID],
      answer: S.WebhookDeliveryShown,
      errors: [...ADMIN_ERRORS, "not_found"],
      handler: async ({ params, admin: caller }) => json({ ok: true, ...(await showDelivery(admin, caller, params.id)) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/webhook-deliveries/{id}/retry",
      summary: "Attempt a failed delivery again now",
      auth: { scope: "webhooks:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "webhook-retry",
      params: [DELIVERY_ID],
      answer: S.WebhookDeliveryAnswer,
      errors: [...ADMIN_ERRORS, "not_found", "invalid_request"],
      handler: async ({ params, admin: caller }) => json({ ok: true, delivery: await retryDelivery(admin, caller, params.id) }),
    }),
  ];
}
