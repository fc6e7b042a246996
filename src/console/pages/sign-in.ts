import type { Outcome } from "../deps";
import { html } from "../html";
import { notice, plainPage } from "../layout";

/** Where the console's sign-in page is (and where a signed-out request is sent). */
export const SIGN_IN = "/console/sign-in";

/** The console's sign-in: an admin token, or the vendor's OpenID issuer when staff sign-in is configured for the console. */
export function consoleSignInPage(o: { openId: boolean; message?: string; status?: number; ref?: string }): Outcome {
  const body = html`${o.message ? notice(o.message, true) : ""}${o.ref ? html`<p class="muted">Reference: <code>${o.ref}</code> (admin_token_invalid)</p>` : ""}
<form class="stack" method="post" action="${SIGN_IN}"><label>Admin token <input name="token" type="password" required maxlength="200" autocomplete="off" spellcheck="false"></label><button type="submit">Sign in with the token</button></form>
${o.openId ? html`<p><a id="openid-sign-in" href="/console/oidc/start">Sign in with your organisation's account</a></p>` : ""}
<p class="muted">A session lasts at most 8 hours and ends when you sign out or the token is revoked.</p>`;
  return { page: plainPage("Sign in", body), status: o.status ?? (o.message ? 401 : 200) };
}
