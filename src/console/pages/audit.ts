import { AuditQuery, queryAudit } from "../../domain/admin/audit-query";
import { decode } from "../../domain/decode";
import type { Session } from "../../domain/console-sessions";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { html } from "../html";
import { dateField } from "../form";
import { consolePage, when } from "../layout";

const FILTERS = ["license", "activation", "error", "since"] as const;

/** The audit trail, newest first, filtered by licence, installation, error code and time (scope audit:read). */
export async function auditPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const filter: Record<string, string> = {};
  for (const name of FILTERS) {
    const v = query.get(name)?.trim();
    if (v) filter[name] = v;
  }
  const cursor = query.get("cursor");
  const since = dateField(query, "since");
  const input = decode(AuditQuery, { ...filter, ...(since ? { since } : {}), ...(cursor ? { cursor } : {}) });
  const page = await queryAudit(deps.admin, callerOf(session, address), input);
  const body = html`<form class="row" method="get" action="/console/audit" role="search">
<label>Licence id <input name="license" value="${filter.license ?? ""}" maxlength="100"></label>
<label>Installation id <input name="activation" value="${filter.activation ?? ""}" maxlength="100"></label>
<label>Error code <input name="error" value="${filter.error ?? ""}" maxlength="64"></label>
<label>Since <input name="since" type="date" value="${filter.since ?? ""}"></label>
<button type="submit">Filter</button></form>
<div class="table-wrap"><table id="audit"><thead><tr><th scope="col">Time</th><th scope="col">Action</th><th scope="col">Outcome</th><th scope="col">Actor</th><th scope="col">Licence</th><th scope="col">Installation</th><th scope="col">Address</th><th scope="col">Ref</th></tr></thead>
<tbody>${page.lines.map(
    (l) =>
      html`<tr><td>${when(l.time)}</td><td>${l.action}</td><td>${l.outcome === "ok" ? "ok" : `refused: ${l.error ?? ""}`}</td><td>${l.actor ?? "—"}</td><td>${l.license ?? "—"}</td><td>${l.activation ?? "—"}</td><td>${l.address ?? "—"}</td><td><code>${l.ref}</code></td></tr>`,
  )}</tbody></table></div>${page.lines.length === 0 ? html`<p>No line matches.</p>` : ""}
${page.next ? html`<p><a href="/console/audit?${new URLSearchParams({ ...filter, cursor: page.next }).toString()}">Older lines</a></p>` : ""}`;
  return { page: consolePage({ title: "Audit trail", session, current: "/console/audit", body }) };
}
