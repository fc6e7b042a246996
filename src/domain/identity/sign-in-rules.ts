import type { IdentityConfig } from "../../config/config";
import { KeyturnError } from "../errors";
import { ID_TOKEN_TOLERANCE_SECONDS, type IdTokenClaims } from "./id-token";

type Detail = { licenseId: string };

/** The sign-in at the issuer is no older than maxAge, judged by auth_time; no auth_time fails. */
export function requireRecentAuthentication(claims: IdTokenClaims, maxAgeSeconds: number, nowMs: number, detail: Detail): void {
  const authTime = claims.auth_time;
  if (typeof authTime !== "number" || !Number.isFinite(authTime))
    throw new KeyturnError("stale_authentication", "The ID token does not say when the sign-in at the issuer was made (auth_time).", detail);
  const age = Math.floor(nowMs / 1000) - authTime;
  // maxAge is the spec's limit as it stands; the clock tolerance only forgives an auth_time a little
  // in the future (the issuer's clock ahead of ours).
  if (age > maxAgeSeconds || age < -ID_TOKEN_TOLERANCE_SECONDS)
    throw new KeyturnError("stale_authentication", `The sign-in at the issuer is older than ${maxAgeSeconds} seconds; sign in again.`, detail);
}

/** A second factor: the amr claim names one of the configured markers. */
export function requireSecondFactor(claims: IdTokenClaims, identity: IdentityConfig, detail: Detail): void {
  if (!intersects(claims.amr, identity.mfaValues)) throw new KeyturnError("mfa_required", "The sign-in at the issuer did not use a second factor.", detail);
}

/** Membership in a group that may use the programs, read from the configured claim. */
export function requireAllowedGroup(claims: IdTokenClaims, identity: IdentityConfig, detail: Detail): void {
  const value = claims[identity.groupsClaim];
  if (!intersects(typeof value === "string" ? [value] : value, identity.groups))
    throw new KeyturnError("not_in_required_group", "The person is not in a group that may use the programs.", detail);
}

function intersects(claim: unknown, allowed: readonly string[]): boolean {
  return Array.isArray(claim) && claim.some((v) => typeof v === "string" && allowed.includes(v));
}
