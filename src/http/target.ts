/** The path and query of a request, found once per request and used for routing, budget, audit and logs. */
const SLASH = 47;

export interface Target {
  /** The path as sent (still percent-encoded), always starting with `/`. */
  readonly path: string;
  /** The query without its `?`; "" when there is none. */
  readonly query: string;
}

/**
 * Splits a request URL as the runtime gives it: absolute and normalised (the path starts at the
 * first `/` after the authority), or, when the Host header is empty or not a valid host, the bare
 * path (see `hasValidHost`). test/http/host-fuzz.test.ts holds this to WHATWG URL parsing of the
 * request target for every Host length and byte.
 */
export function targetOf(url: string): Target {
  let start = url.charCodeAt(0) === SLASH ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) start = url.length;
  let end = url.indexOf("#", start);
  if (end < 0) end = url.length;
  const q = url.indexOf("?", start);
  if (q >= 0 && q < end) return { path: url.slice(start, q) || "/", query: url.slice(q + 1, end) };
  return { path: url.slice(start, end) || "/", query: "" };
}

/** The runtime gives the bare path as the URL when it could not make one from the Host header. */
export function hasValidHost(url: string): boolean {
  return url.charCodeAt(0) !== SLASH;
}

/**
 * Whether Elysia finds the same path as keyturn's split: it takes the path from the first "/" at or
 * after the URL's 11th character, right for a URL with a Host of 4 characters or more, wrong for a
 * bare path (no valid Host) or a 1–3 character Host.
 */
export function routedAsSplit(url: string): boolean {
  return hasValidHost(url) && url.indexOf("/", url.indexOf("//") + 2) >= 11;
}
