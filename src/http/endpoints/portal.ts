import type { ConsoleDeps, Outcome } from "../../console/deps";
import { portalDeactivateAction, portalHome, portalInstaller, portalOfflineAction, portalSignInPage } from "../../console/pages/portal";
import type { Audit, AuditAction } from "../../domain/audit";
import type { Session } from "../../domain/console-sessions";
import { KeyturnError } from "../../domain/errors";
import { licenseOfKey } from "../../domain/portal";
import { installerEtag } from "../../domain/releases/release-index";
import { signOutEndpoint } from "./sign-out";
import { endpoint, type Budget, type Call, type Endpoint } from "../endpoint";
import { serveFile } from "../file-serving";
import { readForm, refusalPage, sessionCookie, setSessionCookie, webAnswer } from "../web";

const HOME = "/portal/";

/** A path parameter; a malformed one (bad percent-encoding) is not_found. */
const param = (call: Call, name: string) => {
  const v = call.params[name];
  if (v === null || v === undefined) throw new KeyturnError("not_found", "There is nothing at this address.");
  return v;
};

/**
 * The customers' portal at /portal/ (prefix ""): signed in with their license key into a short
 * server-side session (the browser keeps only the session cookie), they see and free their seats,
 * download their channels' newest installers and activate a computer offline.
 */
export function portalEndpoints(d: ConsoleDeps, audit: Audit): Endpoint[] {
  const web = (
    method: "GET" | "POST",
    path: string,
    summary: string,
    action: AuditAction,
    budget: Budget,
    run: (call: Call, s: Session, form: URLSearchParams) => Promise<Outcome | Response>,
  ): Endpoint =>
    endpoint({
      method,
      path,
      prefix: "",
      summary,
      auth: "none",
      budget,
      audit: action,
      errors: [],
      handler: async (call) => {
        const session = await d.sessions.find(await sessionCookie(call, "portal"), "portal");
        if (!session) return method === "GET" ? webAnswer({ redirect: HOME }) : webAnswer(portalSignInPage("Your sign-in has ended: sign in again."));
        try {
          const form = method === "POST" ? await readForm(call.request, session) : new URLSearchParams();
          const out = await run(call, session, form);
          return out instanceof Response ? out : webAnswer(out);
        } catch (e) {
          return refusalPage(audit, action, call.context.address, e, HOME);
        }
      },
    });

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
      auth: "none",
      budget: "api",
      audit: "request",
      errors: [],
      handler: async (call) => {
        const { context } = call;
        const session = await d.sessions.find(await sessionCookie(call, "portal"), "portal");
        if (!session) return webAnswer(portalSignInPage());
        try {
          return webAnswer(await portalHome(d, session));
        } catch (e) {
          return refusalPage(audit, "request", context.address, e, HOME);
        }
      },
    }),
    endpoint({
      method: "POST",
      path: "/portal/sign-in",
      prefix: "",
      summary: "Sign in to the portal with a licence key (counted against the sign-in budget)",
      auth: "none",
      budget: "signin",
      audit: "portal-sign-in",
      errors: [],
      handler: async ({ request, context }) => {
        try {
          const form = await readForm(request, null);
          const license = await licenseOfKey(d.admin, form.get("key"));
          const { secret, session } = await d.sessions.signInPortal(license.id, license.licensee);
          await audit.ok("portal-sign-in", context, { licenseId: license.id });
          return webAnswer({ redirect: HOME }, { "set-cookie": setSessionCookie(request, "portal", secret, (session.expires - d.clock()) / 1000) });
        } catch (e) {
          if (!(e instanceof KeyturnError) || e.code !== "license_unknown") return refusalPage(audit, "portal-sign-in", context.address, e, HOME);
          const ref = await audit.refused("portal-sign-in", context, e);
          return webAnswer(portalSignInPage("That key is not known. Check it and try again.", ref));
        }
      },
    }),
    signOutEndpoint(d, audit, { kind: "portal", path: "/portal/sign-out", budget: "api", action: "portal-sign-out", signedOut: HOME, back: HOME }),
    web("POST", "/portal/installations/{id}/deactivate", "Deactivate one of the licence's installations (frees its seat)", "activation-deactivate", "api", (call, s) =>
      portalDeactivateAction(d, s, call.context.address, param(call, "id")),
    ),
    web("POST", "/portal/offline", "Offline activation: a request code in, the answer code out", "activate", "signin", (call, s, form) =>
      portalOfflineAction(d, s, call.context.address, form),
    ),
    web("GET", "/portal/download/{product}/{channel}/{platform}", "The newest installer of one of the licence's channels", "update", "api", async (call, s) => {
      const release = await portalInstaller(d, s, param(call, "product"), param(call, "channel"), param(call, "platform"));
      const verified = d.releases.openInstaller(release);
      if (verified === null) throw new KeyturnError("unavailable", "The installer is being replaced; try again shortly.");
      return serveFile(call.request, verified, release.manifest.size, installerEtag(release), release.manifest.installer);
    }),
  ];
}
