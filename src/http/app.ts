import type { Server } from "bun";
import { Elysia } from "elysia";
import { authenticateAdmin } from "../domain/admin/tokens";
import { KeyturnError } from "../domain/errors";
import type { AuditAction } from "../domain/audit";
import { VERSION } from "../version";
import { bearerToken } from "./bearer";
import type { AppServices } from "./deps";
import { API_PREFIX, fullPath, type Endpoint } from "./endpoint";
import { frontDoor } from "./front-door";
import { lifecycle, type Flight } from "./lifecycle";
import { openApiDocument } from "./openapi";
import { refusals } from "./refusal";
import { routeTable } from "./route-table";
import { hasValidHost, targetOf } from "./target";

export { API_PREFIX };

const METHODS = ["GET", "POST", "PATCH", "DELETE"] as const;

/**
 * keyturn's API: one Elysia instance with every declaration of the route table registered on it.
 * `handle` (also `fetch`) is what the production server, `listen` and the tests all call; it is
 * the instance's own `fetch`, told the socket's peer address (Elysia cannot know it outside listen).
 * `more`: declarations beyond the route table, registered the same way (tests of the contract).
 */
export function createApp(services: AppServices, more: readonly Endpoint[] = []) {
  let openapi = "";
  const endpoints = [...routeTable(services, () => openapi), ...more];
  openapi = JSON.stringify(openApiDocument(services.variant, endpoints, VERSION));
  const life = lifecycle({
    front: frontDoor(services),
    refuse: refusals(services),
    authenticate: (request) => services.licensing.authenticate(bearerToken(request)),
    authenticateAdmin: (request) => authenticateAdmin(services.admin, bearerToken(request, "admin")),
    metrics: services.metrics,
  });
  const peerOf = services.peerAddress ?? (() => null);

  // Handed from `handle` to onRequest, which Elysia's fetch calls synchronously before anything
  // else: the peer address and whether the runtime's URL had a valid Host.
  let handedPeer: string | null | undefined;
  let handedBadHost = false;
  let handedHead = false;

  const elysia = new Elysia({
    // One entry (fetch): listen's native routes would be a second way in.
    systemRouter: false,
    strictPath: true,
    // An unknown field is refused, never silently dropped.
    normalize: false,
  })
    // A hook container saying the hook is sync: Elysia guesses from the source (a `return f(…)`
    // reads as async) and would await it on every request.
    .onRequest({ isAsync: false, fn: (c: { request: Request }) => {
      const request = c.request;
      const url = request.url;
      const target = targetOf(url);
      const peer = handedPeer === undefined ? peerOf(request) : handedPeer;
      const badHost = handedBadHost || !hasValidHost(url);
      const method = handedHead ? "HEAD" : request.method;
      handedPeer = undefined;
      handedBadHost = false;
      handedHead = false;
      // Elysia finds the path from the 11th character of the URL: a bare path (no valid Host) or a
      // 1–3 character Host would misroute; such a request is routed again by keyturn's split.
      // Elysia's HEAD reads the whole GET answer: a HEAD is routed as its GET, and keyturn's finish
      // drops the body (keeping the file's Content-Length without reading it).
      const misrouted = target.path !== (c as unknown as { path: string }).path;
      if (misrouted || request.method === "HEAD") return redo(request, target, misrouted, peer, badHost);
      (c as unknown as { kt: Flight }).kt = life.begin(request, method, target, peer, !badHost);
    } } as never)
    .onError((c) => {
      const f = (c as unknown as { kt?: Flight }).kt;
      if (!f) return;
      return life.refusal(f, c.code, c.error, unrouted);
    });

  for (const e of endpoints) {
    const path = fullPath(e).replace(/\{([^}]+)\}/g, ":$1");
    const { handler, hooks } = life.route(e);
    elysia.route(e.method, path, handler as never, { ...hooks, config: { endpoint: e } } as never);
  }
  const endpointAt = endpointFinder(elysia, endpoints);

  /** 405 (with Allow, filed under the path's endpoint) when the path is answered under other methods, else 404. */
  function unrouted(method: string, path: string): { error: KeyturnError; audit: AuditAction } {
    const answered = METHODS.map((m) => endpointAt(m, path)).filter((e) => e !== undefined);
    if (answered.length === 0) return { error: new KeyturnError("not_found", "There is nothing at this address."), audit: "request" };
    const allow = answered.flatMap((e) => (e.method === "GET" ? ["GET", "HEAD"] : [e.method]));
    const error = new KeyturnError("method_not_allowed", `${method} is not allowed here; use ${allow.join(" or ")}.`);
    error.headers = { allow: allow.join(", ") };
    return { error, audit: answered[0]!.audit };
  }

  /** Routes a request again: a HEAD as its GET, a misrouted URL on keyturn's own split of it. */
  function redo(request: Request, target: { path: string; query: string }, misrouted: boolean, peer: string | null, badHost: boolean) {
    const head = request.method === "HEAD";
    const url = misrouted ? `http://localhost${target.path}${target.query ? `?${target.query}` : ""}` : request.url;
    const again = new Request(url, head ? { method: "GET", headers: request.headers } : request);
    return handle(again, peer, badHost, head);
  }

  /** Answers one request; `peer` is the socket's address (else services.peerAddress decides). */
  function handle(request: Request, peer?: string | null, badHost = false, head = false): Promise<Response> {
    handedPeer = peer;
    handedBadHost = badHost;
    handedHead = head;
    return elysia.fetch(request) as Promise<Response>;
  }
  let server: Server<undefined> | null = null;

  return {
    handle: (request: Request, peer?: string | null) => handle(request, peer),
    fetch: (request: Request) => handle(request),
    /** The Elysia instance every request goes through. */
    elysia,
    endpoints,
    /** Method and full path of every route answered (GETs also answer HEAD). */
    routes: endpoints.flatMap((e) => {
      const path = fullPath(e);
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

/**
 * The endpoint Elysia routes a method and path to, for 405's Allow: static paths from Elysia's
 * static table, parameterised ones from its router (each route's store found once at start).
 */
function endpointFinder(elysia: { router: unknown }, endpoints: readonly Endpoint[]) {
  const router = elysia.router as unknown as {
    static: Record<string, Record<string, number>>;
    history: { hooks: { config?: { endpoint?: Endpoint } } }[];
    http: { find(method: string, path: string): { store: object } | null };
  };
  const byStore = new Map<object, Endpoint>();
  let dynamic = 0;
  for (const e of endpoints) {
    const path = fullPath(e);
    if (!path.includes("{")) continue;
    dynamic++;
    const sample = path.replace(/\{[^}]+\}/g, "x");
    const found = router.http.find(e.method, sample);
    if (found) byStore.set(found.store, e);
  }
  if (byStore.size !== dynamic) throw new Error("Two parameterised routes of the route table share a sample path.");
  return (method: string, path: string): Endpoint | undefined => {
    const index = router.static[path]?.[method];
    if (index !== undefined) return router.history[index]!.hooks.config?.endpoint;
    const found = router.http.find(method, path);
    return found ? byStore.get(found.store) : undefined;
  };
}

export type App = ReturnType<typeof createApp>;
