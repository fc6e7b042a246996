import type { LicenseRecord } from "../store/types";
import type { AdminCaller, AdminDeps } from "./admin/deps";
import { deactivateActivation, rekeyLicense } from "./admin/licenses";
import { KeyturnError } from "./errors";
import { activationView, licenseView, type ActivationView, type LicenseView } from "./events";
import { findLicenseByTypedKey } from "./license-key";

/**
 * The customer's side of a license, for the portal: they sign in with the key, see and free their
 * seats and activate a computer offline. Audit lines name them as `portal:<license id>`.
 */
export async function licenseOfKey(d: Pick<AdminDeps, "store" | "variant">, key: unknown): Promise<LicenseRecord> {
  const license = typeof key === "string" && key.length <= 200 ? await findLicenseByTypedKey(d.store, d.variant, key.trim()) : null;
  if (!license || license.kind !== "license") throw new KeyturnError("license_unknown", "The key is not known, or is mistyped.");
  return license;
}

export async function portalLicense(d: AdminDeps, licenseId: string): Promise<{ license: LicenseView; activations: ActivationView[] }> {
  const license = await d.store.getLicense(licenseId);
  if (!license) throw new KeyturnError("license_unknown", "The licence is no longer known.");
  const [seatsUsed, activations] = await Promise.all([d.store.countActiveSeats(license.id), d.store.listActivations(license.id)]);
  return { license: licenseView(license, seatsUsed), activations: activations.map(activationView) };
}

/** Frees a seat of one of the customer's own licenses; another license's installation is not_found to them. */
export async function portalDeactivate(d: AdminDeps, licenseIds: readonly string[], address: string | null, activationId: unknown): Promise<ActivationView> {
  const id = typeof activationId === "string" ? activationId : "";
  const activation = id ? await d.store.getActivation(id) : null;
  if (!activation || !licenseIds.includes(activation.licenseId)) throw new KeyturnError("not_found", "No such installation on this licence.");
  const caller: AdminCaller = { principal: { tokenId: `portal:${activation.licenseId}`, name: "customer", scopes: ["activations:write"] }, address };
  return deactivateActivation(d, caller, id);
}

/**
 * A customer signed in by e-mail link reissues a lost key (audit license-rekey, named
 * `portal:<license id>`): the old key stops working, installations keep their seats, and the new
 * key goes to the licence's address (the one the link was mailed to), never to the page.
 */
export async function portalRekey(d: AdminDeps, licenseId: string, address: string | null): Promise<LicenseView> {
  if (!d.mail) throw new KeyturnError("not_found", "Keys are reissued by mail, and this site sends none.");
  const caller: AdminCaller = { principal: { tokenId: `portal:${licenseId}`, name: "customer", scopes: ["licenses:write"] }, address };
  return (await rekeyLicense(d, caller, licenseId)).license;
}
