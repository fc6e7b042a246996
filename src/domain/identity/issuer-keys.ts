import { createLocalJWKSet, type FlattenedJWSInput, type JSONWebKeySet, type JWK, type JWTHeaderParameters } from "jose";
import { isLoopbackHost } from "../../config/config";
import type { Logger } from "../../config/log";
import type { Clock } from "../clock";
import { KeyturnError } from "../errors";

/** Reads of the issuer's keys that end without the key a token names: at most one per this interval. */
export const MISS_INTERVAL_MS = 30_000;
/** Keys are read again after this long, so a key the issuer withdraws stops verifying. */
export const KEYS_MAX_AGE_MS = 60 * 60_000;
const READ_TIMEOUT_MS = 5_000;
const MAX_DOCUMENT_BYTES = 256 * 1024;

interface KeySet {
  readonly kids: ReadonlySet<string>;
  readonly resolve: ReturnType<typeof createLocalJWKSet>;
  readonly readAt: number;
}

/**
 * The issuer's signing keys, found through its discovery document and cached, with docs/architecture.md's
 * policy: a token naming a key not in the cache makes us read the keys afresh (so the first token
 * signed with a newly published key is accepted even seconds after the last read), but reads that
 * end without the named key happen at most once in thirty seconds, and concurrent requests share
 * one read. jose verifies; its remote key set is not used because its cooldown counts every read.
 */
export class IssuerKeys {
  private current: KeySet | null = null;
  private inFlight: Promise<void> | null = null;
  private lastMiss = -Infinity;
  private lastReadFailed = false;
  private discovered: { readonly authorization: string; readonly token: string } | null = null;

  constructor(
    private readonly issuer: string,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** A key resolver for jose's jwtVerify: the issuer's key the token's header names. */
  readonly resolve = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => (await this.keySetFor(header.kid)).resolve(header, token);

  /**
   * The issuer's authorization and token endpoints (for the console's authorization-code sign-in),
   * from the discovery document the keys come from; issuer_unavailable when it names none.
   */
  async endpoints(): Promise<{ readonly authorization: string; readonly token: string }> {
    if (!this.discovered) await this.keySetFor(undefined);
    if (!this.discovered) throw new KeyturnError("issuer_unavailable", "The issuer's discovery document names no authorization and token endpoints.");
    return this.discovered;
  }

  private async keySetFor(kid: string | undefined): Promise<KeySet> {
    const now = this.clock();
    if (this.usable(this.current, now) && (kid === undefined || this.current.kids.has(kid))) return this.current;
    if (!this.inFlight && now - this.lastMiss >= MISS_INTERVAL_MS) this.inFlight = this.read().finally(() => (this.inFlight = null));
    const joined = this.inFlight !== null;
    if (this.inFlight) await this.inFlight;

    const set = this.current;
    const after = this.clock();
    if (!this.usable(set, after) || (this.lastReadFailed && kid !== undefined && !set.kids.has(kid)))
      throw new KeyturnError("issuer_unavailable", "The issuer's keys could not be read.");
    if (kid !== undefined && !set.kids.has(kid)) {
      if (joined) this.lastMiss = after;
      throw new KeyturnError("token_invalid", "The ID token could not be verified: the issuer publishes no key with its kid.");
    }
    return set;
  }

  private usable(set: KeySet | null, now: number): set is KeySet {
    return set !== null && now - set.readAt < KEYS_MAX_AGE_MS;
  }

  /** One read: the discovery document, then the key set it names. Never rejects; failures are state. */
  private async read(): Promise<void> {
    try {
      const discovery = await getJson(`${this.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`);
      if (discovery.issuer !== this.issuer) throw new Error(`the discovery document names another issuer`);
      if (discovery.authorization_endpoint !== undefined && discovery.token_endpoint !== undefined)
        this.discovered = {
          authorization: allowedUrl(discovery.authorization_endpoint, "authorization_endpoint"),
          token: allowedUrl(discovery.token_endpoint, "token_endpoint"),
        };
      const jwks = await getJson(allowedUrl(discovery.jwks_uri, "jwks_uri"));
      if (!Array.isArray(jwks.keys)) throw new Error("the key set has no keys array");
      const keys = (jwks.keys as unknown[]).filter(isRs256SigningKey);
      this.current = {
        kids: new Set(keys.flatMap((k) => (typeof k.kid === "string" ? [k.kid] : []))),
        resolve: createLocalJWKSet({ keys } as JSONWebKeySet),
        readAt: this.clock(),
      };
      this.lastReadFailed = false;
    } catch (e) {
      this.lastReadFailed = true;
      this.lastMiss = this.clock();
      this.log.warn("the identity issuer's keys could not be read", { issuer: this.issuer, error: (e as Error).message });
    }
  }
}

function isRs256SigningKey(k: unknown): k is JWK {
  if (typeof k !== "object" || k === null) return false;
  const key = k as JWK;
  return key.kty === "RSA" && (key.use === undefined || key.use === "sig") && (key.alg === undefined || key.alg === "RS256");
}

/** The key set's address must be https, like the issuer's (plain http only on loopback, for tests). */
function allowedUrl(value: unknown, field: string): string {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw new Error(`the discovery document's ${field} is not a URL`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname)))
    throw new Error(`the discovery document's ${field} is not https`);
  return url.href;
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(READ_TIMEOUT_MS), headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  if (Number(res.headers.get("content-length") ?? 0) > MAX_DOCUMENT_BYTES) throw new Error(`${url} is too large`);
  const text = await res.text();
  if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`${url} is too large`);
  const doc: unknown = JSON.parse(text);
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new Error(`${url} is not a JSON object`);
  return doc as Record<string, unknown>;
}
