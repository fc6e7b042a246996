import { Elysia } from "elysia";
import { KeyturnError } from "../domain/errors";
import type { AuditAction } from "../domain/audit";
import { bearerToken } from "./bearer";
import type { AppDeps, AppServices } from "./deps";
import { errorResponse } from "./respond";
import { licensingRoutes } from "./routes/licensing";
import { identityRoutes } from "./routes/identity";
import { releasesRoutes } from "./routes/releases";
import { updateRoutes } from "./routes/updates";

export const API_PREFIX = "/api/v1";

/** The audit action a refusal on this path is filed under. */
function actionOf(path: string): AuditAction {
  const p = path.slice(API_PREFIX.length);
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

/** The Elysia app of keyturn's API. Tests drive it with `app.handle(new Request(...))`. */
export function createApp(services: AppServices) {
  let server: { requestIP(r: Request): { address: string } | null } | null = null;
  const peerAddress =
    services.peerAddress ?? ((request: Request) => server?.requestIP(request)?.address ?? null);
  const deps: AppDeps = {
    ...services,
    context: (request) => ({ address: peerAddress(request) }),
    authenticate: (request) => services.licensing.authenticate(bearerToken(request)),
  };

  const api = new Elysia({ prefix: API_PREFIX }).use(licensingRoutes(deps));
  api.use(identityRoutes(deps));
  api.use(updateRoutes(deps));
  api.use(releasesRoutes(deps));

  const routes = api.routes.map((r) => ({ method: r.method, pattern: routePattern(r.path) }));
  const allowedMethods = (path: string) => {
    const methods = new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods];
  };

  const app = new Elysia()
    .onStart(({ server: s }) => {
      server = s as typeof server;
    })
    // Elysia hands a route `null` for a path parameter whose %-encoding is malformed; such a path
    // names nothing, so it is refused here before any route sees it.
    .onRequest(({ request }) => {
      if (!isWellEncodedPath(request.url)) throw new KeyturnError("not_found", "There is nothing at this address.");
    })
    .onError(async ({ error, code, request }) => {
      const path = new URL(request.url).pathname;
      let err: KeyturnError;
      const headers: Record<string, string> = {};
      if (error instanceof KeyturnError) err = error;
      else if (code === "NOT_FOUND") {
        const allow = allowedMethods(path);
        if (allow.length > 0) {
          headers.allow = allow.join(", ");
          err = new KeyturnError("method_not_allowed", `${request.method} is not allowed here; use ${allow.join(" or ")}.`);
        } else err = new KeyturnError("not_found", "There is nothing at this address.");
      } else {
        services.log.error("unexpected error", { path, error: String((error as Error)?.stack ?? error) });
        err = new KeyturnError("internal_error", "Something went wrong on our side; the reference names it in our logs.");
      }
      try {
        err.ref ??= await services.audit.refused(actionOf(path), deps.context(request), err);
      } catch (e) {
        services.log.error("audit write failed", { error: String(e) });
      }
      return errorResponse(err, headers);
    })
    .use(api);
  return app;
}

export type App = ReturnType<typeof createApp>;

function isWellEncodedPath(url: string): boolean {
  // Only a URL with a %-escape can be malformed; the rest skip the parse (it was 3% of a manifest GET).
  if (!url.includes("%")) return true;
  try {
    decodeURIComponent(new URL(url).pathname);
    return true;
  } catch {
    return false;
  }
}

function routePattern(path: string): RegExp {
  const escaped = path
    .split("/")
    .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg === "*" ? ".*" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${escaped}$`);
}
