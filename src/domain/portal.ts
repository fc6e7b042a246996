import type { Variant } from "../config/variants";
import type { LicenseRecord } from "../store/types";
import type { AdminCaller, AdminDeps } from "./admin/deps";
import { deactivateActivation } from "./admin/licenses";
import type { RequestContext } from "./audit";
import { parseDevice } from "./device";
import { KeyturnError } from "./errors";
import { activationView, licenseView, type ActivationView, type LicenseView } from "./events";
import { hashLicenseKey, normalizeLicenseKey } from "./license-key";
import type { ActivationAnswer, Licensing } from "./licensing";

/** The longest request code read (the client kit makes them far shorter). */
const MAX_CODE = 16 * 1024;

/**
 * The customer's side of a license, for the portal: they sign in with the key, see and free their
 * seats and activate a computer offline. Audit lines name them as `portal:<license id>`.
 */
export async function licenseOfKey(d: Pick<AdminDeps, "store" | "variant">, key: unknown): Promise<LicenseRecord> {
  const canonical = typeof key === "string" && key.length <= 200 ? normalizeLicenseKey(d.variant, key.trim()) : null;
  const license = canonical ? await d.store.findLicenseByKeyHash(hashLicenseKey(canonical)) : null;
  if (!license || license.kind !== "license") throw new KeyturnError("license_unknown", "The key is not known, or is mistyped.");
  return license;
}

export async function portalLicense(d: AdminDeps, licenseId: string): Promise<{ license: LicenseView; activations: ActivationView[] }> {
  const license = await d.store.getLicense(licenseId);
  if (!license) throw new KeyturnError("license_unknown", "The license is no longer known.");
  const [seatsUsed, activations] = await Promise.all([d.store.countActiveSeats(license.id), d.store.listActivations(license.id)]);
  return { license: licenseView(license, seatsUsed), activations: activations.map(activationView) };
}

/** Frees a seat of the customer's own license; another license's installation is not_found to them. */
export async function portalDeactivate(d: AdminDeps, licenseId: string, address: string | null, activationId: unknown): Promise<ActivationView> {
  const id = typeof activationId === "string" ? activationId : "";
  const activation = id ? await d.store.getActivation(id) : null;
  if (!activation || activation.licenseId !== licenseId) throw new KeyturnError("not_found", "No such installation on this license.");
  const caller: AdminCaller = { principal: { tokenId: `portal:${licenseId}`, name: "customer", scopes: ["activations:write"] }, address };
  return deactivateActivation(d, caller, id);
}

/**
 * Offline activation: the request code the client kit made (padded base64url of the activate
 * body, src/client/offline.ts) turned into the answer code (the entitlement token). A key inside
 * the code must be this license's.
 */
export async function offlineAnswer(
  d: { variant: Variant; licensing: Licensing; store: AdminDeps["store"] },
  licenseId: string,
  code: unknown,
  ctx: RequestContext,
): Promise<ActivationAnswer> {
  const request = readRequestCode(code);
  const license = await d.store.getLicense(licenseId);
  if (!license) throw new KeyturnError("license_unknown", "The license is no longer known.");
  if (request.key !== undefined) {
    const canonical = normalizeLicenseKey(d.variant, request.key);
    if (!canonical || hashLicenseKey(canonical) !== license.keyHash)
      throw new KeyturnError("invalid_request", "The request code was made for another license key.");
  }
  return d.licensing.grantSeat(license, parseDevice(d.variant, request.device), ctx, "activate");
}

function readRequestCode(code: unknown): { key?: string; device: unknown } {
  const bad = () => new KeyturnError("invalid_request", "The request code is not one the program made: paste it whole.");
  if (typeof code !== "string") throw bad();
  const text = code.replace(/\s+/g, "");
  if (text.length === 0 || text.length > MAX_CODE || !/^[A-Za-z0-9_-]+={0,2}$/.test(text)) throw bad();
  try {
    const doc: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.fromBase64(text, { alphabet: "base64url" })));
    if (typeof doc === "object" && doc !== null && !Array.isArray(doc)) {
      const o = doc as Record<string, unknown>;
      if (typeof o.device === "object" && o.device !== null && (o.key === undefined || typeof o.key === "string")) return { key: o.key as string | undefined, device: o.device };
    }
  } catch {
    // falls through to the one refusal
  }
  throw bad();
}
