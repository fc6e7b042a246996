import { ASSETS } from "../../console/assets";
import { sessionActor, type ConsoleDeps, type Outcome } from "../../console/deps";
import { doneMessage } from "../../console/confirm";
import { dashboardPage } from "../../console/pages/dashboard";
import { auditPage } from "../../console/pages/audit";
import {
  createLicenseAction,
  deactivateAction,
  licensePage,
  licensesPage,
  reinstateLicenseAction,
  revokeLicenseAction,
  updateLicenseAction,
} from "../../console/pages/licenses";
import { RELEASE_OPS, releaseControlAction, releasesPage } from "../../console/pages/releases";
import { consoleSignInPage, SIGN_IN } from "../../console/pages/sign-in";
import { retryDeliveryAction, webhooksPage } from "../../console/pages/webhooks";
import type { Audit, AuditAction } from "../../domain/audit";
import { sessionHas, type Session } from "../../domain/console-sessions";
import type { ConsoleOpenId } from "../../domain/identity/console-sign-in";
import { KeyturnError } from "../../domain/errors";
import { signOutEndpoint } from "./sign-out";
import { endpoint, type Call, type Endpoint } from "../endpoint";
import { serveBytes } from "../file-serving";
import { queryParams, readForm, refusalPage, sessionCookie, setSessionCookie, webAnswer, WEB_HEADERS } from "../web";
import { consoleOpenIdEndpoints } from "./console-openid";

/** The sections in the order the dashboard falls back to when the session may not read the stats. */
const FIRST_SECTION = [
  ["stats:read", "/console/"],
  ["licenses:read", "/console/licenses"],
  ["audit:read", "/console/audit"],
  ["releases:read", "/console/releases"],
  ["webhooks:read", "/console/webhooks"],
  ["activations:write", "/console/offline"],
] as const;

/** What a console page or action is given: the call, the signed-in session, the form of a POST. */
export interface Page {
  readonly call: Call;
  readonly session: Session;
  readonly address: string | null;
  readonly form: URLSearchParams;
  /** A path parameter; a malformed one (bad percent-encoding) is not_found. */
  readonly param: (name: string) => string;
}

/** The sign-in page, with the issuer's button when staff may sign in with it. */
const signInPageFor = (openId: ConsoleOpenId | null) => (message?: string, status?: number, ref?: string) =>
  consoleSignInPage({ openId: openId !== null, message, status, ref });

/**
 * Declares a console page or action: the session from its cookie (none: to the sign-in page), the
 * form of a POST through the Origin and CSRF checks, and a refusal shown as a page.
 */
export function consolePageEndpoint(d: ConsoleDeps, audit: Audit, openId: ConsoleOpenId | null) {
  const signInPage = signInPageFor(openId);
  return (method: "GET" | "POST", path: string, summary: string, action: AuditAction, run: (p: Page) => Promise<Outcome> | Outcome): Endpoint =>
    endpoint({
      method,
      path,
      prefix: "",
      summary,
      auth: "none",
      budget: "admin",
      audit: action,
      errors: [],
      handler: async (call) => {
        const address = call.context.address;
        const session = await d.sessions.find(await sessionCookie(call, d.site, "console"), "console");
        if (!session) return method === "GET" ? webAnswer({ redirect: SIGN_IN }) : webAnswer(signInPage("Your session has ended: sign in again.", 401));
        try {
          const form = method === "POST" ? await readForm(d.site, call.request, session) : new URLSearchParams();
          const param = (name: string) => {
            const v = call.params[name];
            if (v === null || v === undefined) throw new KeyturnError("not_found", "There is nothing at this address.");
            return v;
          };
          return webAnswer(await run({ call, session, address, form, param }));
        } catch (e) {
          return refusalPage(audit, action, address, e, "/console/", sessionActor(session));
        }
      },
    });
}

/**
 * The console's pages and actions at /console/ (prefix ""): each is the admin API's operation
 * behind a session cookie instead of a bearer token, with the scope checks of the domain services.
 */
export function consoleEndpoints(d: ConsoleDeps, audit: Audit, openId: ConsoleOpenId | null): Endpoint[] {
  const signInPage = signInPageFor(openId);
  const web = consolePageEndpoint(d, audit, openId);

  const signIn: Endpoint = endpoint({
    method: "POST",
    path: SIGN_IN,
    prefix: "",
    summary: "Sign in to the console with an admin token",
    auth: "none",
    budget: "console",
    audit: "console-sign-in",
    errors: [],
    handler: async ({ request, context }) => {
      try {
        const form = await readForm(d.site, request, null);
        const { secret, session } = await d.sessions.signInWithToken(form.get("token") ?? "");
        await audit.ok("console-sign-in", { ...context, actor: sessionActor(session) }, {});
        return webAnswer({ redirect: "/console/" }, { "set-cookie": setSessionCookie(d.site, "console", secret, (session.expires - d.clock()) / 1000) });
      } catch (e) {
        if (!(e instanceof KeyturnError) || e.code !== "admin_token_invalid") return refusalPage(audit, "console-sign-in", context.address, e, SIGN_IN);
        const ref = await audit.refused("console-sign-in", context, e);
        return webAnswer(signInPage("The token is unknown, expired or revoked.", 401, ref));
      }
    },
  });

  return [
    endpoint({
      method: "GET",
      path: "/console",
      prefix: "",
      summary: "The console (redirects to /console/)",
      auth: "none",
      budget: "admin",
      audit: "request",
      errors: [],
      handler: () => webAnswer({ redirect: "/console/" }),
    }),
    endpoint({
      method: "GET",
      path: SIGN_IN,
      prefix: "",
      summary: "The console's sign-in page",
      auth: "none",
      budget: "admin",
      audit: "request",
      errors: [],
      handler: async (call) =>
        (await d.sessions.find(await sessionCookie(call, d.site, "console"), "console")) ? webAnswer({ redirect: "/console/" }) : webAnswer(signInPage()),
    }),
    signIn,
    signOutEndpoint(d, audit, { kind: "console", path: "/console/sign-out", budget: "admin", action: "console-sign-out", signedOut: SIGN_IN, back: "/console/" }),
    endpoint({
      method: "GET",
      path: "/console/assets/{file}",
      prefix: "",
      summary: "The console's and portal's embedded files (stylesheet, script, uPlot)",
      auth: "none",
      budget: "api",
      audit: "request",
      errors: ["not_found"],
      handler: ({ request, params }) => {
        const asset = params.file ? ASSETS[params.file] : undefined;
        if (!asset || !Object.hasOwn(ASSETS, params.file!)) throw new KeyturnError("not_found", "There is nothing at this address.");
        const response = serveBytes(request, asset.bytes, asset.etag, asset.type);
        response.headers.set("x-content-type-options", WEB_HEADERS["x-content-type-options"]!);
        return response;
      },
    }),
    ...(openId ? consoleOpenIdEndpoints(d, audit, openId) : []),
    web("GET", "/console/", "The dashboard: installations by version per lane, activations, licences expiring, the release tree", "stats-read", (p) => {
      if (sessionHas(p.session, "stats:read")) return dashboardPage(d, p.session, p.address);
      const first = FIRST_SECTION.find(([scope]) => sessionHas(p.session, scope));
      if (!first) throw new KeyturnError("insufficient_scope", "This session holds no scope the console shows.");
      return { redirect: first[1] };
    }),
    web("GET", "/console/licenses", "Licences: search and the create form", "license-list", (p) => licensesPage(d, p.session, p.address, queryParams(p.call.query))),
    web("POST", "/console/licenses", "Create a licence; its key is shown once", "license-create", (p) => createLicenseAction(d, p.session, p.address, p.form)),
    web("GET", "/console/licenses/{id}", "A licence with its installations", "license-show", (p) => licensePage(d, p.session, p.address, p.param("id"), doneMessage(queryParams(p.call.query)))),
    web("POST", "/console/licenses/{id}", "Edit a licence's seats, expiry and channels", "license-update", (p) => updateLicenseAction(d, p.session, p.address, p.param("id"), p.form)),
    web("POST", "/console/licenses/{id}/revoke", "Revoke a licence", "license-revoke", (p) => revokeLicenseAction(d, p.session, p.address, p.param("id"))),
    web("POST", "/console/licenses/{id}/reinstate", "Reinstate a revoked licence", "license-reinstate", (p) => reinstateLicenseAction(d, p.session, p.address, p.param("id"))),
    web("POST", "/console/activations/{id}/deactivate", "Deactivate an installation (frees its seat)", "activation-deactivate", (p) => deactivateAction(d, p.session, p.address, p.param("id"))),
    web("GET", "/console/audit", "The audit trail with filters", "audit-read", (p) => auditPage(d, p.session, p.address, queryParams(p.call.query))),
    web("GET", "/console/releases", "Lanes, live releases, rollout state and controls, skipped folders", "release-list", (p) => releasesPage(d, p.session, p.address, doneMessage(queryParams(p.call.query)))),
    ...RELEASE_OPS.map((op) =>
      web("POST", `/console/releases/{lane}/{version}/${op}`, `${op[0]!.toUpperCase()}${op.slice(1)} a release`, `release-${op}`, (p) =>
        releaseControlAction(d, p.session, p.address, p.param("lane"), p.param("version"), op),
      ),
    ),
    web("GET", "/console/webhooks", "Webhook endpoints and deliveries", "webhook-list", (p) => webhooksPage(d, p.session, p.address, queryParams(p.call.query))),
    web("POST", "/console/webhook-deliveries/{id}/retry", "Retry a failed webhook delivery", "webhook-retry", (p) => retryDeliveryAction(d, p.session, p.address, p.param("id"))),
  ];
}

