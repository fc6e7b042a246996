import type { Logger } from "../config/log";
import { KeyturnError } from "../domain/errors";
import { clientAddressResolver } from "./client-address";
import { API_PREFIX, type Budget } from "./endpoint";
import { addressGroup, formatIp } from "./ip";
import { loggedPath } from "./logged-path";
import type { RateLimiter } from "./rate-limit";
import { errorResponse } from "./respond";
import type { Target } from "./target";

/** Path and query longer than this are refused (400) before any other work. */
export const MAX_URL_BYTES = 8 * 1024;
/** Client addresses remembered in their parsed forms; the memory is dropped whole when full. */
const MAX_REMEMBERED_CLIENTS = 10_000;

const NO_STORE = { "cache-control": "no-store" } as const;
const ADMIN_PREFIX = `${API_PREFIX}/admin`;
const isAdminPath = (path: string) => path === ADMIN_PREFIX || path.startsWith(ADMIN_PREFIX + "/");

/** What the front door knows of one request while it is answered. */
export interface RequestState {
  readonly start: number;
  /** The client's address after trusted proxies (null when unknown). */
  readonly address: string | null;
  /** The client as the rate limit counts it: an IPv4 address or an IPv6 /64. */
  readonly group: string;
  /** The audit reference of the request's refusal, for its log line. */
  ref?: string;
  /** The error code of the request's refusal, for metrics. */
  code?: string;
  /** The admin token that asked, once found good: a refusal's audit line names it. */
  actor?: string;
}

interface FrontDoorDeps {
  readonly trustProxy: readonly string[];
  readonly rateLimiter: RateLimiter;
  readonly log: Logger;
}

/** What the front door decided of one request: answered (429), refused, or let in with its headers. */
export type Admission = { readonly limited: Response } | { readonly headers: Record<string, string> | null; readonly refused?: KeyturnError };

/**
 * What every request meets first: its client address (after trusted proxies), the rate limit of its
 * endpoint's budget, the URL size limit, and at the end one log line. A limited request is answered
 * here, before any body or audit work, so refusals cannot be written faster than the budget allows.
 */
export function frontDoor(deps: FrontDoorDeps) {
  const resolve = clientAddressResolver(deps.trustProxy);

  // A client sends many requests from one peer address: its parsed and formatted forms are kept.
  const clients = new Map<string, { address: string | null; group: string }>();
  const clientOf = (peer: string | null, forwardedFor: string | null) => {
    const key = forwardedFor === null ? `${peer}` : `${peer}|${forwardedFor}`;
    let client = clients.get(key);
    if (!client) {
      const ip = resolve(peer, forwardedFor);
      client = { address: ip ? formatIp(ip) : null, group: ip ? addressGroup(ip) : "unknown" };
      if (clients.size >= MAX_REMEMBERED_CLIENTS) clients.clear();
      clients.set(key, client);
    }
    return client;
  };

  return {
    begin(request: Request, peer: string | null): RequestState {
      // Without trusted proxies X-Forwarded-For is never believed, so it is not even read.
      const client = clientOf(peer, deps.trustProxy.length === 0 ? null : request.headers.get("x-forwarded-for"));
      return { start: performance.now(), address: client.address, group: client.group };
    },

    /**
     * The rate limit, then the URL size limit: a limited request's 429 answer, the URL-size refusal,
     * or the headers every answer carries (RateLimit, and on admin paths Cache-Control: no-store).
     * Nothing is thrown: the caller ends the request with the answer or the refusal.
     */
    async admit(state: RequestState, budget: Budget, target: Target): Promise<Admission> {
      const decision = await deps.rateLimiter.check(budget, state.group);
      // Admin answers hold licences, keys and records: no cache (browser, proxy) may keep any of them.
      // Set here for every admin answer, so no admin handler sets it itself.
      const noStore = isAdminPath(target.path) ? NO_STORE : null;
      if (decision?.limited) {
        state.code = "rate_limited";
        const limited = errorResponse(new KeyturnError("rate_limited", `Too many requests from this address; try again in ${decision.retryAfter} s.`), {
          ...decision.headers,
          ...noStore,
        });
        return { limited };
      }
      const headers = noStore ? { ...decision?.headers, ...noStore } : (decision?.headers ?? null);
      // The runtime percent-encodes the URL, so its characters are its bytes.
      if (target.path.length + (target.query ? target.query.length + 1 : 0) > MAX_URL_BYTES)
        return { headers, refused: new KeyturnError("invalid_request", `The path and query are limited to ${MAX_URL_BYTES} bytes.`) };
      return { headers };
    },

    /** The request's one log line. */
    logLine(method: string, target: Target, state: RequestState, status: number) {
      deps.log.info("request", {
        address: state.address,
        method,
        path: loggedPath(target.path),
        status,
        ms: Math.round((performance.now() - state.start) * 10) / 10,
        ...(state.ref ? { ref: state.ref } : {}),
      });
    },
  };
}

export type FrontDoor = ReturnType<typeof frontDoor>;
