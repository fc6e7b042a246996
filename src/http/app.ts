import type { Server } from "bun";
import { authenticateAdmin } from "../domain/admin/tokens";
import { VERSION } from "../version";
import { bearerToken } from "./bearer";
import type { AppServices } from "./deps";
import { dispatcher } from "./dispatch";
import { API_PREFIX } from "./endpoint";
import { frontDoor } from "./front-door";
import { openApiDocument } from "./openapi";
import { refusals } from "./refusal";
import { routeTable } from "./route-table";

export { API_PREFIX };

/**
 * keyturn's API: the route table and its one dispatcher. `handle` (also `fetch`) is what the
 * production server, `listen` and the tests all call.
 */
export function createApp(services: AppServices) {
  let openapi = "";
  const endpoints = routeTable(services, () => openapi);
  openapi = JSON.stringify(openApiDocument(services.variant, endpoints, VERSION));
  const dispatch = dispatcher({
    prefix: API_PREFIX,
    endpoints,
    front: frontDoor(services),
    refuse: refusals(services),
    authenticate: (request) => services.licensing.authenticate(bearerToken(request)),
    authenticateAdmin: (request) => authenticateAdmin(services.admin, bearerToken(request, "admin")),
    metrics: services.metrics,
  });
  const peerOf = services.peerAddress ?? (() => null);
  /** Answers one request; `peer` is the socket's address (else services.peerAddress decides). */
  const handle = (request: Request, peer?: string | null) => dispatch(request, peer === undefined ? peerOf(request) : peer);
  let server: Server<undefined> | null = null;

  return {
    handle,
    fetch: handle,
    endpoints,
    /** Method and full path of every route answered (GETs also answer HEAD). */
    routes: endpoints.flatMap((e) => {
      const path = (e.prefix ?? API_PREFIX) + e.path;
      return e.method === "GET" ? [{ method: "GET", path }, { method: "HEAD", path }] : [{ method: e.method, path }];
    }),
    /** Serves plain HTTP for tests; production listens through cli/transport.ts. */
    listen(options: { hostname: string; port: number }) {
      server = Bun.serve({ ...options, fetch: (request, s) => handle(request, s.requestIP(request)?.address ?? null) });
      return server;
    },
    get server() {
      return server;
    },
    async stop(closeActive = false) {
      await server?.stop(closeActive);
      server = null;
    },
  };
}

export type App = ReturnType<typeof createApp>;
