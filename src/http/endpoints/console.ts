import { ASSETS } from "../../console/assets";
import { actorOfSession, type ConsoleDeps, type Outcome } from "../../console/deps";
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
import { endpoint, type Call, type Endpoint, type ParamsOf } from "../endpoint";
import { serveBytes } from "../file-serving";
import { setSessionCookie, signedIn, webAnswer, WEB_HEADERS } from "../web";
import { consoleOpenIdEndpoints } from "./console-openid";

/** What a console page or action is given: the call, the signed-in session, the client's address, the form of a POST. */
export interface Page<Params> {
  readonly call: Call<undefined, Params>;
  readonly params: Params;
  readonly session: Session;
  readonly address: string | null;
  readonly form: URLSearchParams;
}

const BACK = "/console/";

/** The sections in the order the dashboard falls back to when the session may not read the stats. */
const FIRST_SECTION = [
  ["stats:read", "/console/"],
  ["licenses:read", "/console/licenses"],
  ["audit:read", "/console/audit"],
  ["releases:read", "/console/releases"],
  ["webhooks:read", "/console/webhooks"],
  ["activations:write", "/console/offline"],
] as const;

/**
 * Declares a console page or action: the session from its cookie (none: to the sign-in page), the
 * form of a POST through the Origin and CSRF checks, and a refusal shown as a page.
 */
export function consolePage<const P extends string>(
  method: "GET" | "POST",
  path: P,
  summary: string,
  action: AuditAction,
  run: (p: Page<ParamsOf<P>>) => Promise<Outcome> | Outcome,
): Endpoint {
  return endpoint({
    method,
    path,
    prefix: "",
    summary,
    auth: "console-session",
    page: { back: BACK },
    budget: "admin",
    audit: action,
    errors: [],
    handler: async (call) =>
      webAnswer(await run({ call, params: call.params, session: signedIn(call.session), address: call.context.address, form: call.form })),
  });
}

/**
 * The console's pages and actions at /console/ (prefix ""): each is the admin API's operation
 * behind a session cookie instead of a bearer token, with the scope checks of the domain services.
 */
export function consoleEndpoints(deps: ConsoleDeps, audit: Audit, openId: ConsoleOpenId | null): Endpoint[] {
  const signInPage = (message?: string, status?: number, ref?: string) => consoleSignInPage({ openId: openId !== null, message, status, ref });
  const page = consolePage;

  const signIn: Endpoint = endpoint({
    method: "POST",
    path: SIGN_IN,
    prefix: "",
    summary: "Sign in to the console with an admin token",
    auth: "none",
    // An unknown token is shown the form again with why; other refusals are the refusal page.
    page: {
      back: SIGN_IN,
      refused: (e) => (e.code === "admin_token_invalid" ? webAnswer(signInPage("The token is unknown, expired or revoked.", 401, e.ref)) : null),
    },
    budget: "console",
    audit: "console-sign-in",
    errors: [],
    handler: async ({ form, context }) => {
      const { secret, session } = await deps.sessions.signInWithToken(form.get("token") ?? "");
      await audit.ok("console-sign-in", { ...context, actor: actorOfSession(session) }, {});
      return webAnswer({ redirect: BACK }, { "set-cookie": setSessionCookie(deps.site, "console", secret, (session.expires - deps.clock()) / 1000) });
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
      handler: () => webAnswer({ redirect: BACK }),
    }),
    endpoint({
      method: "GET",
      path: SIGN_IN,
      prefix: "",
      summary: "The console's sign-in page",
      auth: "console-session-if-any",
      page: { back: SIGN_IN },
      budget: "admin",
      audit: "request",
      errors: [],
      handler: ({ session }) => (session ? webAnswer({ redirect: BACK }) : webAnswer(signInPage())),
    }),
    signIn,
    signOutEndpoint(deps, audit, { kind: "console", path: "/console/sign-out", budget: "admin", action: "console-sign-out", signedOut: SIGN_IN, back: BACK }),
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
    ...(openId ? consoleOpenIdEndpoints(deps, audit, openId) : []),
    page("GET", "/console/", "The dashboard: installations by version per lane, activations, licences expiring, the release tree", "stats-read", (p) => {
      if (sessionHas(p.session, "stats:read")) return dashboardPage(deps, p.session, p.address);
      const first = FIRST_SECTION.find(([scope]) => sessionHas(p.session, scope));
      if (!first) throw new KeyturnError("insufficient_scope", "This session holds no scope the console shows.");
      return { redirect: first[1] };
    }),
    page("GET", "/console/licenses", "Licences: search and the create form", "license-list", (p) =>
      licensesPage(deps, p.session, p.address, new URLSearchParams(p.call.query)),
    ),
    page("POST", "/console/licenses", "Create a licence; its key is shown once", "license-create", (p) =>
      createLicenseAction(deps, p.session, p.address, p.form),
    ),
    page("GET", "/console/licenses/{id}", "A licence with its installations", "license-show", (p) =>
      licensePage(deps, p.session, p.address, p.params.id, doneMessage(new URLSearchParams(p.call.query))),
    ),
    page("POST", "/console/licenses/{id}", "Edit a licence's seats, expiry and channels", "license-update", (p) =>
      updateLicenseAction(deps, p.session, p.address, p.params.id, p.form),
    ),
    page("POST", "/console/licenses/{id}/revoke", "Revoke a licence", "license-revoke", (p) => revokeLicenseAction(deps, p.session, p.address, p.params.id)),
    page("POST", "/console/licenses/{id}/reinstate", "Reinstate a revoked licence", "license-reinstate", (p) =>
      reinstateLicenseAction(deps, p.session, p.address, p.params.id),
    ),
    page("POST", "/console/activations/{id}/deactivate", "Deactivate an installation (frees its seat)", "activation-deactivate", (p) =>
      deactivateAction(deps, p.session, p.address, p.params.id),
    ),
    page("GET", "/console/audit", "The audit trail with filters", "audit-read", (p) =>
      auditPage(deps, p.session, p.address, new URLSearchParams(p.call.query)),
    ),
    page("GET", "/console/releases", "Lanes, live releases, rollout state and controls, skipped folders", "release-list", (p) =>
      releasesPage(deps, p.session, p.address, doneMessage(new URLSearchParams(p.call.query))),
    ),
    ...RELEASE_OPS.map((op) =>
      page("POST", `/console/releases/{lane}/{version}/${op}`, `${op[0]!.toUpperCase()}${op.slice(1)} a release`, `release-${op}`, (p) =>
        releaseControlAction(deps, p.session, p.address, p.params.lane, p.params.version, op),
      ),
    ),
    page("GET", "/console/webhooks", "Webhook endpoints and deliveries", "webhook-list", (p) =>
      webhooksPage(deps, p.session, p.address, new URLSearchParams(p.call.query)),
    ),
    page("POST", "/console/webhook-deliveries/{id}/retry", "Retry a failed webhook delivery", "webhook-retry", (p) =>
      retryDeliveryAction(deps, p.session, p.address, p.params.id),
    ),
  ];
}
