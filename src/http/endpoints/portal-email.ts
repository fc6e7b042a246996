import type { ConsoleDeps, Outcome } from "../../console/deps";
import { html } from "../../console/html";
import { notice, portalPage } from "../../console/layout";
import { portalInstaller, portalSignInPage } from "../../console/pages/portal";
import { portalRekeyAction, portalRekeyConfirm } from "../../console/pages/portal-email";
import type { Audit } from "../../domain/audit";
import { KeyturnError } from "../../domain/errors";
import { PORTAL_LINK_MS } from "../../domain/console-sessions";
import { emailAddressOf, requestPortalLink } from "../../domain/portal-link";
import type { Logger } from "../../config/log";
import { installerEtag } from "../../domain/releases/release-index";
import { endpoint, type Endpoint } from "../endpoint";
import { serveFile } from "../file-serving";
import { PORTAL_HOME as HOME } from "../sessions";
import { setSessionCookie, webAnswer } from "../web";
import { portalSessionPage } from "./portal";

const LINK_PATH = "/portal/link";

/** The same answer for every address, known or not (and the same words when the address is malformed but plausible). */
function linkSentPage(): Outcome {
  const body = html`${notice("If this address holds a licence here, a sign-in link is on its way to it.")}<p>Open the link in the mail within ${PORTAL_LINK_MS / 60_000} minutes; it works once. No mail? Look in the spam folder, or ask again in a few minutes.</p><p><a href="${HOME}">Back</a></p>`;
  return { page: portalPage({ title: "Look in your mailbox", session: null, body }) };
}

/** The link's landing page: a button that signs in (a GET never uses the link, so a mail scanner that opens links does not spend it). */
function linkLandingPage(token: string): Outcome {
  const body = html`<p>Sign in to the licences of the address this link was mailed to.</p>
<form class="stack" method="post" action="${LINK_PATH}"><input type="hidden" name="token" value="${token}"><button type="submit">Sign in to my licences</button></form>`;
  return { page: portalPage({ title: "Sign in", session: null, body }) };
}

function linkSpentPage(ref?: string): Outcome {
  const body = html`${notice("This sign-in link has expired or was used already. Ask for a new one.", true)}${ref ? html`<p class="muted">Reference: <code>${ref}</code></p>` : ""}<p><a href="${HOME}">Back to the sign-in</a></p>`;
  return { page: portalPage({ title: "Link expired", session: null, body }), status: 401 };
}

/**
 * The portal's sign-in by e-mail link (when the site sends mail: --smtp-url), beside the sign-in by
 * key: the customer types an address, a one-time link (15 minutes, kept hashed) is mailed to it if
 * it holds a licence, and the link opens a portal session over every licence under the address,
 * from which a lost key is reissued to that address. Each step is on the sign-in budget.
 */
export function portalEmailEndpoints(deps: ConsoleDeps, audit: Audit, log: Logger): Endpoint[] {
  const baseUrl = deps.site.baseUrl;
  const page = portalSessionPage;
  return [
    endpoint({
      method: "POST",
      path: "/portal/sign-in/email",
      prefix: "",
      summary: "Mail a one-time sign-in link to an address's licences (the same answer for any address; sign-in budget)",
      auth: "none",
      budget: "signin",
      audit: "portal-link-request",
      page: {
        back: HOME,
        refused: (e) => (e.code === "invalid_request" ? webAnswer({ ...portalSignInPage(e.message, undefined, true), status: 400 }) : null),
      },
      errors: [],
      handler: async ({ form, context }) => {
        const email = emailAddressOf(form.get("email"));
        // Not awaited: the answer must not wait on (nor time) the lookup.
        void requestPortalLink({ admin: deps.admin, sessions: deps.sessions, clock: deps.clock, baseUrl, log }, email).catch(() => undefined);
        await audit.ok("portal-link-request", context, {});
        return webAnswer(linkSentPage());
      },
    }),
    endpoint({
      method: "GET",
      path: LINK_PATH,
      prefix: "",
      summary: "The landing page of a mailed sign-in link (uses nothing; its button signs in)",
      auth: "none",
      budget: "signin",
      audit: "request",
      page: { back: HOME },
      errors: [],
      handler: async ({ query }) => {
        const token = new URLSearchParams(query).get("token") ?? "";
        return webAnswer(/^[0-9A-Z]{32}$/.test(token) ? linkLandingPage(token) : linkSpentPage());
      },
    }),
    endpoint({
      method: "POST",
      path: LINK_PATH,
      prefix: "",
      summary: "Sign in with a mailed link, once: a portal session over every licence of its address",
      auth: "none",
      budget: "signin",
      audit: "portal-sign-in",
      page: { back: HOME, refused: (e) => (e.code === "license_unknown" ? webAnswer(linkSpentPage(e.ref)) : null) },
      errors: [],
      handler: async ({ form, context }) => {
        const email = await deps.sessions.takePortalLink(form.get("token"));
        if (email === null) throw new KeyturnError("license_unknown", "This sign-in link has expired or was used already.");
        const { secret, session } = await deps.sessions.signInPortalEmail(email);
        await audit.ok("portal-sign-in", context, {});
        return webAnswer({ redirect: HOME }, { "set-cookie": setSessionCookie(deps.site, "portal", secret, (session.expires - deps.clock()) / 1000) });
      },
    }),
    page("GET", "/portal/licenses/{license}/rekey", "Confirm sending a new key for one of the address's licences", "request", "api", (call, session) =>
      portalRekeyConfirm(deps, session, call.params.license),
    ),
    page(
      "POST",
      "/portal/licenses/{license}/rekey",
      "Reissue a lost key: the new key is mailed to the licence's address, seats kept",
      "license-rekey",
      "signin",
      (call, session) => portalRekeyAction(deps, session, call.context.address, call.params.license),
    ),
    page(
      "GET",
      "/portal/licenses/{license}/download/{product}/{channel}/{platform}",
      "The newest installer of one of the session's licences' channels",
      "update",
      "api",
      async (call, session) => {
        const { license, product, channel, platform } = call.params;
        const release = await portalInstaller(deps, session, product, channel, platform, license);
        return serveFile(call.request, deps.releases.verifiedInstaller(release), release.manifest.size, installerEtag(release), release.manifest.installer);
      },
    ),
  ];
}
