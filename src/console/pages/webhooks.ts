import { listDeliveries, listWebhookEndpoints, retryDelivery } from "../../domain/webhooks/endpoints";
import { sessionHas, type Session } from "../../domain/console-sessions";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { html } from "../html";
import { actionForm, consolePage, when } from "../layout";

/** Webhook endpoints and their deliveries, with retry of a failed one (scopes webhooks:read, webhooks:write). */
export async function webhooksPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const caller = callerOf(session, address);
  const cursor = query.get("cursor");
  const [endpoints, deliveries] = await Promise.all([listWebhookEndpoints(deps.admin, caller), listDeliveries(deps.admin, caller, cursor ? { cursor } : {})]);
  const write = sessionHas(session, "webhooks:write");
  const body = html`<h2>Endpoints</h2><div class="table-wrap"><table id="webhook-endpoints"><thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Since</th></tr></thead>
<tbody>${endpoints.map((e) => html`<tr><td><code>${e.url}</code></td><td>${e.events.join(", ")}</td><td>${e.enabled ? "enabled" : `disabled${e.disabledReason ? `: ${e.disabledReason}` : ""}`}</td><td>${when(e.created)}</td></tr>`)}</tbody></table></div>
${endpoints.length === 0 ? html`<p>No endpoint. Add one with <code>keyturn webhook add</code> or the admin API.</p>` : ""}
<h2>Deliveries</h2><div class="table-wrap"><table id="deliveries"><thead><tr><th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last attempt</th><th scope="col">Next attempt</th>${write ? html`<th scope="col"><span class="muted">Action</span></th>` : ""}</tr></thead>
<tbody>${deliveries.deliveries.map(
    (x) => html`<tr><td>${x.event}</td><td><code>${x.endpoint}</code></td><td>${x.status}</td><td>${x.attempts}</td><td>${when(x.lastAttempt)}</td><td>${when(x.nextAttempt)}</td>${
      write ? html`<td>${x.status === "failed" ? actionForm(session, `/console/webhook-deliveries/${encodeURIComponent(x.id)}/retry`, "Retry") : ""}</td>` : ""
    }</tr>`,
  )}</tbody></table></div>${deliveries.next ? html`<p><a href="/console/webhooks?cursor=${encodeURIComponent(deliveries.next)}">Older deliveries</a></p>` : ""}`;
  return { page: consolePage({ title: "Webhooks", session, current: "/console/webhooks", body }) };
}

export async function retryDeliveryAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await retryDelivery(deps.admin, callerOf(session, address), id);
  return { redirect: "/console/webhooks" };
}
