import { decode } from "../../domain/decode";
import {
  addWebhookEndpoint,
  DeliveryQuery,
  listDeliveries,
  listWebhookEndpoints,
  removeWebhookEndpoint,
  retryDelivery,
  rotateWebhookSecret,
  WebhookEndpointCreateInput,
  type WebhookEndpointView,
} from "../../domain/webhooks/endpoints";
import { requireScope } from "../../domain/admin/deps";
import { sessionHas, type Session } from "../../domain/console-sessions";
import { KeyturnError } from "../../domain/errors";
import { EVENT_TYPES } from "../../domain/events";
import { confirmButton, confirmPage, doneAt, doneNotice } from "../confirm";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import type { Form } from "../form";
import { html, type Html } from "../html";
import { actionForm, consolePage, csrfField, labelFor, notice, when } from "../layout";

const endpointPath = (id: string, op: "remove" | "rotate-secret") => `/console/webhooks/${encodeURIComponent(id)}/${op}`;

function addForm(session: Session): Html {
  return html`<h2>Add an endpoint</h2><form class="stack" method="post" action="/console/webhooks">${csrfField(session)}
<label>URL (https, or http on loopback) <input name="url" type="url" required maxlength="2048" autocomplete="off"></label>
<fieldset><legend>Events</legend>${EVENT_TYPES.map((t) => html`<label><input type="checkbox" name="events" value="${t}"> ${t}</label>`)}</fieldset>
<button type="submit">Add endpoint</button></form>`;
}

/** The signing secret of an endpoint just added or rotated, shown this once (only its sealed copy is kept). */
function secretShown(session: Session, e: WebhookEndpointView, secret: string, what: string): Outcome {
  const body = html`${notice(`${what} Its signing secret is shown this once: copy it now into the receiver's settings.`)}
<p>Endpoint <code>${e.url}</code> (${e.id})</p>
<p><span class="key" id="webhook-secret">${secret}</span> <button type="button" class="plain" data-copy="webhook-secret" hidden>Copy secret</button></p>
<p><a href="/console/webhooks">Back to the webhooks</a></p>`;
  return { page: consolePage({ title: "Webhook secret", session: session, current: "/console/webhooks", body }), status: 201 };
}

/** Webhook endpoints and their deliveries, with retry of a failed one (scopes webhooks:read, webhooks:write). */
export async function webhooksPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const caller = callerOf(session, address);
  const cursor = query.get("cursor");
  const [endpoints, deliveries] = await Promise.all([
    listWebhookEndpoints(deps.admin, caller),
    listDeliveries(deps.admin, caller, decode(DeliveryQuery, cursor ? { cursor } : {})),
  ]);
  const write = sessionHas(session, "webhooks:write");
  const body = html`${doneNotice(query)}<h2>Endpoints</h2><div class="table-wrap"><table id="webhook-endpoints"><thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Since</th>${write ? html`<th scope="col"><span class="muted">Action</span></th>` : ""}</tr></thead>
<tbody>${endpoints.map(
    (e) =>
      html`<tr><td><code>${e.url}</code></td><td>${e.events.join(", ")}</td><td>${e.enabled ? "enabled" : `disabled${e.disabledReason ? `: ${e.disabledReason}` : ""}`}</td><td>${when(e.created)}</td>${
        write
          ? html`<td>${confirmButton(endpointPath(e.id, "rotate-secret"), labelFor("Rotate secret", e.url))}${confirmButton(endpointPath(e.id, "remove"), labelFor("Remove", e.url))}</td>`
          : ""
      }</tr>`,
  )}</tbody></table></div>
${endpoints.length === 0 ? html`<p>No endpoint yet.</p>` : ""}${write ? addForm(session) : ""}
<h2>Deliveries</h2><div class="table-wrap"><table id="deliveries"><thead><tr><th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last attempt</th><th scope="col">Next attempt</th>${write ? html`<th scope="col"><span class="muted">Action</span></th>` : ""}</tr></thead>
<tbody>${deliveries.deliveries.map(
    (x) =>
      html`<tr><td>${x.event}</td><td><code>${x.endpoint}</code></td><td>${x.status}</td><td>${x.attempts}</td><td>${when(x.lastAttempt)}</td><td>${when(x.nextAttempt)}</td>${
        write
          ? html`<td>${x.status === "failed" ? actionForm(session, `/console/webhook-deliveries/${encodeURIComponent(x.id)}/retry`, "Retry") : ""}</td>`
          : ""
      }</tr>`,
  )}</tbody></table></div>${deliveries.next ? html`<p><a href="/console/webhooks?cursor=${encodeURIComponent(deliveries.next)}">Older deliveries</a></p>` : ""}`;
  return { page: consolePage({ title: "Webhooks", session, current: "/console/webhooks", body }) };
}

export async function retryDeliveryAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await retryDelivery(deps.admin, callerOf(session, address), id);
  return { redirect: doneAt("/console/webhooks", "delivery-retried") };
}

/** Adds an endpoint (the admin API's POST /admin/webhooks: webhooks:write, audit webhook-add) and shows its secret once. */
export async function addEndpointAction(deps: ConsoleDeps, session: Session, address: string | null, f: Form): Promise<Outcome> {
  const input = decode(WebhookEndpointCreateInput, { url: f.get("url") ?? "", events: f.getAll("events") });
  const added = await addWebhookEndpoint(deps.admin, callerOf(session, address), input);
  return secretShown(session, added.endpoint, added.secret, "The endpoint was added.");
}

/** The endpoint a confirmation names, read with webhooks:read as the page that linked to it. */
async function endpointOf(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<WebhookEndpointView> {
  const endpoint = (await listWebhookEndpoints(deps.admin, callerOf(session, address))).find((e) => e.id === id);
  if (!endpoint) throw new KeyturnError("not_found", `no webhook endpoint ${id}`);
  return endpoint;
}

export async function removeEndpointConfirmPage(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  requireScope(callerOf(session, address).principal, "webhooks:write");
  const e = await endpointOf(deps, session, address, id);
  return confirmPage(session, {
    title: "Remove webhook endpoint?",
    question: `Remove the endpoint ${e.url} (${e.id})?`,
    consequence: "It gets no more events, and its pending deliveries are dropped.",
    action: endpointPath(e.id, "remove"),
    button: "Remove endpoint",
    back: "/console/webhooks",
    current: "/console/webhooks",
  });
}

export async function removeEndpointAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await removeWebhookEndpoint(deps.admin, callerOf(session, address), id);
  return { redirect: doneAt("/console/webhooks", "webhook-removed") };
}

export async function rotateSecretConfirmPage(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  requireScope(callerOf(session, address).principal, "webhooks:write");
  const e = await endpointOf(deps, session, address, id);
  return confirmPage(session, {
    title: "Rotate webhook secret?",
    question: `Give the endpoint ${e.url} (${e.id}) a new signing secret?`,
    consequence: "Every delivery from now on, retries included, is signed with the new secret only: the receiver refuses them until it is given the new one.",
    action: endpointPath(e.id, "rotate-secret"),
    button: "Rotate secret",
    back: "/console/webhooks",
    current: "/console/webhooks",
  });
}

export async function rotateSecretAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  const rotated = await rotateWebhookSecret(deps.admin, callerOf(session, address), id);
  return secretShown(session, rotated.endpoint, rotated.secret, "The secret was rotated.");
}
