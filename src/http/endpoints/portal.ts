import type { ConsoleDeps, Outcome } from "../../console/deps";
import { portalDeactivateAction, portalHome, portalInstaller, portalOfflineAction, portalSignInPage } from "../../console/pages/portal";
import type { Audit, AuditAction } from "../../domain/audit";
import type { Session } from "../../domain/console-sessions";
import { licenseOfKey } from "../../domain/portal";
import { installerEtag } from "../../domain/releases/release-index";
import { signOutEndpoint } from "./sign-out";
import { endpoint, type Budget, type Call, type Endpoint, type ParamsOf } from "../endpoint";
import { serveFile } from "../file-serving";
import { PORTAL_HOME as HOME } from "../sessions";
import { setSessionCookie, signedIn, webAnswer } from "../web";

/** A page or an action behind the portal's session (auth `portal-session`): its refusals are pages, audited naming the licence. */
export const portalSessionPage = <const P extends string>(
  method: "GET" | "POST",
  path: P,
  summary: string,
  action: AuditAction,
  budget: Budget,
  run: (call: Call<undefined, ParamsOf<P>>, session: Session) => Promise<Outcome | Response>,
): Endpoint =>
  endpoint({
    method,
    path,
    prefix: "",
    summary,
    auth: "portal-session",
    page: { back: HOME },
    budget,
    audit: action,
    errors: [],
    handler: async (call) => {
      const out = await run(call, signedIn(call.session));
      return out instanceof Response ? out : webAnswer(out);
    },
  });

/**
 * The customers' portal at /portal/ (prefix ""): signed in with their license key into a short
 * server-side session (the browser keeps only the session cookie), they see and free their seats,
 * download their channels' newest installers and activate a computer offline.
 */
export function portalEndpoints(deps: ConsoleDeps, audit: Audit): Endpoint[] {
  const page = portalSessionPage;
  return [
    endpoint({
      method: "GET",
      path: "/portal",
      prefix: "",
      summary: "The portal (redirects to /portal/)",
      auth: "none",
      budget: "api",
      audit: "request",
      errors: [],
      handler: () => webAnswer({ redirect: HOME }),
    }),
    endpoint({
      method: "GET",
      path: HOME,
      prefix: "",
      summary: "The portal: the sign-in form, or the licence's installations, downloads and offline activation",
      auth: "portal-session-if-any",
      page: { back: HOME },
      budget: "api",
      audit: "request",
      errors: [],
      handler: async ({ session }) =>
        webAnswer(session ? await portalHome(deps, session) : portalSignInPage(undefined, undefined, deps.admin.mail !== undefined)),
    }),
    endpoint({
      method: "POST",
      path: "/portal/sign-in",
      prefix: "",
      summary: "Sign in to the portal with a licence key (counted against the sign-in budget)",
      auth: "none",
      budget: "signin",
      audit: "portal-sign-in",
      // An unknown key is shown the form again with why; other refusals are the refusal page.
      page: {
        back: HOME,
        refused: (e) =>
          e.code === "license_unknown"
            ? webAnswer(portalSignInPage("That key is not known. Check it and try again.", e.ref, deps.admin.mail !== undefined))
            : null,
      },
      errors: [],
      handler: async ({ form, context }) => {
        const license = await licenseOfKey(deps.admin, form.get("key"));
        const { secret, session } = await deps.sessions.signInPortal(license.id, license.licensee);
        await audit.ok("portal-sign-in", context, { licenseId: license.id });
        return webAnswer({ redirect: HOME }, { "set-cookie": setSessionCookie(deps.site, "portal", secret, (session.expires - deps.clock()) / 1000) });
      },
    }),
    signOutEndpoint(deps, audit, { kind: "portal", path: "/portal/sign-out", budget: "api", action: "portal-sign-out", signedOut: HOME, back: HOME }),
    page(
      "POST",
      "/portal/installations/{id}/deactivate",
      "Deactivate one of the licence's installations (frees its seat)",
      "activation-deactivate",
      "api",
      (call, session) => portalDeactivateAction(deps, session, call.context.address, call.params.id),
    ),
    page("POST", "/portal/offline", "Offline activation: a request code in, the answer code out", "activate", "signin", (call, session) =>
      portalOfflineAction(deps, session, call.context.address, call.form),
    ),
    page(
      "GET",
      "/portal/download/{product}/{channel}/{platform}",
      "The newest installer of one of the licence's channels",
      "update",
      "api",
      async (call, session) => {
        const { product, channel, platform } = call.params;
        const release = await portalInstaller(deps, session, product, channel, platform);
        return serveFile(call.request, deps.releases.verifiedInstaller(release), release.manifest.size, installerEtag(release), release.manifest.installer);
      },
    ),
  ];
}
