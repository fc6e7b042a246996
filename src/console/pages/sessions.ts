import { endConsoleSession, listConsoleSessions } from "../../domain/admin/console-sessions";
import type { Session } from "../../domain/console-sessions";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { html } from "../html";
import { actionForm, consolePage, labelFor, notice, when } from "../layout";

export const SESSIONS = "/console/sessions";

/** The console sessions open now, each with a button that ends it (scope admin). */
export async function sessionsPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const open = await listConsoleSessions(deps.admin, deps.sessions, callerOf(session, address));
  const ended = query.get("ended");
  const body = html`${ended !== null ? notice("The session was ended: its next request is signed out.") : ""}
<p class="muted">A staff member's scopes come from their groups under the site's <code>--console-groups</code> at each request; a session ends at the latest when the issuer's ID token does.</p>
<div class="table-wrap"><table id="sessions"><thead><tr><th scope="col">Who</th><th scope="col">Signed in with</th><th scope="col">Groups</th><th scope="col">Scopes</th><th scope="col">Since</th><th scope="col">Ends</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${open.map(
    (
      x,
    ) => html`<tr><td>${x.name}${x.id === session.id ? html` <span class="muted">(you)</span>` : ""}</td><td>${x.kind === "staff" ? html`issuer: <code>${x.subject ?? ""}</code>` : html`token <code>${x.tokenId ?? ""}</code>`}</td>
<td>${x.groups ? x.groups.join(", ") : "—"}</td><td>${x.scopes.join(", ")}</td><td>${when(x.created)}</td><td>${when(x.expires)}</td>
<td>${actionForm(session, `${SESSIONS}/${encodeURIComponent(x.id)}/end`, labelFor("End", `the session of ${x.name}`), true)}</td></tr>`,
  )}</tbody></table></div>${open.length === 0 ? html`<p>No console session is open.</p>` : ""}`;
  return { page: consolePage({ title: "Console sessions", session: session, current: SESSIONS, body }) };
}

export async function endSessionAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await endConsoleSession(deps.admin, deps.sessions, callerOf(session, address), id);
  return { redirect: `${SESSIONS}?ended=1` };
}
