import { sign, verify, type KeyObject } from "node:crypto";
import type { Variant } from "../../config/variants";
import { parseKid, type KeyRing, type PublicKeyInfo } from "../keys";
import { ReleaseProblem } from "./problem";

/**
 * A manifest's signature file holds a detached compact JWS (RFC 7515 appendix F): the compact
 * serialization `header.payload.signature` with the payload left out, `header..signature`.
 * The payload is the manifest's exact bytes; the header is `{ alg: "ES256", kid, typ }`.
 * A client rebuilds `header.<base64url(manifest bytes)>.signature` and verifies it as any JWS.
 */
const b64url = (data: string | Uint8Array) => Buffer.from(data).toString("base64url");
const DETACHED = /^([A-Za-z0-9_-]+)\.\.([A-Za-z0-9_-]+)$/;

export function signManifest(manifestBytes: Uint8Array, key: { kid: string; privateKey: KeyObject }, variant: Variant): string {
  const header = b64url(JSON.stringify({ alg: "ES256", kid: key.kid, typ: variant.releaseTyp }));
  const input = Buffer.from(`${header}.${b64url(manifestBytes)}`);
  const signature = sign("sha256", input, { key: key.privateKey, dsaEncoding: "ieee-p1363" });
  return `${header}..${b64url(signature)}`;
}

/** The release public keys of a key ring, by kid: the keys that may sign manifests. */
export function releaseKeysOf(ring: KeyRing): ReadonlyMap<string, PublicKeyInfo> {
  return new Map([...ring.verify].filter(([kid]) => parseKid(kid)?.purpose === "release"));
}

export interface ParsedSignature {
  readonly kid: string;
  readonly key: PublicKeyInfo;
  readonly header: string;
  readonly signature: Buffer;
}

/**
 * Reads a signature file and picks its key: ES256 only, this variant's typ, a release key we hold.
 * A trailing line break (editors add one) is tolerated; nothing else is.
 */
export function parseSignature(sigBytes: Uint8Array, keys: ReadonlyMap<string, PublicKeyInfo>, variant: Variant): ParsedSignature {
  const text = Buffer.from(sigBytes)
    .toString("latin1")
    .replace(/\r?\n$/, "");
  const m = DETACHED.exec(text);
  if (!m) throw new ReleaseProblem("signature is not a detached compact JWS (header..signature)");
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(m[1]!, "base64url").toString("utf8"));
    if (typeof header !== "object" || header === null || Array.isArray(header)) throw new Error();
  } catch {
    throw new ReleaseProblem("signature header is not a JSON object");
  }
  if (header.alg !== "ES256") throw new ReleaseProblem(`signature alg must be ES256 (got ${JSON.stringify(header.alg)})`);
  if (header.typ !== variant.releaseTyp) throw new ReleaseProblem(`signature typ must be ${variant.releaseTyp} (got ${JSON.stringify(header.typ)})`);
  if ("crit" in header || "b64" in header) throw new ReleaseProblem("signature header must not carry crit or b64");
  if (typeof header.kid !== "string") throw new ReleaseProblem("signature header has no kid");
  const key = keys.get(header.kid);
  if (!key || key.purpose !== "release") throw new ReleaseProblem(`signed with ${header.kid}, which is not a release key in the keys directory`);
  const signature = Buffer.from(m[2]!, "base64url");
  if (signature.length !== 64) throw new ReleaseProblem("signature is not an ES256 signature (64 bytes)");
  return { kid: header.kid, key, header: m[1]!, signature };
}

/**
 * Checks the signature over the manifest's exact bytes. node:crypto's synchronous verify is used
 * (about twice the rate of WebCrypto through jose, and no promise per folder) because a start with
 * thousands of release folders checks thousands of signatures; tests verify the same files with jose.
 */
export function checkSignature(manifestBytes: Uint8Array, parsed: ParsedSignature): void {
  const input = Buffer.from(`${parsed.header}.${b64url(manifestBytes)}`);
  if (!verify("sha256", input, { key: parsed.key.publicKey, dsaEncoding: "ieee-p1363" }, parsed.signature))
    throw new ReleaseProblem(`signature does not verify with ${parsed.kid} (manifest changed after signing, or signed with another key)`);
}
