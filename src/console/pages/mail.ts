import { listMail, resendMail } from "../../domain/mail/admin";
import type { Session } from "../../domain/console-sessions";
import { sessionHas } from "../../domain/console-sessions";
import { doneAt, doneMessage } from "../confirm";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { html } from "../html";
import { actionForm, consolePage, labelFor, notice, when } from "../layout";

export const MAIL_PATH = "/console/mail";

/** The mail the site sent (or is sending), newest first; support sends one again (licenses:write). */
export async function mailPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const message = doneMessage(query);
  if (!deps.admin.mail) {
    const body = html`<p>This site sends no mail: set <code>--smtp-url</code> and <code>--mail-from</code> (docs/mail.md). Licence keys are shown only to whoever creates them.</p>`;
    return { page: consolePage({ title: "Mail", session, current: MAIL_PATH, body }) };
  }
  const license = query.get("license");
  const mails = await listMail(deps.admin, callerOf(session, address), license);
  const canResend = sessionHas(session, "licenses:write");
  const body = html`${message ? notice(message) : ""}${license ? html`<p>Mail of licence <a href="/console/licenses/${license}">${license}</a>. <a href="${MAIL_PATH}">All mail</a></p>` : ""}
<p class="muted">The newest ${mails.length} mails. A mail's text is never shown here: it may hold a licence key.</p>
<div class="table-wrap"><table id="mail" class="cards"><thead><tr><th scope="col">Written</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last error</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${mails.map(
    (
      m,
    ) => html`<tr data-mail="${m.id}"><td data-label="Written">${when(m.created)}</td><td data-label="To">${m.recipient}</td><td data-label="Subject">${m.subject}${m.license ? html` <a class="muted" href="${MAIL_PATH}?license=${m.license}">${m.license}</a>` : ""}</td>
<td data-label="Status" class="mail-status">${m.status === "sent" ? html`sent ${when(m.sent)}` : m.status === "pending" ? html`pending, next try ${when(m.nextAttempt)}` : "failed"}</td><td data-label="Attempts">${m.attempts}</td><td data-label="Last error">${m.lastError ?? ""}</td>
<td data-label="">${canResend && m.kind !== "portal-link" ? actionForm(session, `${MAIL_PATH}/${m.id}/resend`, labelFor("Send again", `${m.subject} to ${m.recipient}`)) : ""}</td></tr>`,
  )}</tbody></table></div>${mails.length === 0 ? html`<p>No mail yet.</p>` : ""}`;
  return { page: consolePage({ title: "Mail", session, current: MAIL_PATH, body }) };
}

export async function resendMailAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await resendMail(deps.admin, callerOf(session, address), id);
  return { redirect: doneAt(MAIL_PATH, "mail-resent") };
}
