import { isLane } from "../../config/variants";
import { requireLive } from "../../domain/licensing";
import { decode } from "../../domain/decode";
import { PortalOfflineModel } from "../../domain/offline-activation";
import type { Session } from "../../domain/console-sessions";
import { KeyturnError } from "../../domain/errors";
import { answerLastsUntil, answerOfflineRequestOf } from "../../domain/offline-activation";
import { portalDeactivate, portalLicense } from "../../domain/portal";
import type { Release } from "../../domain/releases/release-index";
import { termsOfLicence } from "../../domain/releases/licence-terms";
import type { ConsoleDeps, Outcome } from "../deps";
import { html, type Html } from "../html";
import { actionForm, labelFor, csrfField, notice, portalPage, when } from "../layout";

/** Where the portal's download of a lane's newest installer is. */
const downloadPath = (product: string | null, channel: string, platform: string) =>
  `/portal/download/${encodeURIComponent(product ?? "-")}/${encodeURIComponent(channel)}/${encodeURIComponent(platform)}`;

/** The installation a portal download is chosen for: the license itself, so a staged rollout treats it as one steady installation. */
/** The portal's downloads are offered as an installation of the licence would be: its terms included. */
const portalInstallation = (l: { id: string; updatesUntil?: number | null; features?: readonly string[] }) => ({
  dev: `portal:${l.id}`,
  kind: "license" as const,
  ...termsOfLicence(l),
});

export function portalSignInPage(message?: string, ref?: string): Outcome {
  const body = html`${message ? notice(message, true) : ""}${ref ? html`<p class="muted">Reference: <code>${ref}</code> (license_unknown)</p>` : ""}<p>Sign in with your licence key to see your installations, free a seat, download the newest installer or activate a computer offline.</p>
<form class="stack" method="post" action="/portal/sign-in"><label>Licence key <input name="key" required maxlength="200" autocomplete="off" spellcheck="false"></label><button type="submit">Sign in</button></form>
<p class="muted">Your key is sent once; the site keeps your sign-in for 30 minutes, the browser only a session cookie.</p>`;
  return { page: portalPage({ title: "Your licence", session: null, body }), status: ref ? 403 : message ? 401 : 200 };
}

/** The newest installer of each lane of the license's channels (the one the update path would serve it). */
async function downloads(
  deps: ConsoleDeps,
  license: { id: string; updatesUntil: number | null; features: readonly string[] },
  channels: readonly string[],
): Promise<{ product: string | null; channel: string; platform: string; release: Release }[]> {
  const index = deps.releases.current;
  if (!index) return [];
  const products = deps.variant.products.length ? deps.variant.products : [null];
  const out = [];
  for (const product of products)
    for (const channel of channels)
      for (const platform of deps.variant.platforms) {
        const release = await deps.selection.served(index, portalInstallation(license), product, channel, platform);
        if (release) out.push({ product, channel, platform, release });
      }
  return out;
}

export async function portalHome(deps: ConsoleDeps, session: Session, message?: string, answer?: Html): Promise<Outcome> {
  const { license: l, activations } = await portalLicense(deps.admin, session.licenseId!);
  const files = await downloads(
    deps,
    { id: l.id, updatesUntil: l.updatesUntil === null ? null : Date.parse(l.updatesUntil), features: l.features },
    l.channels,
  );
  const live = activations.filter((a) => !a.deactivated);
  const body = html`${message ? notice(message) : ""}
<p>Licence of <strong id="licensee">${l.licensee}</strong> (${l.organization}). Seats used: <span id="seats">${l.seatsUsed ?? 0} / ${l.seats}</span>. Expires: ${when(l.expires)}.${l.updatesUntil ? html` Updates until: <span id="updates-until">${when(l.updatesUntil)}</span>.` : ""}${l.revoked ? html` <strong class="status-bad">Revoked.</strong>` : ""}</p>
<h2>Your installations</h2><div class="table-wrap"><table id="installations" class="cards"><thead><tr><th scope="col">Name</th><th scope="col">Platform</th><th scope="col">Version</th><th scope="col">Last seen</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${live.map((a) => html`<tr data-activation="${a.id}"><td data-label="Name">${a.name}</td><td data-label="Platform">${a.platform}</td><td data-label="Version">${a.version}</td><td data-label="Last seen">${when(a.lastSeen)}</td><td data-label="">${actionForm(session, `/portal/installations/${encodeURIComponent(a.id)}/deactivate`, labelFor("Deactivate", a.name), true)}</td></tr>`)}</tbody></table></div>
${live.length === 0 ? html`<p>No computer holds a seat.</p>` : ""}
<h2>Downloads</h2>${
    files.length
      ? html`<ul id="downloads">${files.map((f) => html`<li><a href="${downloadPath(f.product, f.channel, f.platform)}" download>${f.release.manifest.installer}</a> <span class="muted">${[f.product, f.channel, f.platform].filter(Boolean).join(" · ")}, version ${f.release.manifest.version}</span></li>`)}</ul>`
      : html`<p>No installer is released on your channels yet.</p>`
  }
<h2>Activate a computer offline</h2>${answer ?? ""}
<form class="stack" method="post" action="/portal/offline">${csrfField(session)}<label>Request code shown by the program <textarea name="code" required maxlength="16384" spellcheck="false"></textarea></label><button type="submit">Make the answer code</button></form>`;
  return { page: portalPage({ title: "Your licence", session, body }) };
}

export async function portalDeactivateAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await portalDeactivate(deps.admin, session.licenseId!, address, id);
  return { redirect: "/portal/" };
}

export async function portalOfflineAction(deps: ConsoleDeps, session: Session, address: string | null, form: URLSearchParams): Promise<Outcome> {
  const { code } = decode(PortalOfflineModel, { code: form.get("code") ?? undefined });
  const answer = await answerOfflineRequestOf({ variant: deps.variant, licensing: deps.licensing, store: deps.admin.store }, session.licenseId!, code, {
    address,
  });
  const shown = html`${notice("Paste this answer code into the program. It holds this computer's seat.")}
<p id="answer-valid-until">${answerLastsUntil(answer.entitlement)}</p>
<p><textarea id="answer-code" readonly aria-label="Answer code">${answer.answer}</textarea> <button type="button" class="plain" data-copy="answer-code" hidden>Copy answer code</button></p>`;
  return portalHome(deps, session, undefined, shown);
}

/** The installer a portal download link names, if the license's channels hold it. */
export async function portalInstaller(deps: ConsoleDeps, session: Session, product: string, channel: string, platform: string): Promise<Release> {
  const license = await deps.admin.store.getLicense(session.licenseId!);
  if (!license) throw new KeyturnError("license_unknown", "The licence is no longer known.");
  requireLive(license, deps.clock());
  const p = product === "-" ? null : product;
  const known = isLane(deps.variant, p, channel, platform) && license.channels.includes(channel);
  const index = known ? await deps.releases.ready() : null;
  const release = index ? await deps.selection.served(index, portalInstallation(license), p, channel, platform) : null;
  if (!release) throw new KeyturnError("not_found", "There is no installer here for your licence.");
  return release;
}
