import type { Session } from "../../domain/console-sessions";
import { portalLicense, portalRekey } from "../../domain/portal";
import { licencesOfSession, portalLicenceOf } from "../../domain/portal-link";
import type { ConsoleDeps, Outcome } from "../deps";
import { html, type Html } from "../html";
import { actionForm, csrfField, labelFor, notice, portalPage, when } from "../layout";
import { downloadPath, downloads } from "./portal";

/** Where a licence's key is reissued from the portal (GET: the confirmation; POST: the reissue). */
export const portalRekeyPath = (licenseId: string) => `/portal/licenses/${encodeURIComponent(licenseId)}/rekey`;

/**
 * The portal of a customer signed in by e-mail link: every licence under the address, each with
 * its installations (free a seat), downloads, offline activation and the reissue of a lost key.
 * `answer` (an offline answer code) is shown in the section of licence `answerFor`.
 */
export async function portalEmailHome(deps: ConsoleDeps, session: Session, message?: string, answer?: Html, answerFor?: string): Promise<Outcome> {
  const ids = await licencesOfSession(deps.admin, session);
  const sections: Html[] = [];
  for (const id of ids) {
    const { license: l, activations } = await portalLicense(deps.admin, id);
    const files = l.revoked ? [] : await downloads(deps, l);
    const live = activations.filter((a) => !a.deactivated);
    sections.push(html`<section class="licence" id="licence-${l.id}" data-license="${l.id}"><h2>${l.planTitle}: licence of ${l.licensee}</h2>
<p>${l.organization ? html`${l.organization}. ` : ""}Seats used: <span class="seats">${l.seatsUsed ?? 0} / ${l.seats}</span>. Expires: ${when(l.expires)}.${l.revoked ? html` <strong class="status-bad">Revoked.</strong>` : ""}</p>
<p><a href="${portalRekeyPath(l.id)}">Lost the key? Send me a new one</a></p>
<h3>Installations</h3><div class="table-wrap"><table class="cards installations"><thead><tr><th scope="col">Name</th><th scope="col">Platform</th><th scope="col">Version</th><th scope="col">Last seen</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${live.map((a) => html`<tr data-activation="${a.id}"><td data-label="Name">${a.name}</td><td data-label="Platform">${a.platform}</td><td data-label="Version">${a.version}</td><td data-label="Last seen">${when(a.lastSeen)}</td><td data-label="">${actionForm(session, `/portal/installations/${encodeURIComponent(a.id)}/deactivate`, labelFor("Deactivate", a.name), true)}</td></tr>`)}</tbody></table></div>
${live.length === 0 ? html`<p>No computer holds a seat.</p>` : ""}
<h3>Downloads</h3>${
      files.length
        ? html`<ul class="downloads">${files.map((f) => html`<li><a href="${downloadPath(f.product, f.channel, f.platform, l.id)}" download>${f.release.manifest.installer}</a> <span class="muted">${[f.product, f.channel, f.platform].filter(Boolean).join(" · ")}, version ${f.release.manifest.version}</span></li>`)}</ul>`
        : html`<p>No installer is released on your channels yet.</p>`
    }
<h3>Activate a computer offline</h3>${answerFor === l.id ? (answer ?? "") : ""}
<form class="stack" method="post" action="/portal/offline">${csrfField(session)}<input type="hidden" name="license" value="${l.id}"><label>Request code shown by the program <textarea name="code" required maxlength="16384" spellcheck="false"></textarea></label><button type="submit">Make the answer code</button></form></section>`);
  }
  const body = html`${message ? notice(message) : ""}<p>Signed in as <strong id="signed-in-as">${session.name}</strong>.</p>
${ids.length === 0 ? html`<p>No licence is held under this address any more.</p>` : sections}`;
  return { page: portalPage({ title: "Your licences", session, body }) };
}

/** The confirmation of a reissue, naming the licence. */
export async function portalRekeyConfirm(deps: ConsoleDeps, session: Session, named: string): Promise<Outcome> {
  const { license: l } = await portalLicense(deps.admin, await portalLicenceOf(deps.admin, session, named));
  const body = html`<p id="confirm-question"><strong>Send a new key for the licence of ${l.licensee} (${l.planTitle}) to ${l.email ?? ""}?</strong></p>
<p>The current key stops working at once: nothing can be activated with it any more. Computers already activated keep their seats.</p>
<form class="row" method="post" action="${portalRekeyPath(l.id)}">${csrfField(session)}<button type="submit" class="danger">Send a new key</button> <a href="/portal/">Cancel</a></form>`;
  return { page: portalPage({ title: "Send a new key?", session, body }) };
}

export async function portalRekeyAction(deps: ConsoleDeps, session: Session, address: string | null, named: string): Promise<Outcome> {
  const licenseId = await portalLicenceOf(deps.admin, session, named);
  const license = await portalRekey(deps.admin, licenseId, address);
  return portalEmailHome(
    deps,
    session,
    `A new key for the licence of ${license.licensee} is on its way to ${license.email ?? "its address"}. The old key no longer works.`,
  );
}
