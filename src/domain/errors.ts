/**
 * The one error type of keyturn. Its code is one of the spec's stable codes (or docs/architecture.md's
 * additions); http/ maps each code to its status in one table.
 */
export const ERROR_CODES = [
  // spec
  "license_unknown",
  "license_revoked",
  "license_expired",
  "seat_limit",
  "licensing_unavailable",
  "entitlement_expired",
  "entitlement_invalid",
  "entitlement_revoked",
  "channel_not_allowed",
  "no_release",
  "identity_disabled",
  "challenge_unknown",
  "token_replayed",
  "token_invalid",
  "stale_authentication",
  "mfa_required",
  "not_in_required_group",
  "issuer_unavailable",
  // docs/architecture.md
  "invalid_request",
  "device_mismatch",
  "not_found",
  "method_not_allowed",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "range_not_satisfiable",
  "unavailable",
  "internal_error",
  // The admin API
  "admin_token_invalid",
  "insufficient_scope",
  "idempotency_conflict",
  "seats_in_use",
  // A second deactivation by an operator is a conflict, not a refused token
  "already_deactivated",
  // A download of a release released after the licence's maintenance window (design.md "Licence models")
  "updates_window_ended",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class KeyturnError extends Error {
  /** Set once the refusal has been written to the audit trail. */
  ref?: string;
  /** No credentials were sent at all (the answer's challenge then names no error, RFC 6750 3.1). */
  credentialsMissing = false;
  /** Headers the answer must carry beyond those of its code (416's Content-Range). */
  headers: Readonly<Record<string, string>> = {};
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra facts for the audit line (never shown to the client). */
    readonly detail?: { licenseId?: string; activationId?: string },
  ) {
    super(message);
    this.name = "KeyturnError";
  }
}

export function isKeyturnError(e: unknown): e is KeyturnError {
  return e instanceof KeyturnError;
}
