import { sign as signDigest } from "node:crypto";
import { errors as joseErrors, jwtVerify, type JWTHeaderParameters } from "jose";
import type { Variant } from "../config/variants";
import type { EntitlementKind } from "../store/types";
import type { Clock } from "./clock";
import { KeyturnError } from "./errors";
import { randomBase32 } from "./ids";
import type { KeyRing } from "./keys";

/** The spec's claims table. */
export interface EntitlementClaims {
  readonly iss: string;
  readonly aud: string;
  readonly sub: string;
  readonly jti: string;
  readonly iat: number;
  readonly nbf: number;
  readonly exp: number;
  readonly kind: EntitlementKind;
  readonly lic: string;
  readonly name: string;
  readonly org: string;
  readonly plan: string;
  readonly chn: readonly string[];
  readonly dev: string;
  /** keyturn's addition: the license's own expiry (NumericDate); absent when the license has none. */
  readonly lex?: number;
  /** keyturn's addition: the end of the licence's maintenance window (NumericDate); absent when it has none. */
  readonly upd?: number;
  /** keyturn's addition: the licence's features, name → value or true (domain/features.ts); absent when it has none. */
  readonly ent?: Readonly<Record<string, string | true>>;
}

export type ClaimsInput = Omit<EntitlementClaims, "iss" | "aud" | "jti" | "iat" | "nbf" | "exp">;

const b64url = (data: string | Uint8Array) => Buffer.from(data).toString("base64url");

/**
 * Signs entitlement tokens with the newest license key. node:crypto's synchronous ECDSA is used
 * here (several times the rate of WebCrypto through jose); verification stays with jose.
 */
export class TokenSigner {
  private readonly headerPart: string;

  constructor(
    private readonly variant: Variant,
    private readonly baseUrl: string,
    private readonly signing: NonNullable<KeyRing["signing"]>,
  ) {
    this.headerPart = b64url(JSON.stringify({ alg: "ES256", typ: variant.tokenTyp, kid: signing.kid }));
  }

  get kid(): string {
    return this.signing.kid;
  }

  /** The key it signs with (the caller makes a new signer when the key that signs changes). */
  get signingKey(): NonNullable<KeyRing["signing"]> {
    return this.signing;
  }

  /** `iat` and `nbf` are now; `exp` is the given time (already capped at the license's expiry). */
  sign(input: ClaimsInput, nowMs: number, expMs: number): { token: string; claims: EntitlementClaims } {
    const iat = Math.floor(nowMs / 1000);
    const claims: EntitlementClaims = {
      iss: this.baseUrl,
      aud: this.variant.audience,
      sub: input.sub,
      jti: randomBase32(26).toLowerCase(),
      iat,
      nbf: iat,
      exp: Math.floor(expMs / 1000),
      kind: input.kind,
      lic: input.lic,
      name: input.name,
      org: input.org,
      plan: input.plan,
      chn: input.chn,
      dev: input.dev,
      ...(input.lex !== undefined ? { lex: input.lex } : {}),
      ...(input.upd !== undefined ? { upd: input.upd } : {}),
      ...(input.ent !== undefined ? { ent: input.ent } : {}),
    };
    const signingInput = `${this.headerPart}.${b64url(JSON.stringify(claims))}`;
    const signature = signDigest("sha256", Buffer.from(signingInput), { key: this.signing.privateKey, dsaEncoding: "ieee-p1363" });
    return { token: `${signingInput}.${b64url(signature)}`, claims };
  }
}

/**
 * Verifies entitlement tokens: ES256 only, this variant's typ and aud, the issuer's iss (this site,
 * or a mirror's vendor), a license key of ours by kid, no leeway. Verified tokens are kept by their
 * exact text until their exp, so a busy installation costs one signature check per token, not per
 * request; revocation is not cached (the caller asks its EntitlementStatusSource on every request),
 * and `evict` drops a revoked installation's or license's tokens at once all the same.
 */
export class TokenVerifier {
  private readonly cache = new Map<string, EntitlementClaims>();
  /** Verifications answered from the cache, and those that checked a signature (for metrics). */
  readonly lookups = { hits: 0, misses: 0 };

  constructor(
    private readonly variant: Variant,
    private readonly issuer: string,
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly cacheSize: number,
    /** Told the kid of a token signed by a key this site does not hold (a mirror reports it in /health). */
    private readonly onUnknownKey: (kid: string) => void = () => {},
  ) {}

  async verify(token: string): Promise<EntitlementClaims> {
    const nowSec = Math.floor(this.clock() / 1000);
    const cached = this.cache.get(token);
    if (cached) {
      if (nowSec < cached.exp) {
        this.lookups.hits++;
        return cached;
      }
      this.cache.delete(token);
    }
    this.lookups.misses++;
    const claims = await this.verifyUncached(token);
    if (this.cacheSize > 0) {
      if (this.cache.size >= this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(token, claims);
    }
    return claims;
  }

  /** Forgets the verified tokens of an activation (`sub`) or of a license (`lic`); returns how many. */
  evict(match: { readonly activation?: string; readonly license?: string }): number {
    let evicted = 0;
    for (const [token, claims] of this.cache)
      if (claims.sub === match.activation || claims.lic === match.license) {
        this.cache.delete(token);
        evicted++;
      }
    return evicted;
  }

  /** Forgets the verified tokens whose claims `refused` says are refused now; returns how many. */
  evictIf(refused: (claims: EntitlementClaims) => boolean): number {
    let evicted = 0;
    for (const [token, claims] of this.cache)
      if (refused(claims)) {
        this.cache.delete(token);
        evicted++;
      }
    return evicted;
  }

  /** Forgets every verified token (the keys changed: a removed key's tokens must be checked again). */
  clear(): void {
    this.cache.clear();
  }

  /** How many verified tokens are held (for tests and metrics). */
  get cached(): number {
    return this.cache.size;
  }

  private async verifyUncached(token: string): Promise<EntitlementClaims> {
    if (token.length > 8192) throw invalid();
    try {
      const { payload } = await jwtVerify(token, (header: JWTHeaderParameters) => this.keyFor(header), {
        algorithms: ["ES256"],
        typ: this.variant.tokenTyp,
        issuer: this.issuer,
        audience: this.variant.audience,
        currentDate: new Date(this.clock()),
        clockTolerance: 0,
        requiredClaims: ["sub", "jti", "iat", "nbf", "exp", "kind", "lic", "dev", "chn"],
      });
      const p = payload as unknown as EntitlementClaims;
      if (typeof p.sub !== "string" || !p.sub.startsWith("act_") || !Array.isArray(p.chn) || typeof p.dev !== "string") throw invalid();
      // The offering rules read these (releases/licence-terms.ts): a token must not make them throw.
      if (p.upd !== undefined && !Number.isSafeInteger(p.upd)) throw invalid();
      if (p.ent !== undefined && (typeof p.ent !== "object" || p.ent === null || Array.isArray(p.ent))) throw invalid();
      return p;
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new KeyturnError("entitlement_expired", "The token is expired. Activate again.");
      if (e instanceof KeyturnError) throw e;
      throw invalid();
    }
  }

  private keyFor(header: JWTHeaderParameters): CryptoKey {
    const key = header.kid ? this.keys.verify.get(header.kid) : undefined;
    if (!key && header.kid && header.kid.length <= 64) this.onUnknownKey(header.kid);
    if (!key || key.purpose !== "license") throw invalid();
    return key.cryptoKey;
  }
}

function invalid(): KeyturnError {
  return new KeyturnError("entitlement_invalid", "Not a token this site signed, or not for this site.");
}
