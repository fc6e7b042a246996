import { KeyturnError, type ErrorCode } from "../domain/errors";
import { STATUS_OF } from "./status";

const JSON_TYPE = "application/json;charset=utf-8";

export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": JSON_TYPE, ...headers } });
}

/** A JSON body already serialised. */
export function jsonText(body: string): Response {
  return new Response(body, { headers: { "content-type": JSON_TYPE } });
}

/** The spec's error body, with the status from the code and the headers some codes call for. */
export function errorResponse(err: KeyturnError, headers: Record<string, string> = {}): Response {
  const status = STATUS_OF[err.code];
  const body: Record<string, unknown> = { ok: false, error: err.code, message: err.message };
  if (err.ref) body.ref = err.ref;
  if (status === 401 && err.code.startsWith("entitlement_"))
    headers["www-authenticate"] = err.message === NO_TOKEN ? "Bearer" : 'Bearer error="invalid_token"';
  return json(body, status, headers);
}

export const NO_TOKEN = "This request needs an Authorization: Bearer <entitlement token> header.";

/** A refusal that needs HTTP headers of its own (416's Content-Range); the error handler adds them. */
export class HttpRefusal extends KeyturnError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(code, message);
  }
}
