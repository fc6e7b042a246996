import { SCOPES } from "../../domain/admin/deps";
import { AdminTokenCreateInput, createAdminToken, listAdminTokens, revokeAdminToken, type AdminTokenView } from "../../domain/admin/tokens";
import { decode } from "../../domain/decode";
import type { Session } from "../../domain/console-sessions";
import { KeyturnError } from "../../domain/errors";
import { confirmButton, confirmPage, doneAt, doneNotice } from "../confirm";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { dateField, type Form } from "../form";
import { html, type Html } from "../html";
import { consolePage, csrfField, labelFor, notice, when } from "../layout";

const TOKENS = "/console/tokens";
const revokePath = (id: string) => `${TOKENS}/${encodeURIComponent(id)}/revoke`;

const stateOf = (t: AdminTokenView, now: number) =>
  t.revoked !== null ? `revoked ${when(t.revoked)}` : t.expires !== null && Date.parse(t.expires) <= now ? "expired" : "active";

function createForm(session: Session): Html {
  return html`<h2>Create a token</h2><form class="stack" method="post" action="${TOKENS}">${csrfField(session)}
<label>Name (who or what uses it) <input name="name" required maxlength="100" autocomplete="off"></label>
<fieldset><legend>Scopes</legend>${SCOPES.map((scope) => html`<label><input type="checkbox" name="scopes" value="${scope}"> ${scope}</label>`)}</fieldset>
<label>Expires (empty: never) <input name="expires" type="date"></label>
<button type="submit">Create token</button></form>`;
}

/** Admin tokens (scope admin, as `keyturn admin-token list`): each with its scopes and state, revoke, and the create form. */
export async function adminTokensPage(deps: ConsoleDeps, session: Session, address: string | null, query: URLSearchParams): Promise<Outcome> {
  const tokens = await listAdminTokens(deps.admin, callerOf(session, address));
  const now = deps.clock();
  const body = html`${doneNotice(query)}<div class="table-wrap"><table id="admin-tokens"><thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${tokens.map(
    (t) =>
      html`<tr><td>${t.name}</td><td><code>${t.id}</code></td><td>${t.scopes.join(", ")}</td><td>${when(t.created)}</td><td>${when(t.expires)}</td><td>${when(t.lastUsed)}</td><td>${stateOf(t, now)}</td><td>${
        t.revoked === null ? confirmButton(revokePath(t.id), labelFor("Revoke", t.name)) : ""
      }</td></tr>`,
  )}</tbody></table></div>${tokens.length === 0 ? html`<p>No admin token.</p>` : ""}
${createForm(session)}`;
  return { page: consolePage({ title: "Admin tokens", session: session, current: TOKENS, body }) };
}

/** Creates a token (scope admin, audit admin-token-create) and shows its secret this once: the records keep only its hash. */
export async function createTokenAction(deps: ConsoleDeps, session: Session, address: string | null, f: Form): Promise<Outcome> {
  const expires = dateField(f, "expires");
  const input = decode(AdminTokenCreateInput, { name: f.get("name") ?? "", scopes: f.getAll("scopes"), ...(expires ? { expires } : {}) });
  const { token, secret } = await createAdminToken(deps.admin, callerOf(session, address), input);
  const body = html`${notice("The token was created. Its secret is shown this once: copy it now into the program or person that uses it.")}
<p>${token.name} (<code>${token.id}</code>): ${token.scopes.join(", ")}${token.expires ? `, until ${when(token.expires)}` : ""}</p>
<p><span class="key" id="admin-token-secret">${secret}</span> <button type="button" class="plain" data-copy="admin-token-secret" hidden>Copy token</button></p>
<p><a href="${TOKENS}">Back to the admin tokens</a></p>`;
  return { page: consolePage({ title: "Admin token created", session: session, current: TOKENS, body }), status: 201 };
}

export async function revokeTokenConfirmPage(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  const t = (await listAdminTokens(deps.admin, callerOf(session, address))).find((x) => x.id === id && x.revoked === null);
  if (!t) throw new KeyturnError("not_found", `no unrevoked admin token ${id}`);
  const own = session.tokenId === t.id;
  return confirmPage(session, {
    title: "Revoke admin token?",
    question: `Revoke the admin token "${t.name}" (${t.id}, ${t.scopes.join(", ")})?`,
    consequence: `Every request with it is refused from now on, and console sessions opened with it end.${own ? " This is the token of your own session: you will be signed out." : ""}`,
    action: revokePath(t.id),
    button: "Revoke token",
    back: TOKENS,
    current: TOKENS,
  });
}

export async function revokeTokenAction(deps: ConsoleDeps, session: Session, address: string | null, id: string): Promise<Outcome> {
  await revokeAdminToken(deps.admin, callerOf(session, address), id);
  return { redirect: doneAt(TOKENS, "admin-token-revoked") };
}
