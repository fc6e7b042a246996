import { Memoirist } from "memoirist";
import type { AuditAction } from "../domain/audit";
import { KeyturnError } from "../domain/errors";
import type { Principal } from "../domain/licensing";
import { actorOf, requireScope, type AdminCaller, type AdminPrincipal } from "../domain/admin/deps";
import { jsonBody, queryReader, type BodyReader, type QueryReader } from "./body";
import type { Endpoint } from "./endpoint";
import type { FrontDoor, RequestState } from "./front-door";
import type { Metrics } from "./metrics";
import type { Refusals } from "./refusal";
import { hasValidHost, targetOf } from "./target";

interface DispatchDeps {
  readonly prefix: string;
  readonly endpoints: readonly Endpoint[];
  readonly front: FrontDoor;
  readonly refuse: Refusals;
  /** The bearer check of `auth: "entitlement"` endpoints; throws the entitlement_* refusal. */
  readonly authenticate: (request: Request) => Promise<Principal>;
  /** The bearer check of admin endpoints; throws admin_token_invalid. */
  readonly authenticateAdmin: (request: Request) => Promise<AdminPrincipal>;
  /** Told every answered request (metrics), when metrics are on. */
  readonly metrics?: Metrics;
}

/** An endpoint made ready to answer: its body reader and query check compiled. */
interface Route {
  readonly endpoint: Endpoint;
  readonly body: BodyReader<unknown> | null;
  readonly query: QueryReader | null;
}

const METHODS = ["GET", "POST", "PATCH", "DELETE"] as const;
const NO_PRINCIPAL = undefined as unknown as Principal;
const NO_ADMIN = undefined as unknown as AdminCaller;
const NO_QUERY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The one dispatcher: production, `app.handle`, `app.fetch` and every test send requests here.
 * Each request's URL is split once (targetOf); that one result routes it (Elysia's router,
 * memoirist), chooses its rate budget and its audit action, and names it in the log line.
 * Elysia's per-request context and answer mapping are not used: they cost more than keyturn's own
 * work on an update file (bench/README.md, "One dispatcher").
 */
export function dispatcher(deps: DispatchDeps) {
  const router = new Memoirist<Route>();
  for (const endpoint of deps.endpoints) {
    const route: Route = {
      endpoint,
      body: endpoint.body ? jsonBody(endpoint.body) : null,
      query: endpoint.querySchema ? queryReader(endpoint.querySchema) : null,
    };
    const path = deps.prefix + endpoint.path.replace(/\{([^}]+)\}/g, ":$1");
    router.add(endpoint.method, path, route);
    if (endpoint.method === "GET") router.add("HEAD", path, route);
  }

  /** 405 (with Allow, filed under the path's endpoint) when the path is answered under other methods, else 404. */
  const unrouted = (method: string, path: string): { error: KeyturnError; audit: AuditAction } => {
    const answered = METHODS.map((m) => router.find(m, path)?.store).filter((r) => r !== undefined);
    if (answered.length === 0) return { error: new KeyturnError("not_found", "There is nothing at this address."), audit: "request" };
    const allow = answered.flatMap((r) => (r.endpoint.method === "GET" ? ["GET", "HEAD"] : [r.endpoint.method]));
    const error = new KeyturnError("method_not_allowed", `${method} is not allowed here; use ${allow.join(" or ")}.`);
    error.headers = { allow: allow.join(", ") };
    return { error, audit: answered[0]!.endpoint.audit };
  };

  const run = async (route: Route, request: Request, raw: Record<string, string>, query: string, s: RequestState) => {
    const e = route.endpoint;
    const principal = e.auth === "entitlement" ? await deps.authenticate(request) : NO_PRINCIPAL;
    let admin = NO_ADMIN;
    if (typeof e.auth === "object") {
      const holder = await deps.authenticateAdmin(request);
      s.actor = actorOf(holder);
      requireScope(holder, e.auth.scope);
      admin = { principal: holder, address: s.address };
    }
    e.precondition?.();
    const queryValues = route.query ? route.query(query) : NO_QUERY;
    const body = route.body ? await route.body.read(request) : undefined;
    return e.handler({ request, params: decodeParams(raw), query, queryValues, body, principal, admin, context: { address: s.address } });
  };

  return async (request: Request, peer: string | null): Promise<Response> => {
    const target = targetOf(request.url);
    const s = deps.front.begin(request, peer);
    const found = router.find(request.method, target.path);
    const route = found?.store;
    let response: Response;
    let rateHeaders: Record<string, string> | null = null;
    let audit: AuditAction = route?.endpoint.audit ?? "request";
    try {
      const admitted = await deps.front.admit(s, route?.endpoint.budget ?? "api", target);
      if (admitted.limited) response = admitted.limited;
      else {
        rateHeaders = admitted.headers;
        // RFC 9112 3.2: a request with a missing, empty or invalid Host is answered 400.
        if (!hasValidHost(request.url)) throw new KeyturnError("invalid_request", "The Host header is missing or not a valid host.");
        // keyturn is no proxy: a tunnel request is malformed here, whatever its target.
        if (request.method === "CONNECT") throw new KeyturnError("invalid_request", "CONNECT is not served here.");
        if (!route) {
          const miss = unrouted(request.method, target.path);
          audit = miss.audit;
          throw miss.error;
        }
        response = await run(route, request, found!.params, target.query, s);
      }
    } catch (e) {
      response = await deps.refuse(e, audit, s);
    }
    if (rateHeaders) for (const name in rateHeaders) response.headers.set(name, rateHeaders[name]!);
    if (request.method === "HEAD") response = await withoutBody(response);
    deps.front.logLine(request, target, s, response.status);
    deps.metrics?.observe(route?.endpoint, response.status, s.code, (performance.now() - s.start) / 1000);
    return response;
  };
}

/** Percent-decoded parameters; null for one that is not valid percent-encoded UTF-8. */
function decodeParams(raw: Record<string, string>): Record<string, string | null> {
  for (const name in raw) {
    if (!raw[name]!.includes("%")) continue;
    const out: Record<string, string | null> = {};
    for (const n in raw) out[n] = safeDecode(raw[n]!);
    return out;
  }
  return raw;
}

function safeDecode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** HEAD: the GET's status and headers with the Content-Length of the body not sent. */
async function withoutBody(response: Response): Promise<Response> {
  const length = response.headers.get("content-length") ?? String(response.body ? (await response.arrayBuffer()).byteLength : 0);
  response.headers.set("content-length", length);
  return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
}
