import type { Store } from "../store/types";
import { KeyturnError } from "./errors";
import type { EntitlementClaims } from "./tokens";

/**
 * Whether the installation behind a verified token may still be served: the second half of the
 * bearer check. The vendor answers from its activation records; a mirror from what its vendor's
 * feed told it (src/domain/mirror/knowledge.ts).
 */
export interface EntitlementStatusSource {
  /** Throws the refusal (entitlement_invalid, entitlement_revoked, license_revoked, license_expired, unavailable). */
  check(claims: EntitlementClaims): Promise<void> | void;
}

/** The vendor's answer: the token's activation, read from the records on every request. */
export class RecordsStatusSource implements EntitlementStatusSource {
  constructor(private readonly store: Store) {}

  async check(claims: EntitlementClaims): Promise<void> {
    const ids = { licenseId: claims.lic, activationId: claims.sub };
    const status = await this.store.activationStatus(claims.sub);
    if (!status) throw new KeyturnError("entitlement_invalid", "Not a token this site signed, or not for this site.", ids);
    if (status.deactivated !== null) throw new KeyturnError("entitlement_revoked", "The installation was deactivated.", ids);
    if (status.licenseRevoked !== null) throw new KeyturnError("license_revoked", "The licence is revoked.", ids);
  }
}
