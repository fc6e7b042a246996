import { actorOfSession, type ConsoleDeps } from "../../console/deps";
import { absoluteUrl } from "../../config/site-origin";
import { html } from "../../console/html";
import { plainPage } from "../../console/layout";
import { SIGN_IN } from "../../console/pages/sign-in";
import type { Audit } from "../../domain/audit";
import { PENDING_SIGN_IN_MS } from "../../domain/console-sessions";
import { KeyturnError } from "../../domain/errors";
import type { ConsoleOpenId } from "../../domain/identity/console-sign-in";
import { endpoint, type Endpoint } from "../endpoint";
import { pendingCookie, setPendingCookie, setSessionCookie, WEB_HEADERS } from "../web";
/** The issuer sends the browser back here; register `<--base-url>/console/oidc/callback` as the client's redirect URI. */
const CALLBACK = "/console/oidc/callback";

/**
 * Staff sign-in with the issuer: start sends the browser to the issuer (the sign-in's state also in
 * a SameSite=Lax cookie, so only the browser that started it can finish it: no login CSRF); the
 * callback exchanges the code and opens the session. It answers a page that moves on to the
 * console by itself: a redirect at the end of the issuer's cross-site chain would not carry the
 * SameSite=Strict session cookie.
 */
export function consoleOpenIdEndpoints(deps: ConsoleDeps, audit: Audit, openId: ConsoleOpenId): Endpoint[] {
  // From --base-url, not the request: behind a TLS proxy the request says http:// and the upstream address.
  const callbackUri = absoluteUrl(deps.site, CALLBACK);
  return [
    endpoint({
      method: "GET",
      path: "/console/oidc/start",
      prefix: "",
      summary: "Console sign-in with the vendor's OpenID issuer: redirects to its authorization endpoint (code with PKCE)",
      auth: "none",
      budget: "console",
      audit: "console-sign-in",
      page: { back: SIGN_IN },
      errors: [],
      handler: async () => {
        const { url, state } = await openId.start(callbackUri);
        return new Response(null, {
          status: 303,
          headers: { ...WEB_HEADERS, location: url, "set-cookie": setPendingCookie(deps.site, state, PENDING_SIGN_IN_MS / 1000) },
        });
      },
    }),
    endpoint({
      method: "GET",
      path: CALLBACK,
      prefix: "",
      summary: "Where the OpenID issuer returns the browser: the code is exchanged and a console session opened",
      auth: "none",
      budget: "console",
      audit: "console-sign-in",
      page: { back: SIGN_IN },
      errors: [],
      handler: async (call) => {
        const { query, context } = call;
        const q = new URLSearchParams(query);
        const state = q.get("state");
        if (state === null || state !== (await pendingCookie(call, deps.site)))
          throw new KeyturnError("challenge_unknown", "This sign-in was not started in this browser: start it again.");
        if (q.get("error")) throw new KeyturnError("token_invalid", `The issuer refused the sign-in (${q.get("error")!.slice(0, 100)}).`);
        const { secret, session } = await openId.finish(state, q.get("code"), callbackUri);
        await audit.ok("console-sign-in", { ...context, actor: actorOfSession(session) }, {});
        const page = plainPage(
          "Signed in",
          html`<meta http-equiv="refresh" content="0;url=/console/"><p>Signed in as ${session.name}. <a href="/console/">Open the console</a></p>`,
        );
        const headers = new Headers({ ...WEB_HEADERS, "content-type": "text/html;charset=utf-8" });
        headers.append("set-cookie", setSessionCookie(deps.site, "console", secret, (session.expires - deps.clock()) / 1000));
        headers.append("set-cookie", setPendingCookie(deps.site, null));
        return new Response(page.text, { status: 200, headers });
      },
    }),
  ];
}
