import type { RequestContext } from "./audit";
import { KeyturnError } from "./errors";
import type { Entitlement, Licensing } from "./licensing";

/** As the kit's readOfflineRequestCode (src/client/offline.ts) allows. */
const MAX_CODE = 16 * 1024;

/** An offline request read back: the activate body the kit encoded (docs/clients.md "Offline activation"). */
export interface OfflineRequest {
  readonly key?: string;
  readonly device: unknown;
}

export interface OfflineAnswer {
  /** The answer code to give back to the offline computer: the entitlement token itself. */
  readonly answer: string;
  readonly entitlement: Entitlement;
}

/**
 * Reads a request code (`offlineRequestCode` of the client kit: the body of POST /licenses/activate,
 * `{ key?, device }`, as padded base64url JSON). Spaces and line breaks from copy and paste are
 * ignored. The device is checked later, by activation, like any activate body.
 */
export function readOfflineRequest(code: unknown): OfflineRequest {
  if (typeof code !== "string") throw new KeyturnError("invalid_request", "code must be the request code, a string");
  const text = code.replace(/\s+/g, "");
  if (text.length === 0 || text.length > MAX_CODE || !/^[A-Za-z0-9_-]+={0,2}$/.test(text))
    throw new KeyturnError("invalid_request", `the request code must be base64url, at most ${MAX_CODE} characters`);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(text, "base64url")));
  } catch {
    throw new KeyturnError("invalid_request", "the request code does not hold an activation request (not JSON)");
  }
  const o = doc as { key?: unknown; device?: unknown } | null;
  if (typeof o !== "object" || o === null || Array.isArray(o) || typeof o.device !== "object" || o.device === null || (o.key !== undefined && typeof o.key !== "string"))
    throw new KeyturnError("invalid_request", "the request code does not hold an activation request ({ key?, device })");
  return { ...(o.key !== undefined ? { key: o.key as string } : {}), device: o.device };
}

/**
 * Turns an offline computer's request code into its answer code: activates the device it names
 * with `key` (when given; else the key the code carries), taking or reusing a seat like any
 * activation (same refusals: license_unknown, seat_limit, …), and answers the token. The token's
 * lifetime is the license's own (`tokenTtl`) or the site's, never past the license's expiry.
 */
export async function answerOfflineRequest(licensing: Licensing, code: unknown, key: unknown, ctx: RequestContext): Promise<OfflineAnswer> {
  const request = readOfflineRequest(code);
  if (key !== undefined && typeof key !== "string") throw new KeyturnError("invalid_request", "key must be a license key string");
  const useKey = key ?? request.key;
  if (useKey === undefined) throw new KeyturnError("invalid_request", "the request code carries no key: give the license key with it");
  const { token, entitlement } = await licensing.activate(useKey, request.device, ctx);
  return { answer: token, entitlement };
}
