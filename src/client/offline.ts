import { KeyturnClientError } from "./errors.js";
import type { Device } from "./device.js";

/**
 * Offline activation, for a computer that cannot reach the site. The request code is the body of
 * `POST /licenses/activate` (`{ key?, device }`) as padded base64url JSON; the vendor turns it into
 * the answer code with `keyturn activation offline` or POST /admin/activations/offline
 * (docs/clients.md). The answer code is the entitlement token itself; the program verifies it
 * offline like any token.
 */
export interface OfflineRequest {
  readonly key?: string;
  readonly device: Device;
}

const MAX_CODE = 16 * 1024;

export function offlineRequestCode(request: OfflineRequest): string {
  const body = { ...(request.key !== undefined ? { key: request.key.trim() } : {}), device: request.device };
  return btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(body))))
    .replace(/\+/g, "-")
    .replace(/\//g, "_");
}

/** Reads a request code back (what a portal does before it calls activate). */
export function readOfflineRequestCode(code: string): OfflineRequest {
  const text = code.replace(/\s+/g, "");
  if (text.length > MAX_CODE || !/^[A-Za-z0-9_-]+={0,2}$/.test(text)) throw new KeyturnClientError("bad_request_code", "The request code is not base64url.");
  try {
    const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    const doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bin, (ch) => ch.charCodeAt(0))));
    if (
      typeof doc === "object" &&
      doc !== null &&
      typeof doc.device === "object" &&
      doc.device !== null &&
      (doc.key === undefined || typeof doc.key === "string")
    )
      return doc as OfflineRequest;
  } catch {
    // falls through
  }
  throw new KeyturnClientError("bad_request_code", "The request code does not hold an activation request.");
}

/** The token inside an answer code: the code is the token, possibly wrapped or spaced by copy and paste. */
export function tokenOfAnswerCode(answer: string): string {
  return answer.replace(/\s+/g, "");
}
