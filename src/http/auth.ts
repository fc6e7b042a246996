import { Elysia, status } from "elysia";
import { actorOf, requireScope, type AdminCaller, type AdminPrincipal, type Scope } from "../domain/admin/deps";
import type { Principal } from "../domain/licensing";
import type { Visitor } from "../domain/releases/public-lanes";
import type { Session } from "../domain/console-sessions";
import { actorOfSession } from "../console/deps";
import { queryReader, readJsonBody } from "./body";
import { KeyturnError } from "../domain/errors";
import { fullPath, type Auth, type Endpoint } from "./endpoint";
import type { SessionGate } from "./sessions";
import { readForm } from "./web";
import type { RequestState } from "./front-door";
import type { Target } from "./target";

/**
 * Where a route's checks run. Elysia reads a body before validation and before any `resolve`; only
 * `parse` runs earlier, and only on a route that takes a body. So on a JSON body route the bearer,
 * its scope and the precondition are checked in `parse` ("before-body") and `resolve` hands back what
 * was found; on other routes `resolve` checks ("before-handler"). A `parse` hook on a route without a
 * body would make Elysia read that body, so the place is part of the macro's value.
 */
export type Checkpoint = "before-body" | "before-handler";

/** What the auth macros keep of one request between their hooks (the exchange of lifecycle.ts). */
export interface Authenticated {
  readonly request: Request;
  readonly method: string;
  readonly target: Target;
  readonly state: RequestState;
  principal: Principal | undefined;
  admin: AdminCaller | undefined;
  session: Session | null;
  queryValues: Readonly<Record<string, string>>;
}

export interface AuthDeps<X extends Authenticated> {
  /** The bearer check of entitlement routes; throws the entitlement_* refusal. `leaving`: Endpoint.leaving. */
  readonly authenticate: (request: Request, leaving: boolean) => Promise<Principal>;
  /** A public lane's visitor (product null in gamma), or null when the lane is not public; throws invalid_request for a bad device hash. */
  readonly visitorOn: (product: string | null, channel: string, deviceHeader: string | null, query: string) => Visitor | null;
  /** The check of a feed credential in the path (feed-credential.ts); throws the entitlement_* refusal. */
  readonly authenticateFeedCredential: (path: string) => Promise<Principal>;
  /** The bearer check of admin routes; throws admin_token_invalid. */
  readonly authenticateAdmin: (request: Request) => Promise<AdminPrincipal>;
  /** The console's and portal's session check. */
  readonly sessions: SessionGate;
  /** The request's exchange, made in onRequest. */
  readonly exchangeOf: (request: Request) => X;
  /** Finishes an answer given before the handler (rate headers, HEAD, log line), once. */
  readonly finish: (exchange: X, response: Response) => Response | Promise<Response>;
}

/** The query values of a route that declares none. */
export const NO_QUERY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * keyturn's authentication as Elysia macros, used by every area plugin; a route names one by its key
 * (`entitlement`, `adminScope`, `consoleSession`, `portalSession`), then `csrf` for a page's form,
 * `admitted` for its precondition and query, and `jsonBody` for its JSON body, in that order (Elysia
 * applies macros in the order of the route's keys). Each `resolve` hands the handler what it found:
 * `principal`, `admin`, `session`, `form`, `queryValues`. Hooks read the request inline: Elysia infers
 * from their source which parts of a request every route parses (test/http/elysia-app.test.ts).
 */
export function authMacros<X extends Authenticated>(deps: AuthDeps<X>) {
  const { exchangeOf, sessions } = deps;

  const entitle = async (exchange: Authenticated, leaving = false): Promise<Principal> =>
    (exchange.principal ??= await deps.authenticate(exchange.request, leaving));
  const entitlement = (leaving: boolean) => (at: Checkpoint) =>
    at === "before-body"
      ? {
          async parse({ request }: { request: Request }) {
            await entitle(exchangeOf(request), leaving);
          },
          resolve: ({ request }: { request: Request }) => ({ principal: exchangeOf(request).principal! }),
        }
      : { resolve: async ({ request }: { request: Request }) => ({ principal: await entitle(exchangeOf(request), leaving) }) };

  const admit = async (exchange: Authenticated, scope: Scope): Promise<AdminCaller> => {
    if (exchange.admin) return exchange.admin;
    const holder = await deps.authenticateAdmin(exchange.request);
    exchange.state.actor = actorOf(holder);
    requireScope(holder, scope);
    return (exchange.admin = { principal: holder, address: exchange.state.address });
  };

  /** A page's session; a browser without one where one is required is answered the sign-in, finished here. */
  const sessionMacro = (kind: "console" | "portal") => (required: boolean) => ({
    async resolve({ request }: { request: Request }) {
      const exchange = exchangeOf(request);
      const session = await sessions.find(request, kind);
      if (session === null && required) {
        // A `status` from `resolve` ends the request and skips the route's mapResponse: finished here.
        const signedOut = await deps.finish(exchange, sessions.signedOut(kind, exchange.method));
        return status(signedOut.status, signedOut);
      }
      if (session !== null) exchange.state.actor = actorOfSession(session);
      exchange.session = session;
      return { session };
    },
  });

  return new Elysia({ name: "keyturn:auth" }).macro({
    entitlement: entitlement(false),
    /** The bearer of an installation giving its seat back (Endpoint.leaving). */
    entitlementLeaving: entitlement(true),

    /**
     * An endpoint of public lanes (GET, no body): without Authorization on a public lane, the
     * visitor; else the bearer as `entitlement`. `lane` gives the path segments of product and channel.
     */
    entitlementOrVisitor: (lane: { product: number | null; channel: number }) => ({
      async resolve({ request }: { request: Request }) {
        const exchange = exchangeOf(request);
        if (!request.headers.has("authorization")) {
          const parts = exchange.target.path.split("/");
          const product = lane.product === null ? null : (parts[lane.product] ?? "");
          const visitor = deps.visitorOn(product, parts[lane.channel] ?? "", request.headers.get("keyturn-device"), exchange.target.query);
          if (visitor !== null) return { principal: undefined, visitor };
        }
        return { principal: await entitle(exchange), visitor: null };
      },
    }),
    /** A feed credential in the path stands for the installation as its bearer token does (feed routes take no body). */
    feedCredential: {
      async resolve({ request }: { request: Request }) {
        const exchange = exchangeOf(request);
        return { principal: (exchange.principal ??= await deps.authenticateFeedCredential(exchange.target.path)) };
      },
    },

    adminScope: ({ scope, at }: { scope: Scope; at: Checkpoint }) =>
      at === "before-body"
        ? {
            async parse({ request }: { request: Request }) {
              await admit(exchangeOf(request), scope);
            },
            resolve: ({ request }: { request: Request }) => ({ admin: exchangeOf(request).admin! }),
          }
        : { resolve: async ({ request }: { request: Request }) => ({ admin: await admit(exchangeOf(request), scope) }) },

    consoleSession: sessionMacro("console"),
    portalSession: sessionMacro("portal"),

    /** A page's POSTed form: sent from this site's pages, carrying the session's CSRF token. */
    csrf: {
      async resolve({ request }: { request: Request }) {
        return { form: await readForm(sessions.site, request, exchangeOf(request).session) };
      },
    },

    /** The declaration's precondition (a feature switched off answers first) and its query, after auth. */
    admitted: ({ e, at }: { e: Endpoint; at: Checkpoint }) => {
      const query = e.querySchema ? queryReader(e.querySchema) : null;
      const check = (exchange: Authenticated) => {
        e.precondition?.();
        return query ? query(exchange.target.query) : NO_QUERY;
      };
      if (at === "before-handler") return { resolve: ({ request }: { request: Request }) => ({ queryValues: check(exchangeOf(request)) }) };
      return {
        parse({ request }: { request: Request }) {
          const exchange = exchangeOf(request);
          exchange.queryValues = check(exchange);
        },
        resolve: ({ request }: { request: Request }) => ({ queryValues: exchangeOf(request).queryValues }),
      };
    },

    /** The JSON reader of a body route, after every check above (no route declares its own `parse`). */
    jsonBody: {
      async parse({ request }: { request: Request }) {
        const value = await readJsonBody(request);
        // Elysia copies the parsed body into an object before validating: anything else is refused here.
        if (typeof value !== "object" || value === null || Array.isArray(value)) throw new KeyturnError("invalid_request", "The body must be a JSON object.");
        return value;
      },
    },
  });
}

/** Where `{product}` (null when the path has none) and `{channel}` stand among a declaration's path segments. */
function laneSegments(e: Endpoint): { product: number | null; channel: number } {
  const parts = fullPath(e).split("/");
  const product = parts.indexOf("{product}");
  const channel = parts.indexOf("{channel}");
  if (channel < 0 || e.body) throw new Error(`${fullPath(e)}: publicLanes needs a {channel} segment and no body.`);
  return { product: product < 0 ? null : product, channel };
}

/** The macro keys, in order, that a declaration's `auth`, page and body select for its route. */
export function macrosOf(e: Endpoint) {
  const at: Checkpoint = e.body ? "before-body" : "before-handler";
  const auth: Auth = e.auth;
  return {
    ...(auth === "entitlement"
      ? e.publicLanes
        ? { entitlementOrVisitor: laneSegments(e) }
        : e.leaving
          ? { entitlementLeaving: at }
          : { entitlement: at }
      : {}),
    ...(auth === "feed-credential" ? { feedCredential: true } : {}),
    ...(typeof auth === "object" ? { adminScope: { scope: auth.scope, at } } : {}),
    ...(auth === "console-session" || auth === "console-session-if-any" ? { consoleSession: auth === "console-session" } : {}),
    ...(auth === "portal-session" || auth === "portal-session-if-any" ? { portalSession: auth === "portal-session" } : {}),
    ...(e.page && e.method === "POST" ? { csrf: true } : {}),
    ...(e.precondition || e.querySchema ? { admitted: { e, at } } : {}),
    ...(e.body ? { jsonBody: true } : {}),
  };
}
