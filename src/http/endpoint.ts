import type { Static, TSchema } from "@sinclair/typebox";
import type { AdminCaller, Scope } from "../domain/admin/deps";
import type { AuditAction, RequestContext } from "../domain/audit";
import type { Session } from "../domain/console-sessions";
import type { ErrorCode, KeyturnError } from "../domain/errors";
import type { Principal } from "../domain/licensing";
import type { Visitor } from "../domain/releases/public-lanes";

/** API endpoints are below this prefix; others (console, portal) declare their own `prefix`. */
export const API_PREFIX = "/api/v1";

/** Which rate budget a request counts against (see docs/architecture.md, "Budget"). */
export type Budget = "signin" | "api" | "admin" | "console";

/**
 * Who may call an endpoint, checked before the handler by the auth macro this picks (auth.ts):
 * anyone, the holder of an entitlement token, the holder of an admin token with the scope (`admin`
 * holds every scope), or a browser with a console or portal session (its forms carry the session's
 * CSRF token). Sessions are strings, so `typeof auth === "object"` means an admin scope.
 * `feed-credential`: a feed credential in the path (`/feeds/credential/{credential}/…`), for
 * updaters that cannot send the header; it stands for the installation as its token does.
 */
export type Auth = "none" | "entitlement" | "feed-credential" | SessionAuth | { readonly scope: Scope };
/** A console or portal session, required (`console-session`, `portal-session`) or read when present (`…-if-any`). */
export type SessionAuth = "console-session" | "portal-session" | "console-session-if-any" | "portal-session-if-any";

/** What a page endpoint (console, portal) answers instead of JSON when it refuses. */
export interface PageAnswers {
  /** Where the refusal page leads back to. */
  readonly back: string;
  /** A page of the endpoint's own for a refusal (a sign-in form shown again with its reason), else the refusal page. */
  readonly refused?: (error: KeyturnError) => Response | null;
}

/** The names of a path's `{param}` segments. */
type ParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? Name | ParamNames<Rest> : never;
/**
 * A path's parameters, typed from the path itself: `/licenses/{id}` gives `{ id: string }`. Each is
 * percent-decoded; one that is not valid percent-encoded UTF-8, or not among its `values`, is
 * refused (not_found) before the handler.
 */
export type ParamsOf<P extends string> = { readonly [Name in ParamNames<P>]: string };

/** A path or query parameter as documented; `values` are the only ones the endpoint answers (the lifecycle refuses others). */
export interface ParamDoc {
  readonly name: string;
  readonly description: string;
  readonly values?: readonly string[];
}

/** An answer beyond the endpoint's JSON success (files, 206, 304, 416). */
export interface ExtraAnswer {
  readonly description: string;
  readonly content?: Record<string, { schema: Record<string, unknown> }>;
  /** Headers the answer always carries. */
  readonly headers?: readonly string[];
}

/** What a handler is given: the request and what the dispatcher already established about it. */
export interface Call<B = unknown, P = object> {
  readonly request: Request;
  /** Path parameters, percent-decoded and within their declared values. */
  readonly params: P;
  /** The query string without `?` ("" when none). */
  readonly query: string;
  /** The JSON body checked against `body` (undefined when the endpoint takes none). */
  readonly body: B;
  /** The bearer's entitlement (for `auth: "entitlement"`, or the feed credential's for `feed-credential`); undefined when `visitor` is set. */
  readonly principal: Principal;
  /** On a public lane of an endpoint declared `publicLanes`, a request without a bearer: the visitor (else null). */
  readonly visitor: Visitor | null;
  /** The admin token's holder and the client's address (for an admin scope). */
  readonly admin: AdminCaller;
  /** The query string's parameters checked against `querySchema` (empty when the endpoint has none). */
  readonly queryValues: Readonly<Record<string, string>>;
  /** Who asked, for audit lines. */
  readonly context: RequestContext;
  /** The console or portal session (session auth; null when an `…-if-any` endpoint found none). */
  readonly session: Session | null;
  /** A page endpoint's POSTed form, checked to come from this site (and to carry the session's CSRF token). */
  readonly form: URLSearchParams;
  /** Names the lane this bearer request read, for the request's one sighting (adoption). */
  sightedOn(lane: string): void;
  /** The request's cookies by name, parsed by Elysia's cookie parser on first call (see cookies.ts for Set-Cookie). */
  cookies(): Promise<Readonly<Record<string, string>>>;
}

/**
 * One endpoint, declared once. Routing, HEAD, 405 with Allow, the bearer check, the rate budget,
 * the audit action of its refusals and the OpenAPI document are all derived from this.
 */
export interface Endpoint<S extends TSchema | undefined = TSchema | undefined, P extends string = string> {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Below `prefix`, with `{param}` segments. */
  readonly path: P;
  /**
   * The path's prefix: API_PREFIX unless said (the console's and portal's pages say ""). Only
   * endpoints below API_PREFIX are in the OpenAPI document.
   */
  readonly prefix?: string;
  readonly summary: string;
  readonly auth: Auth;
  /**
   * With `auth: "entitlement"` and `{product}`/`{channel}` in the path: on a public lane
   * (--public-lanes) a request without Authorization is answered to a visitor instead.
   */
  readonly publicLanes?: boolean;
  /**
   * With `auth: "entitlement"`: the installation gives its seat back, which a licence that has
   * expired since does not stop (a revoked one does): a seat is never held for good by a machine
   * whose licence ran out.
   */
  readonly leaving?: boolean;
  readonly budget: Budget;
  readonly audit: AuditAction;
  readonly params?: readonly ParamDoc[];
  readonly query?: readonly ParamDoc[];
  /** The query string as an object of strings (closed: an unknown parameter is refused). */
  readonly querySchema?: TSchema;
  readonly body?: S;
  /** A body that is not JSON, read by the handler itself as it arrives (an upload's bytes), for the OpenAPI document. */
  readonly rawBody?: { readonly type: string; readonly description: string };
  /** Checked after the bearer and before the body is read (a feature switched off answers first). */
  readonly precondition?: () => void;
  /** The JSON success answer; endpoints that serve files use `answers` instead. */
  readonly answer?: TSchema;
  /** The status of the JSON success answer (200 unless said). */
  readonly status?: 200 | 201;
  /** Request headers the endpoint reads, documented (e.g. Idempotency-Key). */
  readonly headers?: readonly (ParamDoc & { readonly schema: TSchema })[];
  readonly answers?: Readonly<Record<string, ExtraAnswer>>;
  /** Set for the console's and portal's pages: their refusals are pages, their POSTs forms. */
  readonly page?: PageAnswers;
  /** Refusals beyond those every endpoint can give (see ALWAYS_ERRORS in openapi.ts). */
  readonly errors: readonly ErrorCode[];
  readonly handler: (call: Call<S extends TSchema ? Static<S> : undefined, ParamsOf<P>>) => Promise<Response> | Response;
}

/** Declares an endpoint with its body type inferred from its schema and its parameters from its path. */
export function endpoint<S extends TSchema | undefined = undefined, const P extends string = string>(e: Endpoint<S, P>): Endpoint {
  return e as unknown as Endpoint;
}

/** The full path of an endpoint as routed (its prefix and its path). */
export function fullPath(e: Endpoint): string {
  return (e.prefix ?? API_PREFIX) + e.path;
}
