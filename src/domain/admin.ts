import { CHANNELS, type Variant } from "../config/variants";
import type { ActivationRecord, LicenseRecord, Store } from "../store/types";
import type { Audit } from "./audit";
import type { Clock } from "./clock";
import { KeyturnError } from "./errors";
import { newId } from "./ids";
import { generateLicenseKey, hashLicenseKey, normalizeLicenseKey } from "./license-key";

export interface NewLicense {
  readonly licensee: string;
  readonly organization: string;
  readonly plan: string;
  readonly planTitle: string;
  readonly seats: number;
  readonly channels: readonly string[];
  readonly expires: number | null;
}

/** The operator's use cases behind `keyturn license …` and `keyturn activation …`. */
export class Admin {
  constructor(
    private readonly variant: Variant,
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly audit: Audit,
  ) {}

  /** Creates a license; the key is returned here and never again (only its hash is kept). */
  async createLicense(input: NewLicense): Promise<{ key: string; license: LicenseRecord }> {
    for (const field of ["licensee", "organization", "plan", "planTitle"] as const)
      if (!input[field].trim()) throw new KeyturnError("invalid_request", `${field} must not be empty`);
    if (!Number.isInteger(input.seats) || input.seats < 1) throw new KeyturnError("invalid_request", "seats must be a whole number of at least 1");
    const channels = [...new Set(input.channels)];
    const unknown = channels.filter((c) => !(CHANNELS as readonly string[]).includes(c));
    if (channels.length === 0 || unknown.length > 0)
      throw new KeyturnError("invalid_request", `channels must be among ${CHANNELS.join(", ")}`);
    const now = this.clock();
    if (input.expires !== null && input.expires <= now) throw new KeyturnError("invalid_request", "expires must be in the future");
    const key = generateLicenseKey(this.variant);
    const license: LicenseRecord = {
      id: newId("lic", now),
      kind: "license",
      keyHash: hashLicenseKey(key),
      licensee: input.licensee.trim(),
      organization: input.organization.trim(),
      plan: input.plan.trim(),
      planTitle: input.planTitle.trim(),
      channels,
      seats: input.seats,
      issued: now,
      expires: input.expires,
      revoked: null,
    };
    await this.store.createLicense(license);
    await this.audit.ok("license-create", { address: null }, { licenseId: license.id });
    return { key, license };
  }

  /** A license by its key (as typed by a person) or by its `lic_`/`staff:` id. */
  async findLicense(keyOrId: string): Promise<LicenseRecord> {
    const text = keyOrId.trim();
    let license: LicenseRecord | null = null;
    if (text.startsWith("lic_") || text.startsWith("staff:")) license = await this.store.getLicense(text);
    else {
      const canonical = normalizeLicenseKey(this.variant, text);
      if (canonical) license = await this.store.findLicenseByKeyHash(hashLicenseKey(canonical));
    }
    if (!license) throw new KeyturnError("license_unknown", `no license matches ${JSON.stringify(keyOrId)}`);
    return license;
  }

  async listLicenses(): Promise<Array<{ license: LicenseRecord; seatsUsed: number }>> {
    const licenses = await this.store.listLicenses();
    return Promise.all(licenses.map(async (license) => ({ license, seatsUsed: await this.store.countActiveSeats(license.id) })));
  }

  async revokeLicense(keyOrId: string): Promise<LicenseRecord> {
    const license = await this.findLicense(keyOrId);
    if (!(await this.store.revokeLicense(license.id, this.clock())))
      throw new KeyturnError("license_revoked", `license ${license.id} was already revoked`);
    await this.audit.ok("license-revoke", { address: null }, { licenseId: license.id });
    return (await this.store.getLicense(license.id))!;
  }

  async listActivations(keyOrId: string): Promise<ActivationRecord[]> {
    return this.store.listActivations((await this.findLicense(keyOrId)).id);
  }

  async deactivate(activationId: string): Promise<ActivationRecord> {
    const activation = await this.store.getActivation(activationId.trim());
    if (!activation) throw new KeyturnError("not_found", `no activation ${activationId}`);
    if (!(await this.store.deactivate(activation.id, this.clock())))
      throw new KeyturnError("entitlement_revoked", `activation ${activation.id} was already deactivated`);
    await this.audit.ok("activation-deactivate", { address: null }, { licenseId: activation.licenseId, activationId: activation.id });
    return (await this.store.getActivation(activation.id))!;
  }
}
