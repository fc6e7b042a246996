import { type Static, Type } from "@sinclair/typebox";
import type { RequestContext } from "./audit";
import { checkOf, describeError } from "./decode";
import { DeviceModel } from "./device";
import { KeyturnError } from "./errors";
import { LicenseKeyText, type Entitlement, type Licensing } from "./licensing";

/** As the kit's readOfflineRequestCode (src/client/offline.ts) allows. */
const MAX_CODE = 16 * 1024;

/** An offline request read back: the activate body the kit encoded (docs/clients.md "Offline activation"). */
export const OfflineRequestModel = Type.Object({ key: Type.Optional(LicenseKeyText), device: DeviceModel });
export type OfflineRequest = Static<typeof OfflineRequestModel>;

export interface OfflineAnswer {
  /** The answer code to give back to the offline computer: the entitlement token itself. */
  readonly answer: string;
  readonly entitlement: Entitlement;
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
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new KeyturnError("invalid_request", "The request code does not hold an activation request.");
  const check = checkOf(OfflineRequestModel);
  if (!check.Check(doc)) throw new KeyturnError("invalid_request", `The request code does not hold an activation request: ${describeError(check, doc)}`);
  return doc;
}

/** A request code as pasted (spaces and line breaks are dropped when it is read). */
export const RequestCode = Type.String({ minLength: 1, maxLength: 12_000, description: "The request code the client kit made (offlineRequestCode): base64url of { key?, device }" });
/** What a signed-in customer gives the portal: the request code alone (the licence is the session's). */
export const PortalOfflineModel = Type.Object({ code: RequestCode });

/** What the vendor is given to answer an offline computer: its request code, and the key when the code has none. */
export const OfflineAnswerModel = Type.Object(
  {
    code: RequestCode,
    key: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The license key, when the code does not carry it (it wins over the code's)" })),
  },
  { additionalProperties: false },
);

/**
 * Turns an offline computer's request code into its answer code: activates the device it names
 * with `key` (when given; else the key the code carries), taking or reusing a seat like any
 * activation (same refusals: license_unknown, seat_limit, …), and answers the token. The token's
 * lifetime is the license's own (`tokenTtl`) or the site's, never past the license's expiry.
 */
export async function answerOfflineRequest(licensing: Licensing, input: Static<typeof OfflineAnswerModel>, ctx: RequestContext): Promise<OfflineAnswer> {
  const request = readOfflineRequest(input.code);
  const key = input.key ?? request.key;
  if (key === undefined) throw new KeyturnError("invalid_request", "The request code carries no key: give the licence key with it.");
  const { token, entitlement } = await licensing.activate({ key, device: request.device }, ctx);
  return { answer: token, entitlement };
}
