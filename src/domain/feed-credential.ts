import { sign as signDigest } from "node:crypto";
import type { Variant } from "../config/variants";
import type { Clock } from "./clock";
import { isoTime } from "./clock";
import type { EntitlementStatusSource } from "./entitlement-status";
import { KeyturnError } from "./errors";
import { randomBase32 } from "./ids";
import type { KeyRing } from "./keys";
import type { Principal } from "./licensing";
import { type EntitlementClaims, type TokenSigner, TokenVerifier } from "./tokens";

/**
 * A feed credential's JWS `typ`: the variant's token typ with `feed` for `ent` (`al-ent+jwt` →
 * `al-feed+jwt`). Both are signed by the licence key; the typ keeps either from passing as the other.
 */
export const feedCredentialTyp = (v: Variant): string => v.tokenTyp.replace(/-ent\+jwt$/, "-feed+jwt");

/** Where the credential stands in a feed URL: `/api/v1/feeds/credential/<credential>/<feed path>`. */
export const FEED_CREDENTIAL_SEGMENT = "credential";

/** Three base64url parts; a credential is about 500 characters, far below this. */
const CREDENTIAL = /^[A-Za-z0-9_-]{1,512}\.[A-Za-z0-9_-]{1,1536}\.[A-Za-z0-9_-]{1,256}$/;

const b64url = (data: string | Uint8Array) => Buffer.from(data).toString("base64url");

export interface FeedCredentialDeps {
  readonly variant: Variant;
  /** The `iss` of credentials made here (--base-url). */
  readonly baseUrl: string;
  /** The `iss` credentials must carry: this site, or a mirror's vendor. */
  readonly issuer: string;
  readonly keys: KeyRing;
  readonly clock: Clock;
  /** The signer of the licence key that signs now; null without one (a mirror, beta before its key). */
  readonly signer: () => TokenSigner | null;
  /** Whether the installation may still be served: the same source as the bearer check's. */
  readonly status: EntitlementStatusSource;
  /** The vendor's address when this site is a mirror (it verifies credentials but makes none). */
  readonly mirrorOf: string | null;
}

/** A credential as handed to an installation. */
export interface FeedCredential {
  readonly credential: string;
  /** The entitlement token's own expiry: the credential ends with it. */
  readonly expires: string;
}

/**
 * Feed credentials for updaters that cannot send an Authorization header (Velopack's Rust core,
 * Squirrel.Windows): the site derives one from an installation's entitlement token and the
 * updater carries it in the path of its feed URL (a path, because Velopack's core replaces the
 * base URL's query: velopack src/lib-rust/src/sources.rs, HttpSource). It is a compact JWS signed
 * with the licence key, like the token, naming the same installation (`sub`, `dev`), licence and
 * channels, with the token's own `exp`; it holds no name, organisation or plan, so a URL that
 * leaks tells nothing of the licensee. Every request checks it as the bearer check checks a token
 * (signature, issuer, expiry, then the installation's status), so a deactivation or a revoked
 * licence ends it at once, on the vendor's site and on a mirror. Its typ differs from the token's:
 * it opens feeds only, never refresh, deactivate or anything else a token opens.
 */
export class FeedCredentials {
  private readonly verifier: TokenVerifier;
  private readonly headerPart = new Map<string, string>();

  constructor(private readonly deps: FeedCredentialDeps) {
    // No cache of verified credentials: one signature check per feed request (an updater asks
    // hourly at most), and a key removed on reload cannot leave a credential verified.
    this.verifier = new TokenVerifier({ ...deps.variant, tokenTyp: feedCredentialTyp(deps.variant) }, deps.issuer, deps.keys, deps.clock, 0);
  }

  /** A credential for the bearer's installation, ending when its token ends. */
  issue(principal: Principal): FeedCredential {
    if (this.deps.mirrorOf)
      throw new KeyturnError("licensing_unavailable", `This site is a mirror of ${this.deps.mirrorOf}: feed credentials are made there, and accepted here.`);
    const signer = this.deps.signer();
    if (!signer) throw new KeyturnError("licensing_unavailable", "The site has no signing key configured.");
    const t = principal.claims;
    // The token's own iat, nbf and exp: a rule about when a token was issued (a mirror refuses
    // tokens issued before a licence was reinstated) judges the credential as its token.
    const claims = {
      iss: this.deps.baseUrl,
      aud: this.deps.variant.audience,
      sub: t.sub,
      jti: randomBase32(26).toLowerCase(),
      iat: t.iat,
      nbf: t.nbf,
      exp: t.exp,
      kind: t.kind,
      lic: t.lic,
      chn: t.chn,
      dev: t.dev,
    };
    const key = signer.signingKey;
    let header = this.headerPart.get(key.kid);
    if (header === undefined)
      this.headerPart.set(key.kid, (header = b64url(JSON.stringify({ alg: "ES256", typ: feedCredentialTyp(this.deps.variant), kid: key.kid }))));
    const input = `${header}.${b64url(JSON.stringify(claims))}`;
    const signature = signDigest("sha256", Buffer.from(input), { key: key.privateKey, dsaEncoding: "ieee-p1363" });
    return { credential: `${input}.${b64url(signature)}`, expires: isoTime(t.exp * 1000) };
  }

  /**
   * The installation a credential stands for, checked as the bearer check checks a token; throws
   * entitlement_invalid (not one of ours, another typ, tampered), entitlement_expired,
   * entitlement_revoked or license_revoked.
   */
  async authenticate(credential: string): Promise<Principal> {
    if (!CREDENTIAL.test(credential)) throw new KeyturnError("entitlement_invalid", "Not a feed credential this site made, or not for this site.");
    const claims = await this.verifier.verify(credential);
    await this.deps.status.check(claims);
    // A credential carries no name, organisation or plan: the feeds read none of them.
    const full: EntitlementClaims = { ...claims, name: "", org: "", plan: "" };
    return { claims: full };
  }
}
