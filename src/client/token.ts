import { KeyturnClientError, type TokenReason } from "./errors.js";
import { encoder, fromB64url } from "./encoding.js";
import type { KeySet } from "./keys.js";
import type { ClientVariant } from "./variants.js";

/** The spec's claims of an entitlement token. */
export interface EntitlementClaims {
  readonly iss: string;
  readonly aud: string | readonly string[];
  readonly sub: string;
  readonly jti: string;
  readonly iat: number;
  readonly nbf: number;
  readonly exp: number;
  readonly kind: "license" | "staff";
  readonly lic: string;
  readonly name: string;
  readonly org: string;
  readonly plan: string;
  readonly chn: readonly string[];
  readonly dev: string;
  /** The license's own expiry (seconds since the epoch); absent when the license has none. */
  readonly lex?: number;
  /** The end of the licence's maintenance window (seconds since the epoch); absent when it has none (terms.ts). */
  readonly upd?: number;
  /** The licence's features, name → value or true (terms.ts); absent when it has none. */
  readonly ent?: Readonly<Record<string, string | true>>;
}

export interface VerifiedToken {
  readonly token: string;
  readonly header: { readonly alg: "ES256"; readonly typ: string; readonly kid: string };
  readonly claims: EntitlementClaims;
  /**
   * The latest time seen so far (ms): the larger of the given lastSeen, now and the token's iat.
   * Persist it and pass it as `lastSeen` next time: the clock-rollback guard compares against it.
   */
  readonly seen: number;
}

export interface TokenCheck {
  readonly variant: ClientVariant;
  /** The site's base URL (https), the tokens' `iss`. */
  readonly issuer: string;
  readonly keys: KeySet;
  /** This installation's device hash: the token's `dev` must be it. */
  readonly deviceHash: string;
  /** Milliseconds since the epoch. */
  readonly now: number;
  /** Seconds of clock difference tolerated on exp, nbf and the rollback guard. */
  readonly toleranceSec: number;
  /** The `seen` of the last verification (persisted by the program), if any. */
  readonly lastSeen?: number;
}

const PART = /^[A-Za-z0-9_-]*$/;
const MAX_TOKEN = 8192;

function refuse(reason: TokenReason, message: string): never {
  const code = reason === "exp" ? "entitlement_expired" : "entitlement_invalid";
  throw new KeyturnClientError(code, message, { reason });
}

function json(part: string, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(fromB64url(part)));
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // falls through to the refusal
  }
  return refuse("malformed", `the token's ${what} is not a base64url JSON object`);
}

const isText = (v: unknown): v is string => typeof v === "string";
const isTime = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isFeatures = (v: unknown): boolean =>
  typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => x === true || typeof x === "string");

/**
 * Checks an entitlement token offline, in this order, stopping at the first failure: shape, alg
 * (ES256 only), typ (the variant's), kid (a compiled-in key), signature, iss, aud, required claims,
 * exp (with tolerance), the clock-rollback guard, nbf (with tolerance), dev (this device).
 */
export async function verifyEntitlementToken(token: string, c: TokenCheck): Promise<VerifiedToken> {
  const parts = token.length <= MAX_TOKEN ? token.split(".") : [];
  if (parts.length !== 3 || !parts.every((p) => p.length > 0 && PART.test(p))) refuse("malformed", "not a compact JWS (header.payload.signature)");
  const [h, p, s] = parts as [string, string, string];
  const header = json(h, "header");
  if (header.alg !== "ES256") refuse("alg", `token alg must be ES256 (got ${JSON.stringify(header.alg)})`);
  if (header.typ !== c.variant.tokenTyp) refuse("typ", `token typ must be ${c.variant.tokenTyp} (got ${JSON.stringify(header.typ)})`);
  if ("crit" in header || "b64" in header) refuse("malformed", "token header must not carry crit or b64");
  if (!isText(header.kid) || !c.keys.has(header.kid)) refuse("kid", `token kid ${JSON.stringify(header.kid)} is not a compiled-in license key`);
  const signature = fromB64url(s);
  const key = await c.keys.get(header.kid);
  const ok =
    signature.length === 64 &&
    (await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, signature as Uint8Array<ArrayBuffer>, encoder.encode(`${h}.${p}`)));
  if (!ok) refuse("signature", `token signature does not verify with ${header.kid}`);

  const claims = json(p, "payload");
  if (claims.iss !== c.issuer) refuse("iss", `token iss must be ${c.issuer} (got ${JSON.stringify(claims.iss)})`);
  const aud = claims.aud;
  if (!(aud === c.variant.audience || (Array.isArray(aud) && aud.includes(c.variant.audience))))
    refuse("aud", `token aud must be ${c.variant.audience} (got ${JSON.stringify(aud)})`);
  if (
    !isText(claims.sub) ||
    !isTime(claims.iat) ||
    !isTime(claims.nbf) ||
    !isTime(claims.exp) ||
    !isText(claims.dev) ||
    !Array.isArray(claims.chn) ||
    !claims.chn.every(isText) ||
    !isText(claims.lic) ||
    (claims.kind !== "license" && claims.kind !== "staff")
  )
    refuse("claims", "token lacks a required claim (sub, iat, nbf, exp, kind, lic, chn, dev)");
  if (claims.lex !== undefined && !isTime(claims.lex)) refuse("claims", "token lex (the license's expiry) is not a time");
  if (claims.upd !== undefined && !isTime(claims.upd)) refuse("claims", "token upd (the end of the licence's updates) is not a time");
  if (claims.ent !== undefined && !isFeatures(claims.ent)) refuse("claims", "token ent (the licence's features) is not an object of names to text or true");

  const tol = c.toleranceSec * 1000;
  if (c.now >= claims.exp * 1000 + tol) refuse("exp", "The token is expired. Refresh it, or activate again.");
  if (claims.iat * 1000 > c.now + tol || (c.lastSeen !== undefined && c.now + tol < c.lastSeen))
    throw new KeyturnClientError(
      "clock_rollback",
      "The computer's clock is behind a time already seen (a token issued in its future): check the clock, then refresh online.",
      { reason: "clock" },
    );
  if (claims.nbf * 1000 > c.now + tol) refuse("nbf", "The token is not valid yet.");
  if (claims.dev !== c.deviceHash) refuse("device", "The token was issued to another device.");

  return {
    token,
    header: { alg: "ES256", typ: header.typ as string, kid: header.kid as string },
    claims: claims as unknown as EntitlementClaims,
    seen: Math.max(c.lastSeen ?? 0, c.now, claims.iat * 1000),
  };
}
