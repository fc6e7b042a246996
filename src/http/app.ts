import { Elysia } from "elysia";
import { bearerToken } from "./bearer";
import type { AppDeps, AppServices } from "./deps";
import { frontDoor } from "./front-door";
import { fastPath } from "./fast-path";
import { refusalResponder } from "./refusal";
import { licensingRouteTable, licensingRoutes } from "./routes/licensing";
import { identityRoutes } from "./routes/identity";
import { releasesRoutes } from "./routes/releases";
import { updateHandler, updateRoutes } from "./routes/updates";
import { siteRoutes } from "./routes/site";

export const API_PREFIX = "/api/v1";

/** The Elysia app of keyturn's API. Tests drive it with `app.handle(new Request(...))`. */
export function createApp(services: AppServices) {
  let server: { requestIP(r: Request): { address: string } | null } | null = null;
  const peerAddress =
    services.peerAddress ?? ((request: Request) => server?.requestIP(request)?.address ?? null);
  const front = frontDoor({ ...services, apiPrefix: API_PREFIX, peerAddress });
  const deps: AppDeps = {
    ...services,
    context: (request) => ({ address: front.address(request) }),
    authenticate: (request) => services.licensing.authenticate(bearerToken(request)),
  };

  const licensing = licensingRouteTable(deps);
  const api = new Elysia({ prefix: API_PREFIX, strictPath: true }).use(licensingRoutes(licensing));
  api.use(identityRoutes(deps));
  const serveUpdate = updateHandler(deps);
  api.use(updateRoutes(deps, serveUpdate));
  api.use(releasesRoutes(deps));
  api.use(siteRoutes(deps));

  const routes = api.routes.map((r) => ({ method: r.method, pattern: routePattern(r.path) }));
  const allowedMethods = (path: string) => {
    const methods = new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods];
  };

  const refuse = refusalResponder({ apiPrefix: API_PREFIX, log: services.log, audit: services.audit, context: deps.context, allowedMethods, refused: front.refused });
  const app = new Elysia({ strictPath: true })
    .onStart(({ server: s }) => {
      server = s as typeof server;
    })
    .onRequest(front.onRequest)
    .onAfterResponse(front.onAfterResponse)
    .onError(({ error, code, request }) => refuse(error, request, code === "NOT_FOUND"))
    .use(api);
  // app.handle (what the server and the tests call) tries the fast path first; Elysia answers the rest.
  const fast = fastPath({
    apiPrefix: API_PREFIX,
    variant: services.variant,
    front,
    refuse,
    serveUpdate,
    exact: licensing,
  });
  const elysiaHandle = app.handle;
  app.handle = (request) => fast(request) ?? elysiaHandle(request);
  return app;
}

export type App = ReturnType<typeof createApp>;

function routePattern(path: string): RegExp {
  const escaped = path
    .split("/")
    .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg === "*" ? ".*" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${escaped}$`);
}
