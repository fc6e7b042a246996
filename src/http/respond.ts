import type { KeyturnError } from "../domain/errors";
import { STATUS_OF } from "./status";

const JSON_TYPE = "application/json;charset=utf-8";

export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": JSON_TYPE, ...headers } });
}

/**
 * A JSON body already serialised. A body kept to be sent many times is best a Blob: its bytes go out
 * as they are, where a string is encoded to UTF-8 again for every answer (a 1.6 MB releases list took
 * 545-603 µs of CPU an answer as a string and 444-454 µs as a Blob; bench/README.md, "4a and 5a,
 * eleventh round").
 */
export function jsonText(body: string | Blob, headers?: Record<string, string>): Response {
  return new Response(body, { headers: { "content-type": JSON_TYPE, ...headers } });
}

/** The spec's error body, with the status from the code and the headers the error calls for. */
export function errorResponse(err: KeyturnError, headers: Record<string, string> = {}): Response {
  const status = STATUS_OF[err.code];
  const body: Record<string, unknown> = { ok: false, error: err.code, message: err.message };
  if (err.ref) body.ref = err.ref;
  Object.assign(headers, err.headers);
  if (status === 401 && CHALLENGED.has(err.code)) headers["www-authenticate"] = err.credentialsMissing ? "Bearer" : 'Bearer error="invalid_token"';
  return json(body, status, headers);
}

/** The 401 codes of a bad or missing bearer token (RFC 6750's challenge goes with them). */
const CHALLENGED = new Set<string>(["entitlement_invalid", "entitlement_expired", "entitlement_revoked", "admin_token_invalid"]);
