import type { ErrorCode } from "../../domain/errors";

/** Refusals of an endpoint that reads a JSON body. */
export const BODY_ERRORS: readonly ErrorCode[] = ["invalid_request", "unsupported_media_type", "payload_too_large"];
/**
 * Refusals of the bearer check (Licensing.authenticate): a bad, missing, expired or deactivated
 * token, or one whose licence was revoked, or whose expiry was brought forward, since it was issued.
 */
export const BEARER_ERRORS: readonly ErrorCode[] = ["entitlement_invalid", "entitlement_expired", "entitlement_revoked", "license_revoked", "license_expired"];
/** Refusals of a licence that can no longer be used, where the licence record itself is read (activate, sign-in, current, refresh). */
export const LICENSE_STATE_ERRORS: readonly ErrorCode[] = ["license_revoked", "license_expired"];

/** Answers that carry an entitlement token must never be stored by a cache on the way. */
export const NO_STORE = { "cache-control": "no-store" } as const;

/** Refusals of a bad, missing or insufficient admin token. */
export const ADMIN_ERRORS: readonly ErrorCode[] = ["admin_token_invalid", "insufficient_scope"];
