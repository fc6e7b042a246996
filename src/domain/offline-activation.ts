import type { Variant } from "../config/variants";
import type { Store } from "../store/types";
import type { RequestContext } from "./audit";
import { parseDevice } from "./device";
import { KeyturnError } from "./errors";
import { hashLicenseKey, normalizeLicenseKey } from "./license-key";
import type { ActivationAnswer, Entitlement, Licensing } from "./licensing";

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
  /** When the answer code stops working (its token's exp): --offline-token-ttl or the license's own lifetime, at most the license's end. */
  readonly validUntil: string;
  readonly entitlement: Entitlement;
}

/**
 * What every page and command that makes an answer code tells its reader: until when it works,
 * and whether the license's own end is what cuts it short.
 */
export function answerLastsUntil(entitlement: Entitlement): string {
  const end = `${entitlement.expires.replace("T", " ").slice(0, 16)} UTC`;
  const expires = Date.parse(entitlement.expires);
  const licenseEnd = entitlement.licenseExpires !== null && Date.parse(entitlement.licenseExpires) === expires;
  const lease = entitlement.seatLease;
  const leaseEnd = lease !== undefined && expires - Date.parse(entitlement.issued) === lease.seconds * 1000;
  const why = licenseEnd ? ", when the licence ends" : leaseEnd ? `, the licence's seat lease (${lease.lease}) from now` : "";
  return `This answer code works until ${end}${why}; after that the computer needs a new one.`;
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
 * lifetime is the license's own (`tokenTtl`) or the site's offline one (--offline-token-ttl: that
 * computer cannot refresh), never past the license's expiry.
 */
export async function answerOfflineRequest(licensing: Licensing, code: unknown, key: unknown, ctx: RequestContext): Promise<OfflineAnswer> {
  const request = readOfflineRequest(code);
  if (key !== undefined && typeof key !== "string") throw new KeyturnError("invalid_request", "key must be a license key string");
  const useKey = key ?? request.key;
  if (useKey === undefined) throw new KeyturnError("invalid_request", "the request code carries no key: give the license key with it");
  return offlineAnswerOf(await licensing.activate(useKey, request.device, ctx, "offline"));
}

/**
 * The same for a license already known (the portal's signed-in customer, support on a licence's
 * page): a key inside the code must be that license's; a code without one is that license's.
 */
export async function answerOfflineRequestOf(
  d: { readonly variant: Variant; readonly licensing: Licensing; readonly store: Store },
  licenseId: string,
  code: unknown,
  ctx: RequestContext,
): Promise<OfflineAnswer> {
  const request = readOfflineRequest(code);
  const license = await d.store.getLicense(licenseId);
  if (!license || license.kind !== "license") throw new KeyturnError("license_unknown", "The license is no longer known.");
  if (request.key !== undefined) {
    const canonical = normalizeLicenseKey(d.variant, request.key);
    if (!canonical || hashLicenseKey(canonical) !== license.keyHash)
      throw new KeyturnError("invalid_request", "The request code was made for another license key.");
  }
  return offlineAnswerOf(await d.licensing.grantSeat(license, parseDevice(d.variant, request.device), ctx, "activate", "offline"));
}

const offlineAnswerOf = ({ token, entitlement }: ActivationAnswer): OfflineAnswer => ({ answer: token, validUntil: entitlement.expires, entitlement });
