/** The path and query of a request, found once per request and used for routing, budget, audit and logs. */
export interface Target {
  /** The path as sent (still percent-encoded), always starting with `/`. */
  readonly path: string;
  /** The query without its `?`; "" when there is none. */
  readonly query: string;
}

/**
 * Splits a request URL as the runtime gives it (absolute and already normalised, so the path starts
 * at the first `/` after the authority, whatever the Host header held). The fuzz test holds this
 * to WHATWG URL parsing for every Host length and byte.
 */
export function targetOf(url: string): Target {
  const scheme = url.indexOf("//");
  let start = url.indexOf("/", scheme + 2);
  if (start < 0) start = url.length;
  let end = url.indexOf("#", start);
  if (end < 0) end = url.length;
  const q = url.indexOf("?", start);
  if (q >= 0 && q < end) return { path: url.slice(start, q) || "/", query: url.slice(q + 1, end) };
  return { path: url.slice(start, end) || "/", query: "" };
}
