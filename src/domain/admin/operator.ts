import type { Variant } from "../../config/variants";
import type { ActivationRecord, LicenseRecord, Store } from "../../store/types";
import { CLI_CALLER, type AdminDeps } from "./deps";
import { decode } from "../decode";
import { createLicense, deactivateActivation, findLicense, LicenseCreateInput, revokeLicense } from "./licenses";
import type { Audit } from "../audit";
import type { Clock } from "../clock";

/** The token TTL's default (7 days), for callers that do not pass the configured one. */
const DEFAULT_TOKEN_TTL_SECONDS = 7 * 86400;

export interface NewLicense {
  readonly licensee: string;
  readonly organization: string;
  readonly plan: string;
  readonly planTitle: string;
  readonly seats: number;
  readonly channels: readonly string[];
  readonly expires: number | null;
  /** A duration (`30d`), or null/absent for seats that never lapse. */
  readonly seatLease?: string | null;
  /** This license's token lifetime in seconds, or null/absent for the site's. */
  readonly tokenTtl?: number | null;
  /** The end of the maintenance window (RFC 3339), or null/absent for none. */
  readonly updatesUntil?: string | null;
  /** `name` or `name=value`. */
  readonly features?: readonly string[];
}

/**
 * The operator's use cases behind `keyturn license …` and `keyturn activation …`, as the command
 * line's caller of the admin services (src/domain/admin/), which write the audit line and event.
 */
export class Admin {
  private readonly deps: AdminDeps;

  constructor(
    variant: Variant,
    private readonly store: Store,
    clock: Clock,
    /** Unused: the admin services write their audit lines in their own transactions (kept so callers need not change). */
    _audit: Audit,
    tokenTtlSeconds = DEFAULT_TOKEN_TTL_SECONDS,
  ) {
    this.deps = { variant, store, clock, tokenTtlSeconds };
  }

  /** Creates a license; the key is returned here and never again (only its hash is kept). */
  async createLicense(input: NewLicense): Promise<{ key: string; license: LicenseRecord }> {
    const created = decode(LicenseCreateInput, {
      ...input,
      channels: [...input.channels],
      ...(input.features ? { features: [...input.features] } : {}),
      expires: input.expires === null ? null : new Date(input.expires).toISOString(),
    });
    const { key, license } = await createLicense(this.deps, CLI_CALLER, created);
    return { key, license: (await this.store.getLicense(license.id))! };
  }

  /** A license by its key (as typed by a person) or by its `lic_`/`staff:` id. */
  async findLicense(keyOrId: string): Promise<LicenseRecord> {
    return findLicense(this.deps, keyOrId);
  }

  async listLicenses(): Promise<Array<{ license: LicenseRecord; seatsUsed: number }>> {
    const licenses = await this.store.listLicenses();
    return Promise.all(licenses.map(async (license) => ({ license, seatsUsed: await this.store.countActiveSeats(license.id) })));
  }

  async revokeLicense(keyOrId: string): Promise<LicenseRecord> {
    const { id } = await revokeLicense(this.deps, CLI_CALLER, keyOrId);
    return (await this.store.getLicense(id))!;
  }

  async listActivations(keyOrId: string): Promise<ActivationRecord[]> {
    return this.store.listActivations((await this.findLicense(keyOrId)).id);
  }

  async deactivate(activationId: string): Promise<ActivationRecord> {
    const { id } = await deactivateActivation(this.deps, CLI_CALLER, activationId);
    return (await this.store.getActivation(id))!;
  }
}
