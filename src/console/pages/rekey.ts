import { requireScope } from "../../domain/admin/deps";
import { rekeyLicense, showLicense } from "../../domain/admin/licenses";
import type { Session } from "../../domain/console-sessions";
import { confirmPage } from "../confirm";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { html } from "../html";
import { consolePage, notice } from "../layout";
import { holderOf, licensePath } from "./licenses";

const rekeyPath = (id: string) => `${licensePath(id)}/rekey`;

/** The confirmation of a reissued key, naming the licence (licenses:write). */
export async function rekeyConfirmPage(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  const caller = callerOf(session, address);
  requireScope(caller.principal, "licenses:write");
  const { license: l } = await showLicense(deps.admin, caller, id);
  return confirmPage(session, {
    title: "Reissue key?",
    question: `Give the licence of ${holderOf(l)}, ${l.id}, a new key?`,
    consequence: "The current key stops working at once: nothing can be activated with it. Installations keep their seats. The new key is shown once.",
    action: rekeyPath(l.id),
    button: "Reissue key",
    back: licensePath(l.id),
    current: "/console/licenses",
  });
}

/**
 * Reissues a lost or leaked key (the admin API's POST /admin/licenses/{id}/rekey: licenses:write,
 * audit license-rekey) and shows the new key this once: the records keep only its hash, and the
 * page is not cached (no-store), so it cannot be shown again.
 */
export async function rekeyAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  const { license, key } = await rekeyLicense(deps.admin, callerOf(session, address), id);
  const body = html`${notice("Key reissued. The new key is shown this once: copy it now and give it to the customer. The old key no longer works.")}
<p><span class="key" id="license-key">${key}</span> <button type="button" class="plain" data-copy="license-key" hidden>Copy key</button></p>
<p><a href="${licensePath(license.id)}">Open the licence of ${license.licensee}</a></p>`;
  return { page: consolePage({ title: "Key reissued", session: session, current: "/console/licenses", body }) };
}
