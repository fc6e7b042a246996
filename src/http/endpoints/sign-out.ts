import { sessionActor, type ConsoleDeps } from "../../console/deps";
import type { Audit, AuditAction } from "../../domain/audit";
import { endpoint, type Budget, type Endpoint } from "../endpoint";
import { readForm, refusalPage, sessionCookie, setSessionCookie, webAnswer, type SessionKind } from "../web";

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
export function signOutEndpoint(d: ConsoleDeps, audit: Audit, o: SignOut): Endpoint {
  return endpoint({
    method: "POST",
    path: o.path,
    prefix: "",
    summary: "Sign out: the session is revoked server-side and its cookie cleared",
    auth: "none",
    budget: o.budget,
    audit: o.action,
    errors: [],
    handler: async (call) => {
      const { request, context } = call;
      const secret = await sessionCookie(call, d.site, o.kind);
      const session = await d.sessions.find(secret, o.kind);
      try {
        if (session) {
          await readForm(d.site, request, session);
          await d.sessions.revoke(secret);
          await audit.ok(o.action, o.kind === "console" ? { ...context, actor: sessionActor(session) } : context, { licenseId: session.licenseId });
        }
        return webAnswer({ redirect: o.signedOut }, { "set-cookie": setSessionCookie(d.site, o.kind, null) });
      } catch (e) {
        return refusalPage(audit, o.action, context.address, e, o.back);
      }
    },
  });
}
