import { Type, type Static } from "@sinclair/typebox";
import type { DeliveryRecord, DeliveryStatus, WebhookEndpointRecord } from "../../store/types";
import { decodeCursor, encodeCursor } from "../admin/cursor";
import { adminAudit, requireScope, type AdminCaller, type AdminDeps } from "../admin/deps";
import { auditRead } from "../admin/read-audit";
import { idParam } from "../admin/input";
import { amongAllowed, closed, Cursor, IdText, Limit, pageSize } from "../admin/model";
import { isoTime } from "../clock";
import { KeyturnError } from "../errors";
import { EVENT_TYPES } from "../events";
import { newId } from "../ids";
import { checkEndpointUrl, NO_EXCEPTIONS } from "./destination";
import { newWebhookSecret, webhookSecretContext } from "./signing";

export interface WebhookEndpointView {
  readonly id: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly enabled: boolean;
  readonly disabledReason: string | null;
  readonly created: string;
}

export interface DeliveryView {
  readonly id: string;
  readonly endpoint: string;
  readonly event: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly nextAttempt: string | null;
  readonly lastAttempt: string | null;
  readonly created: string;
}

export interface AttemptView {
  readonly attempt: number;
  readonly time: string;
  readonly durationMs: number;
  readonly statusCode: number | null;
  readonly error: string | null;
}

export const endpointView = (e: WebhookEndpointRecord): WebhookEndpointView => ({
  id: e.id,
  url: e.url,
  events: e.types,
  enabled: e.enabled,
  disabledReason: e.disabledReason,
  created: isoTime(e.created),
});

export const deliveryView = (r: DeliveryRecord): DeliveryView => ({
  id: r.id,
  endpoint: r.endpointId,
  event: r.eventId,
  status: r.status,
  attempts: r.attempts,
  nextAttempt: r.status === "pending" ? isoTime(r.nextAttempt) : null,
  lastAttempt: r.lastAttempt === null ? null : isoTime(r.lastAttempt),
  created: isoTime(r.created),
});

/** A new webhook endpoint, as the admin API, the console and `keyturn webhook add` give it. */
export const WebhookEndpointCreateInput = closed({
  url: Type.String({ maxLength: 2000, description: "https, or http to a loopback address" }),
  events: Type.Array(Type.Union(EVENT_TYPES.map((e) => Type.Literal(e))), { minItems: 1, maxItems: EVENT_TYPES.length }),
});
export type WebhookEndpointCreateInput = Static<typeof WebhookEndpointCreateInput>;

export const WebhookEndpointUpdateInput = closed({ enabled: Type.Boolean() });

/** A filter of deliveries, as a query string carries it. */
export const DeliveryQuery = closed({
  endpoint: Type.Optional(IdText(100)),
  status: Type.Optional(Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")])),
  cursor: Type.Optional(Cursor),
  limit: Type.Optional(Limit(200, 50)),
});
export type DeliveryQuery = Static<typeof DeliveryQuery>;

/** Adds an endpoint (scope webhooks:write; audit webhook-add). Its secret is answered here only. */
export async function addWebhookEndpoint(
  d: AdminDeps,
  caller: AdminCaller,
  input: WebhookEndpointCreateInput,
): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
  requireScope(caller.principal, "webhooks:write");
  const url = checkEndpointUrl(input.url, d.webhookDestinations ?? NO_EXCEPTIONS);
  const types = amongAllowed(input.events, EVENT_TYPES, "events");
  const secret = newWebhookSecret();
  const now = d.clock();
  const id = newId("whe", now);
  const endpoint = await d.store.createWebhookEndpoint(
    { id, url, types, secret: d.seal ? await d.seal.seal(secret, webhookSecretContext(id)) : secret, enabled: true, disabledReason: null, created: now },
    adminAudit(d, caller, "webhook-add"),
  );
  return { endpoint: endpointView(endpoint), secret };
}

export async function listWebhookEndpoints(d: AdminDeps, caller: AdminCaller): Promise<WebhookEndpointView[]> {
  requireScope(caller.principal, "webhooks:read");
  const endpoints = await d.store.listWebhookEndpoints();
  await auditRead(d, caller, "webhook-list");
  return endpoints.map(endpointView);
}

/** Removes an endpoint and its deliveries (scope webhooks:write; audit webhook-remove). */
export async function removeWebhookEndpoint(d: AdminDeps, caller: AdminCaller, id: unknown): Promise<void> {
  requireScope(caller.principal, "webhooks:write");
  const endpointId = idParam(id, "id");
  if (!(await d.store.removeWebhookEndpoint(endpointId, adminAudit(d, caller, "webhook-remove"))))
    throw new KeyturnError("not_found", `No webhook endpoint ${endpointId}.`);
}

/**
 * Gives an endpoint a new signing secret, answered here only (scope webhooks:write; audit
 * webhook-rotate-secret). Every attempt from this write on is signed with it, pending and retried
 * deliveries included: the receiver must be given the new secret at once.
 */
export async function rotateWebhookSecret(d: AdminDeps, caller: AdminCaller, id: unknown): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
  requireScope(caller.principal, "webhooks:write");
  const endpointId = idParam(id, "id");
  const secret = newWebhookSecret();
  const stored = d.seal ? await d.seal.seal(secret, webhookSecretContext(endpointId)) : secret;
  if (!(await d.store.setWebhookEndpointSecret(endpointId, stored, adminAudit(d, caller, "webhook-rotate-secret"))))
    throw new KeyturnError("not_found", `no webhook endpoint ${endpointId}`);
  return { endpoint: endpointView((await d.store.getWebhookEndpoint(endpointId))!), secret };
}

/**
 * Enables or disables an endpoint (scope webhooks:write; audit webhook-enable/webhook-disable).
 * A disabled endpoint gets no new deliveries and its pending ones wait; enabling resumes them.
 */
export async function setWebhookEndpointEnabled(d: AdminDeps, caller: AdminCaller, id: unknown, enabled: boolean): Promise<WebhookEndpointView> {
  requireScope(caller.principal, "webhooks:write");
  const endpointId = idParam(id, "id");
  const reason = enabled ? null : `disabled by ${caller.principal.tokenId ?? "cli"}`;
  if (!(await d.store.setWebhookEndpointEnabled(endpointId, enabled, reason, adminAudit(d, caller, enabled ? "webhook-enable" : "webhook-disable"))))
    throw new KeyturnError("not_found", `No webhook endpoint ${endpointId}.`);
  return endpointView((await d.store.getWebhookEndpoint(endpointId))!);
}

const isDeliveryPosition = (p: unknown): p is string => typeof p === "string" && /^dlv_[a-z0-9]{1,60}$/.test(p);

/** Deliveries, newest first (scope webhooks:read). Query: { endpoint?, status?, cursor? (bound to the query), limit? (1-200, 50) }. */
export async function listDeliveries(d: AdminDeps, caller: AdminCaller, input: DeliveryQuery): Promise<{ deliveries: DeliveryView[]; next: string | null }> {
  requireScope(caller.principal, "webhooks:read");
  const endpointId = input.endpoint?.trim();
  const status: DeliveryStatus | undefined = input.status;
  const bound = { endpoint: endpointId, status };
  const after = decodeCursor(input.cursor, bound, isDeliveryPosition);
  const limit = pageSize(input.limit, 50, 200);
  const rows = await d.store.listDeliveries({ endpointId, status, after, limit: limit + 1 });
  await auditRead(d, caller, "delivery-list");
  const page = rows.slice(0, limit);
  return { deliveries: page.map(deliveryView), next: rows.length > limit ? encodeCursor(bound, page.at(-1)!.id) : null };
}

/** One delivery with every attempt (scope webhooks:read). */
export async function showDelivery(d: AdminDeps, caller: AdminCaller, id: unknown): Promise<{ delivery: DeliveryView; attempts: AttemptView[] }> {
  requireScope(caller.principal, "webhooks:read");
  const deliveryId = idParam(id, "id");
  const delivery = await d.store.getDelivery(deliveryId);
  if (!delivery) throw new KeyturnError("not_found", `No delivery ${deliveryId}.`);
  const attempts = await d.store.listAttempts(deliveryId);
  await auditRead(d, caller, "delivery-show");
  return {
    delivery: deliveryView(delivery),
    attempts: attempts.map((a) => ({ attempt: a.attempt, time: isoTime(a.time), durationMs: a.durationMs, statusCode: a.statusCode, error: a.error })),
  };
}

/**
 * Makes a failed delivery due now (scope webhooks:write; audit webhook-retry): the worker attempts it
 * once more; should that fail too it is failed again. Delivered: invalid_request; unknown: not_found.
 */
export async function retryDelivery(d: AdminDeps, caller: AdminCaller, id: unknown): Promise<DeliveryView> {
  requireScope(caller.principal, "webhooks:write");
  const deliveryId = idParam(id, "id");
  const delivery = await d.store.getDelivery(deliveryId);
  if (!delivery) throw new KeyturnError("not_found", `No delivery ${deliveryId}.`);
  if (!(await d.store.retryDelivery(deliveryId, d.clock(), adminAudit(d, caller, "webhook-retry"))))
    throw new KeyturnError("invalid_request", `Delivery ${deliveryId} was delivered already.`);
  return deliveryView((await d.store.getDelivery(deliveryId))!);
}
