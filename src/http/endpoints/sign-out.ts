import type { ConsoleDeps } from "../../console/deps";
import type { Audit, AuditAction } from "../../domain/audit";
import { endpoint, type Budget, type Endpoint } from "../endpoint";
import { sessionCookie, setSessionCookie, webAnswer, type SessionKind } from "../web";

export interface SignOut {
  readonly kind: SessionKind;
  readonly path: string;
  readonly budget: Budget;
  readonly action: AuditAction;
  /** Where the browser goes once signed out. */
  readonly signedOut: string;
  /** Where a refusal page leads back to. */
  readonly back: string;
}

/**
 * Sign-out of the console or the portal: the session is revoked server-side (its form carries the
 * CSRF token) with an audit line, and its cookie cleared; without a session only the cookie is.
 */
export function signOutEndpoint(deps: ConsoleDeps, audit: Audit, o: SignOut): Endpoint {
  return endpoint({
    method: "POST",
    path: o.path,
    prefix: "",
    summary: "Sign out: the session is revoked server-side and its cookie cleared",
    // The form is checked against the session when there is one; without one only the cookie is cleared.
    auth: o.kind === "console" ? "console-session-if-any" : "portal-session-if-any",
    page: { back: o.back },
    budget: o.budget,
    audit: o.action,
    errors: [],
    handler: async ({ request, session, context }) => {
      if (session) {
        await deps.sessions.revoke(await sessionCookie(request, deps.site, o.kind));
        await audit.ok(o.action, context, { licenseId: session.licenseId });
      }
      return webAnswer({ redirect: o.signedOut }, { "set-cookie": setSessionCookie(deps.site, o.kind, null) });
    },
  });
}
