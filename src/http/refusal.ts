import type { Logger } from "../config/log";
import type { Audit, AuditAction, RequestContext } from "../domain/audit";
import { KeyturnError } from "../domain/errors";
import { errorResponse, HttpRefusal } from "./respond";
import { STATUS_OF } from "./status";

interface RefusalDeps {
  readonly apiPrefix: string;
  readonly log: Logger;
  readonly audit: Audit;
  readonly context: (request: Request) => RequestContext;
  /** The methods the app answers at a path (for 405 and its Allow header); empty when none. */
  readonly allowedMethods: (path: string) => string[];
  /** Told the status and audit reference of each refusal, for the request's log line. */
  readonly refused: (request: Request, status: number, ref: string | undefined) => void;
}

/**
 * The one error answer of the API, for Elysia's error hook and the fast path alike: a KeyturnError
 * as it is, an unmatched route as 404 or 405, anything else as internal_error (logged); every
 * refusal is audited and answered with the audit line's `ref`.
 */
export function refusalResponder(d: RefusalDeps) {
  return async (error: unknown, request: Request, routeNotFound: boolean): Promise<Response> => {
    const path = new URL(request.url).pathname;
    let err: KeyturnError;
    const headers: Record<string, string> = {};
    if (error instanceof KeyturnError) {
      err = error;
      if (error instanceof HttpRefusal) Object.assign(headers, error.headers);
    } else if (routeNotFound) {
      const allow = d.allowedMethods(path);
      if (allow.length > 0) {
        headers.allow = allow.join(", ");
        err = new KeyturnError("method_not_allowed", `${request.method} is not allowed here; use ${allow.join(" or ")}.`);
      } else err = new KeyturnError("not_found", "There is nothing at this address.");
    } else {
      d.log.error("unexpected error", { path, error: String((error as Error)?.stack ?? error) });
      err = new KeyturnError("internal_error", "Something went wrong on our side; the reference names it in our logs.");
    }
    try {
      err.ref ??= await d.audit.refused(actionOf(path, d.apiPrefix), d.context(request), err);
    } catch (e) {
      d.log.error("audit write failed", { error: String(e) });
    }
    d.refused(request, STATUS_OF[err.code], err.ref);
    return errorResponse(err, headers);
  };
}

/** The audit action a refusal on this path is filed under. */
function actionOf(path: string, apiPrefix: string): AuditAction {
  const p = path.slice(apiPrefix.length);
  if (p === "/licenses/activate") return "activate";
  if (p === "/entitlements/refresh") return "refresh";
  if (p === "/entitlements/deactivate") return "deactivate";
  if (p === "/entitlements/current") return "current";
  if (p === "/auth/identity/exchange") return "sign-in";
  if (p === "/auth/identity/challenge") return "challenge";
  if (p.startsWith("/updates/")) return "update";
  if (p === "/releases") return "releases";
  return "request";
}
