import type { AuditAction } from "../domain/audit";
import { KeyturnError } from "../domain/errors";
import type { Principal } from "../domain/licensing";
import type { Visitor } from "../domain/releases/public-lanes";
import type { AdminCaller } from "../domain/admin/deps";
import { checkOf, describeError } from "../domain/decode";
import type { Session } from "../domain/console-sessions";
import { macrosOf, NO_QUERY, type Authenticated } from "./auth";
import { parseCookies } from "./cookies";
import type { Call, Endpoint } from "./endpoint";
import type { FrontDoor } from "./front-door";
import type { Metrics } from "./metrics";
import type { Refusals } from "./refusal";
import { errorResponse } from "./respond";
import type { RouteIndex } from "./route-index";
import type { Target } from "./target";
import { refusalPage } from "./web";

export interface LifecycleDeps {
  readonly front: FrontDoor;
  readonly refuse: Refusals;
  /** keyturn's index of its own declarations: the endpoint (and so the budget) before routing, and 405's Allow. */
  readonly index: RouteIndex;
  /** Records the one sighting of a bearer request, with the lane its handler named (or null). */
  readonly sighted: (principal: Principal, lane: string | null) => void;
  /** Told every answered request (metrics), when metrics are on. */
  readonly metrics?: Metrics;
}

/** What keyturn knows of one request while Elysia answers it, from onRequest to the last hook. */
export interface Exchange extends Authenticated {
  /** The request as Elysia routes it (a HEAD is routed as its GET). */
  readonly request: Request;
  /** The method as sent (HEAD for a HEAD). */
  readonly method: string;
  /** False when the runtime could not make a URL from the Host header (RFC 9112 3.2: 400). */
  readonly hostValid: boolean;
  /** The endpoint that answers the request (unset when none does: 404/405). */
  endpoint?: Endpoint;
  rateHeaders: Record<string, string> | null;
  /** The lane a bearer request read (its manifest or feed), for its sighting. */
  lane: string | null;
  /** Set once the answer has its rate headers and its log line (an answer is finished once). */
  finished: boolean;
}

/** A route handler's context: the request, its path's parameters and what the macros resolved. */
interface RouteContext extends Resolved {
  readonly request: Request;
  readonly params: Record<string, string | null>;
}

/** What the auth macros' `resolve` hooks hand a route's handler (auth.ts); each is absent unless its macro ran. */
interface Resolved {
  readonly principal?: Principal;
  readonly visitor?: Visitor | null;
  readonly admin?: AdminCaller;
  readonly session?: Session | null;
  readonly form?: URLSearchParams;
  readonly queryValues?: Readonly<Record<string, string>>;
}

const NO_PRINCIPAL = undefined as unknown as Principal;
const NO_ADMIN = undefined as unknown as AdminCaller;
const NO_FORM = new URLSearchParams();

/** A handler's Call; `cookies` are parsed only when a handler asks for them. */
class RouteCall implements Call {
  #cookies: Promise<Readonly<Record<string, string>>> | undefined;
  readonly #exchange: Exchange;
  readonly request: Request;
  readonly query: string;
  readonly queryValues: Readonly<Record<string, string>>;
  readonly principal: Principal;
  readonly visitor: Visitor | null;
  readonly admin: AdminCaller;
  readonly context: { address: string | null };
  readonly session: Session | null;
  readonly form: URLSearchParams;
  constructor(
    exchange: Exchange,
    readonly params: Readonly<Record<string, string>>,
    readonly body: unknown,
    resolved: Resolved,
  ) {
    this.#exchange = exchange;
    this.request = exchange.request;
    this.query = exchange.target.query;
    this.queryValues = resolved.queryValues ?? NO_QUERY;
    this.principal = resolved.principal ?? NO_PRINCIPAL;
    this.visitor = resolved.visitor ?? null;
    this.admin = resolved.admin ?? NO_ADMIN;
    this.context = { address: exchange.state.address };
    this.session = resolved.session ?? null;
    this.form = resolved.form ?? NO_FORM;
  }
  cookies(): Promise<Readonly<Record<string, string>>> {
    return (this.#cookies ??= parseCookies(this.request.headers.get("cookie")));
  }
  readonly sightedOn = (lane: string): void => {
    this.#exchange.lane = lane;
  };
}

/**
 * keyturn's hooks in Elysia's lifecycle. `admit` (onRequest, before routing) finds the endpoint in
 * keyturn's own index and charges its budget, checks the URL size and the Host, and answers 404/405
 * itself; the macros the declaration picks (auth.ts) check the bearer and its scope or the session,
 * the form, the precondition and the query, and hand the handler what they found in a Call; the
 * route's `mapResponse` and the global `onError` finish every answer (rate headers, HEAD,
 * log line, metrics). docs/architecture.md, "The way of a request", walks through it.
 */
export function lifecycle(deps: LifecycleDeps) {
  const { front, refuse, index } = deps;

  /** Rate headers, HEAD without its body, the log line and metrics: the end of every answer, done once. */
  const finish = (exchange: Exchange, response: Response): Response | Promise<Response> => {
    if (exchange.finished) return response;
    exchange.finished = true;
    if (exchange.principal !== undefined) deps.sighted(exchange.principal, exchange.lane);
    const headers = exchange.rateHeaders;
    if (headers) for (const name in headers) response.headers.set(name, headers[name]!);
    if (exchange.method === "HEAD") return withoutBody(response).then((r) => logged(exchange, r));
    return logged(exchange, response);
  };

  const logged = (exchange: Exchange, response: Response) => {
    front.logLine(exchange.method, exchange.target, exchange.state, response.status);
    deps.metrics?.observe(exchange.endpoint, response.status, exchange.state.code, (performance.now() - exchange.state.start) / 1000);
    return response;
  };

  /** A refusal answered and finished before routing (the route's own hooks never run). */
  const refuseEarly = async (exchange: Exchange, error: KeyturnError, audit: AuditAction) =>
    finish(exchange, errorResponse(await refuse(error, audit, exchange.state)));

  return {
    finish,

    /** The request's exchange, made once in onRequest. */
    begin(request: Request, method: string, target: Target, peer: string | null, hostValid: boolean): Exchange {
      return {
        request,
        method,
        target,
        state: front.begin(request, peer),
        hostValid,
        rateHeaders: null,
        principal: undefined,
        admin: undefined,
        session: null,
        queryValues: NO_QUERY,
        lane: null,
        finished: false,
      };
    },

    /**
     * onRequest, before routing: the budget of the endpoint keyturn's index finds (a limited
     * request is answered here, before any body, record or audit line), the URL size, the Host,
     * and 404/405 for what no declaration answers. Undefined lets Elysia route the request.
     */
    async admit(exchange: Exchange): Promise<Response | undefined> {
      const e = index.find(exchange.method, exchange.target.path);
      exchange.endpoint = e;
      const admission = await front.admit(exchange.state, e?.budget ?? "api", exchange.target);
      if ("limited" in admission) return finish(exchange, admission.limited);
      exchange.rateHeaders = admission.headers;
      const audit = e?.audit ?? "request";
      if (admission.refused) return refuseEarly(exchange, admission.refused, audit);
      if (!exchange.hostValid) return refuseEarly(exchange, badHost(), audit);
      if (e) return undefined;
      // keyturn is no proxy: a tunnel request is malformed here, whatever its target.
      if (exchange.request.method === "CONNECT") return refuseEarly(exchange, new KeyturnError("invalid_request", "CONNECT is not served here."), audit);
      const answering = index.answering(exchange.target.path);
      if (answering.length === 0) return refuseEarly(exchange, new KeyturnError("not_found", "There is nothing at this address."), audit);
      const allow = answering.flatMap((a) => (a.method === "GET" ? ["GET", "HEAD"] : [a.method]));
      const error = new KeyturnError("method_not_allowed", `${exchange.method} is not allowed here; use ${allow.join(" or ")}.`);
      error.headers = { allow: allow.join(", ") };
      return refuseEarly(exchange, error, answering[0]!.audit);
    },

    /**
     * The route-level hooks and handler of one endpoint. Its `mapResponse` finishes every answer of
     * the route, refusals included (Elysia passes onError's answer through it).
     */
    route(e: Endpoint, exchangeOf: (request: Request) => Exchange) {
      // Elysia reads from a handler's source which parts of the request it uses ("sucrose"): only a
      // route that takes a JSON body names `body`, so a form's body is left for the handler to read.
      // The rest of what the handler is given comes from the auth macros' `resolve` (auth.ts).
      const admitted = admittedParams(e);
      const handler = ({ request, params, principal, visitor, admin, session, form, queryValues }: RouteContext) =>
        e.handler(new RouteCall(exchangeOf(request), admitted(params), undefined, { principal, visitor, admin, session, form, queryValues }));
      const bodyHandler = ({ request, params, body, principal, admin, session, form, queryValues }: RouteContext & { body: unknown }) =>
        e.handler(new RouteCall(exchangeOf(request), admitted(params), body, { principal, admin, session, form, queryValues }));
      // Elysia guesses from a hook's source text whether to await it (a `return f(…)` or `=> f(…)`
      // reads as async): this one is sync (a HEAD's answer, a Promise, Elysia maps as one), so its
      // source returns a plain name. test/http/elysia-app.test.ts holds that it is not awaited.
      function mapResponse({ request, responseValue }: { request: Request; responseValue: unknown }) {
        const finished = finish(exchangeOf(request), responseValue as Response);
        return finished;
      }
      // The declaration picks its macros (auth, CSRF, precondition and query, JSON reader), in order.
      const hooks = { ...macrosOf(e), mapResponse };
      if (!e.body) return { handler, hooks };
      return { handler: bodyHandler, hooks: { ...hooks, body: e.body } };
    },

    /**
     * The global onError: every refusal (thrown by a hook or a handler, Elysia's body validation,
     * a path Elysia did not route) is audited once and answered as the spec's error body with its
     * `ref`, or, for a page endpoint, as its page.
     */
    async refusal(exchange: Exchange, code: unknown, error: unknown): Promise<Response> {
      // Elysia wraps what a `parse` hook throws in its ParseError.
      let cause = code === "PARSE" && error instanceof Error && error.cause !== undefined ? error.cause : error;
      const e = exchange.endpoint;
      if (code === "NOT_FOUND") cause = new KeyturnError("not_found", "There is nothing at this address.");
      else if (code === "VALIDATION" && e?.body)
        cause = new KeyturnError("invalid_request", describeError(checkOf(e.body), (error as { value?: unknown }).value));
      const refused = await refuse(cause, e?.audit ?? "request", exchange.state, !e?.page);
      const response = e?.page ? (e.page.refused?.(refused) ?? refusalPage(refused, e.page.back)) : errorResponse(refused);
      // A routed request's answer is finished by its route's mapResponse; finishing is done once.
      return code === "NOT_FOUND" ? finish(exchange, response) : response;
    },
  };
}

/**
 * The path's parameters as the handler may trust them: a parameter that is not valid percent-encoded
 * UTF-8 (Elysia gives null) or is not among its declared `values` is nothing at this address.
 */
function admittedParams(e: Endpoint) {
  const closed = (e.params ?? []).filter((p) => p.values !== undefined);
  return (params: Record<string, string | null>): Readonly<Record<string, string>> => {
    for (const name in params) if (params[name] === null) throw nothingHere();
    for (const p of closed) if (!p.values!.includes(params[p.name] ?? "")) throw nothingHere();
    return params as Readonly<Record<string, string>>;
  };
}

function nothingHere(): KeyturnError {
  return new KeyturnError("not_found", "There is nothing at this address.");
}

function badHost(): KeyturnError {
  return new KeyturnError("invalid_request", "The Host header is missing or not a valid host.");
}

/** HEAD: the GET's status and headers with the Content-Length of the body not sent. */
async function withoutBody(response: Response): Promise<Response> {
  const length = response.headers.get("content-length") ?? String(response.body ? (await response.arrayBuffer()).byteLength : 0);
  response.headers.set("content-length", length);
  return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
}

export type Lifecycle = ReturnType<typeof lifecycle>;
