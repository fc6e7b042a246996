import type { Logger } from "../config/log";
import { KeyturnError } from "../domain/errors";
import { clientAddressResolver } from "./client-address";
import { addressGroup, formatIp } from "./ip";
import { budgetOf, type RateLimiter } from "./rate-limit";
import { errorResponse } from "./respond";

/** Path and query longer than this are refused (400) before any other work. */
export const MAX_URL_BYTES = 8 * 1024;
/** Paths in log lines are cut here, so a hostile path cannot make a log line huge. */
const MAX_LOGGED_PATH = 512;
/** Client addresses remembered in their parsed forms; the memory is dropped whole when full. */
const MAX_REMEMBERED_CLIENTS = 10_000;

interface RequestState {
  readonly start: number;
  readonly address: string | null;
  readonly group: string;
  status?: number;
  ref?: string;
  logged?: boolean;
}

interface FrontDoorDeps {
  readonly apiPrefix: string;
  readonly trustProxy: readonly string[];
  readonly peerAddress: (request: Request) => string | null;
  readonly rateLimiter: RateLimiter;
  readonly log: Logger;
}

/**
 * What every request meets first: its client address (after trusted proxies), the rate limit, the
 * URL size limit, and at the end one log line. A limited request is answered here, before any
 * route, body or audit work, so refusals cannot be written faster than the budget allows.
 */
export function frontDoor(d: FrontDoorDeps) {
  const states = new WeakMap<Request, RequestState>();
  const resolve = clientAddressResolver(d.trustProxy);

  // A client sends many requests from one peer address: its parsed and formatted forms are kept.
  const clients = new Map<string, { address: string | null; group: string }>();
  const clientOf = (peer: string | null, forwardedFor: string | null) => {
    const key = forwardedFor === null ? `${peer}` : `${peer}|${forwardedFor}`;
    let c = clients.get(key);
    if (!c) {
      const ip = resolve(peer, forwardedFor);
      c = { address: ip ? formatIp(ip) : null, group: ip ? addressGroup(ip) : "unknown" };
      if (clients.size >= MAX_REMEMBERED_CLIENTS) clients.clear();
      clients.set(key, c);
    }
    return c;
  };

  const newState = (request: Request): RequestState => {
    // Without trusted proxies X-Forwarded-For is never believed, so it is not even read.
    const c = clientOf(d.peerAddress(request), d.trustProxy.length === 0 ? null : request.headers.get("x-forwarded-for"));
    return { start: performance.now(), address: c.address, group: c.group };
  };

  const stateOf = (request: Request): RequestState => {
    let s = states.get(request);
    if (!s) states.set(request, (s = newState(request)));
    return s;
  };

  /** The path and query of a request's URL (already normalised by the runtime), without parsing it again. */
  const pathAndQuery = (url: string) => {
    const start = url.indexOf("/", url.indexOf("//") + 2);
    const hash = url.indexOf("#", start);
    return url.slice(start, hash < 0 ? undefined : hash);
  };

  /**
   * The rate limit, then the URL size limit. Answers a limited request (429) itself; throws the
   * URL-size refusal; otherwise gives the RateLimit headers every answer carries.
   */
  const admit = async (request: Request, s = stateOf(request)): Promise<{ limited: Response | null; headers: Record<string, string> | null }> => {
    const target = pathAndQuery(request.url);
    const query = target.indexOf("?");
    const pathname = query < 0 ? target : target.slice(0, query);
    const apiPath = pathname.startsWith(d.apiPrefix) ? pathname.slice(d.apiPrefix.length) : pathname;
    const decision = await d.rateLimiter.check(budgetOf(apiPath), s.group);
    if (decision?.limited) {
      s.status = 429;
      logLine(request, s, 429);
      const limited = errorResponse(
        new KeyturnError("rate_limited", `Too many requests from this address; try again in ${decision.retryAfter} s.`),
        { ...decision.headers },
      );
      return { limited, headers: decision.headers };
    }
    // An empty query (`?` alone) is not part of url.search; the limit has always counted url.search.
    const measured = query === target.length - 1 ? pathname : target;
    if (Buffer.byteLength(measured) > MAX_URL_BYTES)
      throw new KeyturnError("invalid_request", `The path and query are limited to ${MAX_URL_BYTES} bytes.`);
    return { limited: null, headers: decision?.headers ?? null };
  };

  const logLine = (request: Request, s: RequestState, status: number) => {
    if (s.logged) return;
    s.logged = true;
    const url = request.url;
    const pathStart = url.indexOf("/", url.indexOf("//") + 2);
    const query = url.indexOf("?", pathStart);
    const path = url.slice(pathStart, query < 0 ? undefined : query);
    d.log.info("request", {
      address: s.address,
      method: request.method,
      path: path.length > MAX_LOGGED_PATH ? path.slice(0, MAX_LOGGED_PATH) + "…" : path,
      status,
      ms: Math.round((performance.now() - s.start) * 10) / 10,
      ...(s.ref ? { ref: s.ref } : {}),
    });
  };

  return {
    /** The client's address for audit lines and logs. */
    address: (request: Request) => stateOf(request).address,

    // Arrow functions: Elysia reads a hook's source to learn what it uses, and cannot read minified methods.
    admit,

    onRequest: async ({ request, set }: { request: Request; set: { headers: Record<string, unknown> } }) => {
      const { limited, headers } = await admit(request);
      if (headers) Object.assign(set.headers, headers);
      if (limited) return limited;
    },

    /** Called by the error handler with the refusal it answered. */
    refused(request: Request, status: number, ref: string | undefined) {
      const s = stateOf(request);
      s.status = status;
      s.ref = ref;
    },

    onAfterResponse: ({ request, set, responseValue }: { request: Request; set: { status?: unknown }; responseValue?: unknown }) => {
      const s = stateOf(request);
      const status =
        s.status ?? (responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : 200);
      logLine(request, s, status);
    },

    // The fast path keeps its request's state itself (a WeakMap entry per request costs more than
    // the rest of the front door) and hands it over only when a refusal needs it by request.
    /** A request's state, not yet tracked: for the fast path. */
    begin: newState,

    /** Tracks a state from `begin`, for the error handler and the audit line's address. */
    track(request: Request, s: RequestState) {
      states.set(request, s);
    },

    /** The log line of a request answered outside Elysia (the fast path). */
    answered(request: Request, s: RequestState, status: number) {
      logLine(request, s, s.status ?? status);
    },
  };
}
