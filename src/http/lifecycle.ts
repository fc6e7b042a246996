import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { AuditAction } from "../domain/audit";
import { KeyturnError } from "../domain/errors";
import type { Principal } from "../domain/licensing";
import { actorOf, requireScope, type AdminCaller, type AdminPrincipal } from "../domain/admin/deps";
import { describeBodyError, queryReader, readJsonBody, type QueryReader } from "./body";
import { parseCookies } from "./cookies";
import type { Call, Endpoint } from "./endpoint";
import type { FrontDoor, RequestState } from "./front-door";
import type { Metrics } from "./metrics";
import type { Refusals } from "./refusal";
import type { Target } from "./target";

export interface LifecycleDeps {
  readonly front: FrontDoor;
  readonly refuse: Refusals;
  /** The bearer check of `auth: "entitlement"` endpoints; throws the entitlement_* refusal. */
  readonly authenticate: (request: Request) => Promise<Principal>;
  /** The bearer check of admin endpoints; throws admin_token_invalid. */
  readonly authenticateAdmin: (request: Request) => Promise<AdminPrincipal>;
  /** Told every answered request (metrics), when metrics are on. */
  readonly metrics?: Metrics;
}

/** What keyturn knows of one request on its way through Elysia's lifecycle (the context's `kt`). */
export interface Flight {
  /** The request as Elysia routes it (a HEAD is routed as its GET). */
  readonly request: Request;
  /** The method as sent (HEAD for a HEAD). */
  readonly method: string;
  readonly target: Target;
  readonly s: RequestState;
  /** False when the runtime could not make a URL from the Host header (RFC 9112 3.2: 400). */
  readonly hostValid: boolean;
  /** The endpoint Elysia routed the request to (unset for 404/405). */
  endpoint?: Endpoint;
  rateHeaders: Record<string, string> | null;
  principal: Principal;
  admin: AdminCaller;
  queryValues: Readonly<Record<string, string>>;
}

/** The context fields keyturn's hooks read (Elysia's context carries more). */
interface Ctx {
  readonly request: Request;
  readonly params: Record<string, string | null>;
  readonly body?: unknown;
  kt: Flight;
}

/** A request answered before its handler (rate limited): onError answers it as it is. */
class Answered {
  constructor(readonly response: Response) {}
}

const NO_PRINCIPAL = undefined as unknown as Principal;
const NO_ADMIN = undefined as unknown as AdminCaller;
const NO_QUERY: Readonly<Record<string, string>> = Object.freeze({});

/** A handler's Call; `cookies` are parsed only when a handler asks for them. */
class RouteCall implements Call {
  #cookies: Promise<Readonly<Record<string, string>>> | undefined;
  constructor(
    readonly request: Request,
    readonly params: Readonly<Record<string, string | null>>,
    readonly query: string,
    readonly queryValues: Readonly<Record<string, string>>,
    readonly body: unknown,
    readonly principal: Principal,
    readonly admin: AdminCaller,
    readonly context: { address: string | null },
  ) {}
  cookies(): Promise<Readonly<Record<string, string>>> {
    return (this.#cookies ??= parseCookies(this.request.headers.get("cookie")));
  }
}

/**
 * keyturn's hooks in Elysia's lifecycle, per endpoint: the front door (rate budget, URL limit, Host),
 * bearer and scope, precondition and query run first, in the route's `parse` hook when it takes a
 * body (Elysia validates the body after `parse`) and in `beforeHandle` otherwise; the handler gets
 * a Call; `mapResponse` and the global `onError` finish every answer (rate headers, HEAD, log
 * line, metrics). docs/architecture.md, "The way of a request", walks through it.
 */
export function lifecycle(deps: LifecycleDeps) {
  const { front, refuse } = deps;

  /** The front door and the checks every endpoint's declaration asks for, before any body is read. */
  const admitTo = (e: Endpoint, query: QueryReader | null) => async (f: Flight) => {
    f.endpoint = e;
    const admitted = await front.admit(f.s, e.budget, f.target);
    if (admitted.limited) throw new Answered(admitted.limited);
    f.rateHeaders = admitted.headers;
    if (!f.hostValid) throw badHost();
    if (e.auth === "entitlement") f.principal = await deps.authenticate(f.request);
    else if (typeof e.auth === "object") {
      const holder = await deps.authenticateAdmin(f.request);
      f.s.actor = actorOf(holder);
      requireScope(holder, e.auth.scope);
      f.admin = { principal: holder, address: f.s.address };
    }
    e.precondition?.();
    if (query) f.queryValues = query(f.target.query);
  };

  /** Rate headers, HEAD without its body, the log line and metrics: the end of every answer. */
  const finish = (f: Flight, response: Response): Response | Promise<Response> => {
    if (f.rateHeaders) for (const name in f.rateHeaders) response.headers.set(name, f.rateHeaders[name]!);
    if (f.method === "HEAD") return withoutBody(response).then((r) => logged(f, r));
    return logged(f, response);
  };

  const logged = (f: Flight, response: Response) => {
    front.logLine(f.method, f.target, f.s, response.status);
    deps.metrics?.observe(f.endpoint, response.status, f.s.code, (performance.now() - f.s.start) / 1000);
    return response;
  };

  return {
    /** The first hook (onRequest): the client address and the request's split target. */
    begin(request: Request, method: string, target: Target, peer: string | null, hostValid: boolean): Flight {
      return { request, method, target, s: front.begin(request, peer), hostValid, rateHeaders: null, principal: NO_PRINCIPAL, admin: NO_ADMIN, queryValues: NO_QUERY };
    },

    /**
     * The route-level hooks and handler of one endpoint. Its `mapResponse` finishes every answer of
     * the route, refusals included (Elysia passes onError's answer through it).
     */
    route(e: Endpoint) {
      const admit = admitTo(e, e.querySchema ? queryReader(e.querySchema) : null);
      // Elysia guesses from a hook's source whether to await it; this one is sync (a HEAD's answer,
      // a Promise, Elysia maps as one), so it is said in a hook container rather than guessed.
      const mapResponse = { fn: (c: { kt: Flight; responseValue: unknown }) => finish(c.kt, c.responseValue as Response), isAsync: false };
      if (e.body) {
        const body = e.body;
        return {
          hooks: {
            body,
            // Elysia's body validation runs after `parse`: the budget and bearer are checked here first.
            parse: async (c: Ctx) => {
              const f = c.kt;
              await admit(f);
              const value = await readJsonBody(f.request);
              // Elysia copies the parsed body into an object before validating: anything else is refused here.
              if (typeof value !== "object" || value === null || Array.isArray(value)) throw new KeyturnError("invalid_request", "The body must be a JSON object.");
              return value;
            },
            mapResponse,
          },
          handler: (c: Ctx) => {
            const f = c.kt;
            return e.handler(new RouteCall(f.request, c.params, f.target.query, f.queryValues, c.body, f.principal, f.admin, { address: f.s.address }));
          },
        };
      }
      return {
        hooks: { beforeHandle: (c: Ctx) => admit(c.kt), mapResponse },
        handler: (c: Ctx) => {
          const f = c.kt;
          return e.handler(new RouteCall(f.request, c.params, f.target.query, f.queryValues, undefined, f.principal, f.admin, { address: f.s.address }));
        },
      };
    },

    /**
     * The global onError: every refusal (thrown by a hook or a handler, Elysia's body validation,
     * a route Elysia did not find) becomes the spec's error body with its audit line and `ref`.
     */
    async refusal(f: Flight, code: unknown, error: unknown, unrouted: (method: string, path: string) => { error: KeyturnError; audit: AuditAction }) {
      // Elysia wraps what a `parse` hook throws in its ParseError.
      const cause0 = code === "PARSE" && error instanceof Error && error.cause !== undefined ? error.cause : error;
      // A routed request's answer is finished by its route's mapResponse, a 404/405 here.
      if (cause0 instanceof Answered) return f.endpoint ? cause0.response : finish(f, cause0.response);
      let audit: AuditAction = f.endpoint?.audit ?? "request";
      let cause = cause0;
      if (code === "NOT_FOUND" && !f.endpoint) {
        const admitted = await front.admit(f.s, "api", f.target).catch((e: unknown) => ({ refused: e }));
        if ("refused" in admitted) cause = admitted.refused;
        else if (admitted.limited) return finish(f, admitted.limited);
        else {
          f.rateHeaders = admitted.headers;
          if (!f.hostValid) cause = badHost();
          // keyturn is no proxy: a tunnel request is malformed here, whatever its target.
          else if (f.request.method === "CONNECT") cause = new KeyturnError("invalid_request", "CONNECT is not served here.");
          else {
            const miss = unrouted(f.method, f.target.path);
            audit = miss.audit;
            cause = miss.error;
          }
        }
      } else if (code === "VALIDATION" && f.endpoint?.body) {
        const value = (error as { value?: unknown }).value;
        cause = new KeyturnError("invalid_request", describeBodyError(checkOf(f.endpoint.body), value));
      }
      const response = await refuse(cause, audit, f.s);
      return f.endpoint ? response : finish(f, response);
    },
  };
}

function badHost(): KeyturnError {
  return new KeyturnError("invalid_request", "The Host header is missing or not a valid host.");
}

/** A body schema compiled for wording its refusal (Elysia's own validator decides; this only words it). */
const checks = new WeakMap<TSchema, ReturnType<typeof TypeCompiler.Compile>>();
function checkOf(schema: TSchema) {
  let check = checks.get(schema);
  if (!check) checks.set(schema, (check = TypeCompiler.Compile(schema)));
  return check;
}

/** HEAD: the GET's status and headers with the Content-Length of the body not sent. */
async function withoutBody(response: Response): Promise<Response> {
  const length = response.headers.get("content-length") ?? String(response.body ? (await response.arrayBuffer()).byteLength : 0);
  response.headers.set("content-length", length);
  return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
}

export type Lifecycle = ReturnType<typeof lifecycle>;
