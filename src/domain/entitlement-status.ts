import type { Store } from "../store/types";
import type { Clock } from "./clock";
import { KeyturnError } from "./errors";
import { requireLive } from "./licensing";
import type { EntitlementClaims } from "./tokens";

/**
 * Whether the installation behind a verified token may still be served: the second half of the
 * bearer check. The vendor answers from its activation records; a mirror from what its vendor's
 * feed told it (src/domain/mirror/knowledge.ts).
 */
export interface EntitlementStatusSource {
  /**
   * Throws the refusal (entitlement_invalid, entitlement_revoked, license_revoked, license_expired,
   * unavailable). `leaving`: the installation gives its seat back, which a licence that has expired
   * since does not stop (a revoked one does).
   */
  check(claims: EntitlementClaims, leaving?: boolean): Promise<void> | void;
}

/**
 * The vendor's answer: the token's activation and its licence, read from the records on every
 * request. A licence whose expiry was brought forward (an admin edit, a cancelled subscription)
 * ends its tokens then, not at their own `exp`, as its mirrors end them (mirror/knowledge.ts).
 */
export class RecordsStatusSource implements EntitlementStatusSource {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async check(claims: EntitlementClaims, leaving = false): Promise<void> {
    const ids = { licenseId: claims.lic, activationId: claims.sub };
    const status = await this.store.activationStatus(claims.sub);
    if (!status) throw new KeyturnError("entitlement_invalid", "Not a token this site signed, or not for this site.", ids);
    if (status.deactivated !== null) throw new KeyturnError("entitlement_revoked", "The installation was deactivated.", ids);
    requireLive({ revoked: status.licenseRevoked, expires: leaving ? null : status.licenseExpires }, this.clock(), ids);
  }
}
