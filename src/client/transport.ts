import { KeyturnClientError } from "./errors.js";

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
const MAX_JSON = 1 << 20;

/** Checks a base URL: https, or plain http on a loopback address only (tests, a local proxy). */
export function checkBaseUrl(raw: string, what: string, allowLoopbackHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`${what} is not a URL: ${raw}`);
  }
  const ok = url.protocol === "https:" || (allowLoopbackHttp && url.protocol === "http:" && LOOPBACK.has(url.hostname));
  if (!ok) throw new TypeError(`${what} must be https (plain http only on a loopback address): ${raw}`);
  return raw.replace(/\/+$/, "");
}

/** The site's HTTP API under `<baseUrl>/api/v1`, its refusals turned into KeyturnClientError. */
export class Transport {
  constructor(
    readonly baseUrl: string,
    private readonly fetchImpl: FetchLike,
  ) {}

  url(path: string): string {
    return `${this.baseUrl}/api/v1${path}`;
  }

  async send(path: string, init: RequestInit & { token?: string }): Promise<Response> {
    const headers = new Headers(init.headers);
    if (init.token !== undefined) headers.set("authorization", `Bearer ${init.token}`);
    try {
      return await this.fetchImpl(this.url(path), { ...init, headers, redirect: "error" });
    } catch (e) {
      if (init.signal?.aborted) throw new KeyturnClientError("aborted", "The request was aborted.");
      throw new KeyturnClientError("network", `The site could not be reached: ${(e as Error).message}`);
    }
  }

  /** A JSON request; a 2xx answer's body, or the site's refusal thrown. */
  async json<T>(method: "GET" | "POST", path: string, opts: { body?: unknown; token?: string; signal?: AbortSignal } = {}): Promise<T> {
    const res = await this.send(path, {
      method,
      ...(opts.token !== undefined ? { token: opts.token } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body), headers: { "content-type": "application/json" } } : {}),
    });
    if (!res.ok) throw await refusal(res);
    const text = await res.text();
    if (text.length > MAX_JSON) throw new KeyturnClientError("bad_answer", "The site's answer is too large.", { status: res.status });
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new KeyturnClientError("bad_answer", "The site's answer is not JSON.", { status: res.status });
    }
  }
}

/** The site's error body (`{ ok: false, error, message, ref? }`) as a KeyturnClientError. */
export async function refusal(res: Response): Promise<KeyturnClientError> {
  let body: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse((await res.text()).slice(0, MAX_JSON));
    if (typeof parsed === "object" && parsed !== null) body = parsed;
  } catch {
    // not the site's error body; the status alone says what happened
  }
  const retry = Number(res.headers.get("retry-after"));
  const details = {
    status: res.status,
    ...(typeof body.ref === "string" ? { ref: body.ref } : {}),
    ...(Number.isFinite(retry) && retry > 0 ? { retryAfter: retry } : {}),
  };
  if (typeof body.error === "string") return new KeyturnClientError(body.error, typeof body.message === "string" ? body.message : body.error, details);
  return new KeyturnClientError("bad_answer", `The site answered ${res.status} without an error body.`, details);
}
