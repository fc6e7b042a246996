import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";

/**
 * A small OpenID issuer for tests: a discovery document and a key set served by Bun.serve on
 * 127.0.0.1, and ID tokens minted at will (any claims, any algorithm, any key). It counts the reads
 * of its key set, can hold them (to make requests overlap), and can go down.
 */
export interface LocalIssuer {
  readonly url: string;
  readonly clientId: string;
  /** GETs of the key set so far. */
  readonly keyReads: number;
  /** Every request so far (discovery, keys), answered or not. */
  readonly requests: number;
  /** The kid of the newest published RSA key; tokens are signed with it unless told otherwise. */
  readonly kid: string;
  /** Publishes a new RSA key (the old ones stay unless `replace`), returns its kid. */
  rotate(opts?: { replace?: boolean }): Promise<string>;
  /** While true, discovery and keys answer 503. */
  down: boolean;
  /** Holds every key-set answer until the returned function is called. */
  holdKeys(): () => void;
  mint(claims?: Record<string, unknown>, opts?: MintOptions): Promise<string>;
  stop(): void;
}

export interface MintOptions {
  readonly alg?: "RS256" | "PS256" | "ES256" | "HS256" | "none";
  /** Header kid; defaults to the newest published key's. */
  readonly kid?: string | null;
  /** Sign with an RSA key that is not published. */
  readonly unpublishedKey?: boolean;
}

export const CLIENT_ID = "keyturn-desktop";
export const STAFF_GROUP = "keyturn-staff";

interface RsaKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  /** The same private key for RSA-PSS (PS256), to try PS256 with a published key. */
  readonly pssKey: CryptoKey;
  readonly jwk: JWK;
}

async function rsaKey(kid: string): Promise<RsaKey> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const pssKey = (await importJWK({ ...(await exportJWK(privateKey)), alg: "PS256" }, "PS256")) as CryptoKey;
  return { kid, privateKey, pssKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" } };
}

/** `now` is the test's clock (ms): tokens are issued at its time unless claims say otherwise. */
export async function startIssuer(now: () => number): Promise<LocalIssuer> {
  let keys: RsaKey[] = [await rsaKey("rsa-1")];
  /** Every key ever published, withdrawn ones too: tokens can still be signed with them. */
  const everyKey = [...keys];
  let counter = 1;
  const stray = await rsaKey("stray");
  const ec = await generateKeyPair("ES256", { extractable: true });
  const ecJwk = { ...(await exportJWK(ec.publicKey)), kid: "ec-1", alg: "ES256", use: "sig" };
  let reads = 0;
  let requests = 0;
  let gate: Promise<void> | null = null;

  const state = { down: false };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req): Promise<Response> {
      const path = new URL(req.url).pathname;
      requests++;
      if (state.down) return new Response("down", { status: 503 });
      if (path === "/.well-known/openid-configuration")
        return Response.json({
          issuer: url,
          jwks_uri: `${url}/jwks`,
          authorization_endpoint: `${url}/authorize`,
          token_endpoint: `${url}/token`,
          id_token_signing_alg_values_supported: ["RS256"],
        });
      if (path === "/jwks") {
        reads++;
        if (gate) await gate;
        return Response.json({ keys: [...keys.map((k) => k.jwk), ecJwk] });
      }
      return new Response("not found", { status: 404 });
    },
  });
  const url: string = `http://127.0.0.1:${server.port}`;

  return {
    url,
    clientId: CLIENT_ID,
    get keyReads() {
      return reads;
    },
    get requests() {
      return requests;
    },
    get kid() {
      return keys.at(-1)!.kid;
    },
    get down() {
      return state.down;
    },
    set down(v: boolean) {
      state.down = v;
    },
    async rotate(opts = {}) {
      const key = await rsaKey(`rsa-${++counter}`);
      everyKey.push(key);
      keys = opts.replace ? [key] : [...keys, key];
      return key.kid;
    },
    holdKeys() {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => {
        gate = null;
        release();
      };
    },
    async mint(claims = {}, opts = {}) {
      const iat = Math.floor(now() / 1000);
      const payload: JWTPayload = {
        iss: url,
        aud: CLIENT_ID,
        sub: "00u-grace",
        name: "Grace Hopper",
        email: "grace@example.com",
        iat,
        exp: iat + 300,
        auth_time: iat - 30,
        amr: ["pwd", "mfa"],
        groups: [STAFF_GROUP],
        ...claims,
      };
      for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
      const alg = opts.alg ?? "RS256";
      const newest = keys.at(-1)!;
      const kid = opts.kid === null ? undefined : (opts.kid ?? (alg === "ES256" ? "ec-1" : newest.kid));
      const header = { alg, typ: "JWT", ...(kid !== undefined ? { kid } : {}) };
      if (alg === "none") {
        const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
        return `${part(header)}.${part(payload)}.`;
      }
      const rsa = opts.unpublishedKey ? stray : (everyKey.find((k) => k.kid === kid) ?? newest);
      const key =
        alg === "ES256"
          ? ec.privateKey
          : alg === "HS256"
            ? new TextEncoder().encode(JSON.stringify(newest.jwk))
            : alg === "PS256"
              ? rsa.pssKey
              : rsa.privateKey;
      return new SignJWT(payload).setProtectedHeader(header).sign(key);
    },
    stop() {
      server.stop(true);
    },
  };
}
