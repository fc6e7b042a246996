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

  const stateOf = (request: Request): RequestState => {
    let s = states.get(request);
    if (!s) {
      const ip = resolve(d.peerAddress(request), request.headers.get("x-forwarded-for"));
      s = { start: performance.now(), address: ip ? formatIp(ip) : null, group: ip ? addressGroup(ip) : "unknown" };
      states.set(request, s);
    }
    return s;
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
    onRequest: async ({ request, set }: { request: Request; set: { headers: Record<string, unknown> } }) => {
      const s = stateOf(request);
      const url = new URL(request.url);
      const apiPath = url.pathname.startsWith(d.apiPrefix) ? url.pathname.slice(d.apiPrefix.length) : url.pathname;
      const decision = await d.rateLimiter.check(budgetOf(apiPath), s.group);
      if (decision) Object.assign(set.headers, decision.headers);
      if (decision?.limited) {
        s.status = 429;
        logLine(request, s, 429);
        return errorResponse(
          new KeyturnError("rate_limited", `Too many requests from this address; try again in ${decision.retryAfter} s.`),
          { ...decision.headers },
        );
      }
      if (Buffer.byteLength(url.pathname + url.search) > MAX_URL_BYTES)
        throw new KeyturnError("invalid_request", `The path and query are limited to ${MAX_URL_BYTES} bytes.`);
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
  };
}
