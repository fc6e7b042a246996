import type { Server } from "bun";
import { Elysia } from "elysia";
import { authenticateAdmin } from "../domain/admin/tokens";
import { visitorOf } from "../domain/releases/public-lanes";
import { authMacros } from "./auth";
import { VERSION } from "../version";
import { bearerToken } from "./bearer";
import { credentialOfPath } from "./endpoints/feed-credentials";
import type { AppServices } from "./deps";
import { API_PREFIX, fullPath, type Endpoint } from "./endpoint";
import { frontDoor } from "./front-door";
import { lifecycle, type Exchange } from "./lifecycle";
import { openApiDocument } from "./openapi";
import { refusals } from "./refusal";
import { routeIndex } from "./route-index";
import { sessionGate } from "./sessions";
import { isOnDemandPath, ON_DEMAND_PREFIXES, onDemandRouteTable, routeTable } from "./route-table";
import { hasValidHost, routedAsSplit, targetOf } from "./target";

export { API_PREFIX };

/**
 * keyturn's API: one Elysia instance with every declaration of the route table registered on it.
 * `handle` (also `fetch`) is what the production server, `listen` and the tests all call; it is
 * the instance's own `fetch`, told the socket's peer address (Elysia cannot know it outside listen).
 * `more`: declarations beyond the route table, registered the same way (tests of the contract).
 */
export function createApp(services: AppServices, more: readonly Endpoint[] = []) {
  // The document is made when first asked for, not at start: it is 0.8 MB of string (and more of
  // objects while it is made) that most processes never send (bench/README.md, "4a and 5a, third round").
  let openapi: string | undefined;
  const document = async () => {
    await onDemand();
    return (openapi ??= JSON.stringify(openApiDocument(services.variant, endpoints, VERSION)));
  };
  const served: Record<string, readonly Endpoint[]> = { ...routeTable(services, document), ...(more.length > 0 ? { more } : {}) };
  // Every declaration registered so far: the areas served from the start, then the on-demand ones.
  let endpoints: readonly Endpoint[] = Object.values(served).flat();
  let index = routeIndex(endpoints);
  const life = lifecycle({
    front: frontDoor(services),
    refuse: refusals(services),
    index: { find: (method, path) => index.find(method, path), answering: (path) => index.answering(path) },
    sighted: (principal, lane) => services.licensing.sighted(principal, lane),
    metrics: services.metrics,
  });
  const peerOf = services.peerAddress ?? (() => null);

  // What `handle` and a re-entry tell onRequest about a request, keyed by the Request itself: the
  // peer address (Elysia cannot know it outside listen), whether the Host was valid, the method sent.
  const handovers = new WeakMap<Request, Handover>();
  // Each request's exchange, from onRequest to its last hook.
  const exchanges = new WeakMap<Request, Exchange>();
  const exchangeOf = (request: Request) => exchanges.get(request)!;
  const auth = authMacros({
    sessions: sessionGate(services.consoleSessions, services.consoleOpenId !== null, services.origin),
    authenticate: (request, leaving) => services.licensing.authenticate(bearerToken(request), leaving),
    authenticateFeedCredential: (path) => services.feedCredentials.authenticate(credentialOfPath(path)),
    authenticateAdmin: (request) => authenticateAdmin(services.admin, bearerToken(request, "admin")),
    visitorOn: (product, channel, deviceHeader, query) => (services.publicLanes.has(product, channel) ? visitorOf(deviceHeader, query) : null),
    exchangeOf,
    finish: life.finish,
  });
  const refusal = ({ request, code, error }: { request: Request; code: string | number; error: unknown }) => {
    const exchange = exchanges.get(request);
    if (exchange) return life.refusal(exchange, code, error);
  };

  // One plugin per area, used after the global hooks so that they cover its routes.
  const plugins: { name: string; routes: string[] }[] = [];
  // Typed loosely: each area plugin carries the macro types of its own `use(auth)`.
  const register = (instance: { use(plugin: any): unknown }, areas: Record<string, readonly Endpoint[]>) => {
    for (const [area, declared] of Object.entries(areas)) {
      const plugin = new Elysia({ name: `keyturn:${area}`, ...CONFIG }).use(auth);
      for (const e of declared) {
        const path = fullPath(e).replace(/\{([^}]+)\}/g, ":$1");
        const { handler, hooks } = life.route(e, exchangeOf);
        plugin.route(e.method, path, handler, hooks);
      }
      instance.use(plugin);
      plugins.push({ name: plugin.config.name ?? area, routes: plugin.routes.map((r) => `${r.method} ${r.path}`) });
    }
  };

  // The on-demand areas (route-table.ts, ON_DEMAND_PREFIXES): on the first request under one of
  // their paths, their module is evaluated and their declarations join the index (before that
  // request is admitted, so it is charged to its own budget), and their plugins are registered on an
  // instance of their own, which the site's instance hands every request under those paths, with
  // its exchange, as it is.
  const onDemandInstance = () => new Elysia(CONFIG).onError(refusal);
  let onDemandElysia: ReturnType<typeof onDemandInstance> | null = null;
  let loading: Promise<ReturnType<typeof onDemandInstance>> | null = null;
  const onDemand = () =>
    (loading ??= onDemandRouteTable(services).then(
      (areas) => {
        endpoints = [...endpoints, ...Object.values(areas).flat()];
        index = routeIndex(endpoints);
        const instance = onDemandInstance();
        register(instance, areas);
        onDemandElysia = instance;
        return instance;
      },
      (e) => {
        // Tried again by the next request.
        loading = null;
        throw e;
      },
    ));

  const elysia = new Elysia(CONFIG)
    // Declared first so that it covers every route (Elysia's onError covers routes registered after it).
    .onError(refusal)
    .onRequest(async ({ request }): Promise<Response | undefined> => {
      const url = request.url;
      const target = targetOf(url);
      const handover = handovers.get(request);
      const peer = handover ? handover.peer : peerOf(request);
      const hostValid = handover ? handover.hostValid : hasValidHost(url);
      // Elysia takes the path from the first "/" at or after the URL's 11th character: a bare path
      // (no valid Host) or a 1–3 character Host would be routed to another path, so such a request
      // is routed again on keyturn's own split. Elysia's HEAD reads the whole GET answer: a HEAD is
      // routed as its GET, and the finish drops the body (keeping a file's Content-Length unread).
      const misrouted = !routedAsSplit(url);
      if (misrouted || request.method === "HEAD") {
        const head = request.method === "HEAD";
        const again = new Request(
          misrouted ? `http://localhost${target.path}${target.query ? `?${target.query}` : ""}` : url,
          head ? { method: "GET", headers: request.headers } : request,
        );
        handovers.set(again, { peer, hostValid, method: handover?.method ?? request.method });
        return routeAgain(again);
      }
      // No variable captured here: every request would pay for its closure's environment.
      const unloaded = isOnDemandPath(target.path)
        ? await onDemand().then(
            () => null,
            (e: unknown) => e ?? new Error("the on-demand areas did not load"),
          )
        : null;
      const exchange = life.begin(request, handover?.method ?? request.method, target, peer, hostValid);
      exchanges.set(request, exchange);
      // Answered by onError within its exchange (500, the spec's error body), never as a 404.
      if (unloaded) throw unloaded;
      return life.admit(exchange);
    });
  register(elysia, served);
  const onDemandRoute = async ({ request }: { request: Request }) => (await onDemand()).handle(request);
  for (const prefix of ON_DEMAND_PREFIXES) elysia.all(prefix, onDemandRoute).all(`${prefix}/*`, onDemandRoute);

  /** A re-entered request, through the same instance. */
  async function routeAgain(request: Request): Promise<Response> {
    return elysia.fetch(request);
  }

  /** Answers one request; `peer` is the socket's address (else services.peerAddress decides). */
  function handle(request: Request, peer?: string | null): Promise<Response> {
    if (peer !== undefined) handovers.set(request, { peer, hostValid: hasValidHost(request.url), method: request.method });
    return routeAgain(request);
  }
  let server: Server<undefined> | null = null;

  return {
    handle,
    fetch: (request: Request) => handle(request),
    /** The Elysia instance every request goes through. */
    elysia,
    /** The instance of the on-demand areas, once a request (or `allAreas`) has loaded them. */
    get onDemandElysia() {
      return onDemandElysia;
    },
    /** Loads the on-demand areas now, as their first request would. */
    async allAreas(): Promise<void> {
      await onDemand();
    },
    /** The auth macros every area plugin uses (auth.ts). */
    auth,
    /** The area plugins registered so far (name, and method and path of each route), in the order used. */
    plugins,
    /** Every declaration registered so far. */
    get endpoints() {
      return endpoints;
    },
    /** Method and full path of every route answered so far (GETs also answer HEAD). */
    get routes() {
      return endpoints.flatMap((e) => {
        const path = fullPath(e);
        return e.method === "GET"
          ? [
              { method: "GET", path },
              { method: "HEAD", path },
            ]
          : [{ method: e.method, path }];
      });
    },
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

/** The instance's and each area plugin's configuration. */
const CONFIG = {
  // One entry (fetch): listen's native routes would be a second way in.
  systemRouter: false,
  strictPath: true,
  // An unknown field is refused, never silently dropped.
  normalize: false,
} as const;

/** What onRequest is told of a request it cannot see for itself. */
interface Handover {
  readonly peer: string | null;
  readonly hostValid: boolean;
  /** The method as sent (a re-entered HEAD is a GET). */
  readonly method: string;
}

export type App = ReturnType<typeof createApp>;
