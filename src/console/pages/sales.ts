import { BridgeEventQuery, listBridgeEvents } from "../../domain/commerce/bridge-events";
import { PROVIDER_NAMES, type Provider } from "../../domain/commerce/sale-event";
import type { Session } from "../../domain/console-sessions";
import { decode } from "../../domain/decode";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { html } from "../html";
import { consolePage, when } from "../layout";
import { licensePath } from "./licenses";

export const SALES = "/console/sales";

/** What the commerce bridges received, newest first, with the outcome of each and its licence (scope licenses:read). */
export async function salesPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const cursor = query.get("cursor");
  const { events, next } = await listBridgeEvents(deps.admin, callerOf(session, address), decode(BridgeEventQuery, cursor ? { cursor } : {}));
  const body = html`<p class="muted">Events of Stripe, Paddle Billing and Lemon Squeezy received at <code>/api/v1/hooks/…</code> with a good signature. Each is applied once: a provider sending it again is counted under "Again". A refused delivery (a bad signature, a licence not made yet) is in the audit trail under <code>bridge-event</code>.</p>
<div class="table-wrap"><table id="bridge-events"><thead><tr><th scope="col">Received</th><th scope="col">Provider</th><th scope="col">Event</th><th scope="col">Outcome</th><th scope="col">Licence</th><th scope="col">Again</th></tr></thead>
<tbody>${events.map(
    (e) =>
      html`<tr><td>${when(e.received)}</td><td>${PROVIDER_NAMES[e.provider as Provider] ?? e.provider}</td><td>${e.type}<br><code class="muted">${e.event}</code></td><td><strong>${e.outcome}</strong>: ${e.detail}</td><td>${e.license ? html`<a href="${licensePath(e.license)}"><code>${e.license}</code></a>` : "—"}</td><td>${e.replays}</td></tr>`,
  )}</tbody></table></div>${events.length === 0 ? html`<p>No sale has come in through a bridge yet.</p>` : ""}${next ? html`<p><a href="${SALES}?cursor=${encodeURIComponent(next)}">Older events</a></p>` : ""}`;
  return { page: consolePage({ title: "Sales", session, current: SALES, body }) };
}
