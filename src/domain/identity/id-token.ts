import { errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import { KeyturnError } from "../errors";
import type { IssuerKeys } from "./issuer-keys";

/** Clock tolerance for the issuer's times (exp, iat, nbf, auth_time); keyturn's own tokens get none. */
export const ID_TOKEN_TOLERANCE_SECONDS = 60;
const MAX_ID_TOKEN_LENGTH = 16 * 1024;

export interface IdTokenClaims extends JWTPayload {
  readonly sub: string;
  readonly iat: number;
  readonly exp: number;
}

export interface IdTokenCheck {
  readonly issuer: string;
  readonly clientId: string;
  readonly keys: IssuerKeys;
  readonly nowMs: number;
}

/**
 * The first step of docs/architecture.md's order: RS256 only, the signature against the issuer's published
 * keys, then iss, aud (and azp), exp, iat and nbf with 60 s tolerance. Anything wrong here is
 * token_invalid; keys that cannot be read are issuer_unavailable.
 */
export async function verifyIdToken(token: string, check: IdTokenCheck): Promise<IdTokenClaims> {
  if (token.length > MAX_ID_TOKEN_LENGTH) throw invalid("it is too long");
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, check.keys.resolve, {
      algorithms: ["RS256"],
      issuer: check.issuer,
      audience: check.clientId,
      clockTolerance: ID_TOKEN_TOLERANCE_SECONDS,
      currentDate: new Date(check.nowMs),
      requiredClaims: ["sub", "iat", "exp"],
    }));
  } catch (e) {
    if (e instanceof KeyturnError) throw e;
    throw invalid(reason(e));
  }
  const nowSec = Math.floor(check.nowMs / 1000);
  if (typeof payload.sub !== "string" || payload.sub.length === 0) throw invalid("it has no subject");
  if (payload.iat! > nowSec + ID_TOKEN_TOLERANCE_SECONDS) throw invalid("it was issued in the future");
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if ((audiences.length > 1 || payload.azp !== undefined) && payload.azp !== check.clientId) throw invalid("its azp claim is not this site's client");
  return payload as IdTokenClaims;
}

export function invalid(why: string, detail?: { licenseId: string }): KeyturnError {
  return new KeyturnError("token_invalid", `The ID token could not be verified: ${why}.`, detail);
}

function reason(e: unknown): string {
  if (e instanceof joseErrors.JOSEAlgNotAllowed) return "only RS256 is accepted";
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return "its signature does not check against the issuer's keys";
  if (e instanceof joseErrors.JWTExpired) return "it has expired";
  if (e instanceof joseErrors.JWTClaimValidationFailed) return `its ${e.claim} claim is not acceptable`;
  if (e instanceof joseErrors.JWKSNoMatchingKey || e instanceof joseErrors.JWKSMultipleMatchingKeys) return "no single key of the issuer matches it";
  return "it is not a well-formed signed JWT";
}
