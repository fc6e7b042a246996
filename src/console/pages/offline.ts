import { actorOf, requireScope } from "../../domain/admin/deps";
import type { Session } from "../../domain/console-sessions";
import { normalizeLicenseKey } from "../../domain/license-key";
import { answerLastsUntil, answerOfflineRequest, answerOfflineRequestOf, type OfflineAnswer } from "../../domain/offline-activation";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { field, type Form } from "../form";
import { html, type Html } from "../html";
import { consolePage, csrfField, notice } from "../layout";
import { holderOf, licensePath } from "./licenses";

function requestForm(session: Session, license: string): Html {
  return html`<form class="stack" method="post" action="/console/offline">${csrfField(session)}
<label>Licence: its id or key (empty when the request code carries the key) <input name="license" value="${license}" maxlength="200" autocomplete="off" spellcheck="false"></label>
<label>Request code the program shows <textarea name="code" required maxlength="16384" spellcheck="false"></textarea></label>
<button type="submit">Make the answer code</button></form>`;
}

/**
 * Offline activation for support (scope activations:write, as POST /admin/activations/offline):
 * a customer reads out or mails the request code of a computer that cannot reach the site, support
 * sends back the answer code. `?license=` comes from a licence's page.
 */
export function offlinePage(session: Session, address: string | null, query: URLSearchParams): Outcome {
  requireScope(callerOf(session, address).principal, "activations:write");
  const body = html`<p>Turn the request code of a computer that cannot reach this site into its answer code. The computer takes a seat of the licence, as an activation would.</p>${requestForm(session, query.get("license")?.slice(0, 200) ?? "")}`;
  return { page: consolePage({ title: "Offline activation", session: session, current: "/console/offline", body }) };
}

/**
 * Answers a request code with the same domain functions as the admin API (a key: typed or inside
 * the code) and the portal (a licence id), audited `activate` with the staff person as actor.
 */
export async function offlineAction(deps: ConsoleDeps, session: Session, address: string | null, f: Form): Promise<Outcome> {
  const caller = callerOf(session, address);
  requireScope(caller.principal, "activations:write");
  const license = field(f, "license");
  const code = f.get("code") ?? "";
  const ctx = { address, actor: actorOf(caller.principal) };
  const done: OfflineAnswer =
    license === undefined || normalizeLicenseKey(deps.variant, license)
      ? await answerOfflineRequest(deps.licensing, { code, ...(license !== undefined ? { key: license } : {}) }, ctx)
      : await answerOfflineRequestOf({ variant: deps.variant, licensing: deps.licensing, store: deps.admin.store }, license, code, ctx);
  const l = done.entitlement;
  const activation = await deps.admin.store.getActivation(l.id);
  const body = html`${notice(`Answer code made for the licence of ${holderOf(l)}. Send it to the customer: it holds this computer's seat.`)}
<p id="answer-valid-until"><strong>${answerLastsUntil(l)}</strong></p>
<p><textarea id="answer-code" readonly aria-label="Answer code">${done.answer}</textarea> <button type="button" class="plain" data-copy="answer-code" hidden>Copy answer code</button></p>
<p>${activation ? html`<a href="${licensePath(activation.licenseId)}">Open the licence</a> · ` : ""}<a href="/console/offline">Answer another request</a></p>`;
  return { page: consolePage({ title: "Offline answer", session: session, current: "/console/offline", body }) };
}
