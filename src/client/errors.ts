/**
 * The one error the kit throws. `code` is the site's error code when the site refused (the spec's
 * table: license_unknown, seat_limit, entitlement_revoked, ...), or one of the kit's own codes for
 * what it found wrong itself (a token, a manifest, a download). `reason` narrows the kit's codes.
 */
export type ClientErrorCode =
  // The site's codes (spec and design), passed through as the site sent them.
  | "license_unknown"
  | "license_revoked"
  | "license_expired"
  | "seat_limit"
  | "licensing_unavailable"
  | "entitlement_expired"
  | "entitlement_invalid"
  | "entitlement_revoked"
  | "channel_not_allowed"
  | "no_release"
  | "identity_disabled"
  | "challenge_unknown"
  | "token_replayed"
  | "token_invalid"
  | "stale_authentication"
  | "mfa_required"
  | "not_in_required_group"
  | "issuer_unavailable"
  | "invalid_request"
  | "device_mismatch"
  | "rate_limited"
  | "not_found"
  | "unavailable"
  | "updates_window_ended"
  // The kit's own.
  | "clock_rollback"
  | "signature_invalid"
  | "manifest_invalid"
  | "release_changed"
  | "size_mismatch"
  | "sha256_mismatch"
  | "download_incomplete"
  | "aborted"
  | "network"
  | "bad_answer"
  | "bad_request_code"
  | (string & {});

/** Why a token was refused offline: the one check it failed (the vectors' `reason`). */
export type TokenReason = "malformed" | "alg" | "typ" | "kid" | "signature" | "iss" | "aud" | "exp" | "nbf" | "device" | "claims";

/** Why a manifest signature was refused. */
export type SignatureReason = "malformed" | "alg" | "typ" | "kid" | "signature";

export class KeyturnClientError extends Error {
  override readonly name = "KeyturnClientError";

  constructor(
    readonly code: ClientErrorCode,
    message: string,
    readonly details: { readonly status?: number; readonly ref?: string; readonly reason?: string; readonly retryAfter?: number } = {},
  ) {
    super(message);
  }

  get status(): number | undefined {
    return this.details.status;
  }

  get reason(): string | undefined {
    return this.details.reason;
  }

  /** The site's `ref` for a refusal: its line in the site's audit trail (`keyturn audit --ref`). */
  get ref(): string | undefined {
    return this.details.ref;
  }
}
