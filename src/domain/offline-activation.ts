import { type Static, Type } from "@sinclair/typebox";
import type { Variant } from "../config/variants";
import type { Store } from "../store/types";
import type { RequestContext } from "./audit";
import { checkOf, describeError } from "./decode";
import { checkDevice, DeviceModel } from "./device";
import { KeyturnError } from "./errors";
import { typedKeyHash } from "./license-key";
import { LicenseKeyText, type ActivationAnswer, type Entitlement, type Licensing } from "./licensing";

/** As the kit's readOfflineRequestCode (src/client/offline.ts) allows. */
const MAX_CODE = 16 * 1024;

/** An offline request read back: the activate body the kit encoded (docs/clients.md "Offline activation"). */
export const OfflineRequestModel = Type.Object({ key: Type.Optional(LicenseKeyText), device: DeviceModel });
export type OfflineRequest = Static<typeof OfflineRequestModel>;

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
 * ignored. The variant's rules for the device are checked later, by activation, as for any activate body.
 */
export function readOfflineRequest(code: string): OfflineRequest {
  const text = code.replace(/\s+/g, "");
  if (text.length === 0 || text.length > MAX_CODE || !/^[A-Za-z0-9_-]+={0,2}$/.test(text))
    throw new KeyturnError("invalid_request", `The request code must be base64url, at most ${MAX_CODE} characters.`);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(text, "base64url")));
  } catch {
    throw new KeyturnError("invalid_request", "The request code does not hold an activation request (not JSON).");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw new KeyturnError("invalid_request", "The request code does not hold an activation request.");
  const check = checkOf(OfflineRequestModel);
  if (!check.Check(doc)) throw new KeyturnError("invalid_request", `The request code does not hold an activation request: ${describeError(check, doc)}`);
  return doc;
}

/** A request code as pasted (spaces and line breaks are dropped when it is read). */
export const RequestCode = Type.String({
  minLength: 1,
  maxLength: 12_000,
  description: "The request code the client kit made (offlineRequestCode): base64url of { key?, device }",
});
/** What a signed-in customer gives the portal: the request code alone (the licence is the session's). */
export const PortalOfflineModel = Type.Object({ code: RequestCode });

/** What the vendor is given to answer an offline computer: its request code, and the key when the code has none. */
export const OfflineAnswerModel = Type.Object(
  {
    code: RequestCode,
    key: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: "The license key, when the code does not carry it (it wins over the code's)" }),
    ),
  },
  { additionalProperties: false },
);

/**
 * Turns an offline computer's request code into its answer code: activates the device it names
 * with `key` (when given; else the key the code carries), taking or reusing a seat like any
 * activation (same refusals: license_unknown, seat_limit, …), and answers the token. The token's
 * lifetime is the license's own (`tokenTtl`) or the site's offline one (--offline-token-ttl: that
 * computer cannot refresh), never past the license's expiry.
 */
export async function answerOfflineRequest(licensing: Licensing, input: Static<typeof OfflineAnswerModel>, ctx: RequestContext): Promise<OfflineAnswer> {
  const request = readOfflineRequest(input.code);
  const key = input.key ?? request.key;
  if (key === undefined) throw new KeyturnError("invalid_request", "The request code carries no key: give the licence key with it.");
  return offlineAnswerOf(await licensing.activate({ key, device: request.device }, ctx, "offline"));
}

/**
 * The same for a license already known (the portal's signed-in customer, support on a licence's
 * page): a key inside the code must be that license's; a code without one is that license's.
 */
export async function answerOfflineRequestOf(
  deps: { readonly variant: Variant; readonly licensing: Licensing; readonly store: Store },
  licenseId: string,
  code: string,
  ctx: RequestContext,
): Promise<OfflineAnswer> {
  const request = readOfflineRequest(code);
  const license = await deps.store.getLicense(licenseId);
  if (!license || license.kind !== "license") throw new KeyturnError("license_unknown", "The licence is no longer known.");
  if (request.key !== undefined && typedKeyHash(deps.variant, request.key) !== license.keyHash)
    throw new KeyturnError("invalid_request", "The request code was made for another licence key.");
  return offlineAnswerOf(await deps.licensing.grantSeat(license, checkDevice(deps.variant, request.device), ctx, "activate", "offline"));
}

const offlineAnswerOf = ({ token, entitlement }: ActivationAnswer): OfflineAnswer => ({ answer: token, validUntil: entitlement.expires, entitlement });
