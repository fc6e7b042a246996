import { KeyturnClientError, type SignatureReason } from "./errors.js";
import { b64url, encoder, fromB64url } from "./encoding.js";
import type { KeySet } from "./keys.js";
import type { ClientVariant } from "./variants.js";

/** What a program asks about: its product (alpha, beta only), channel and platform. */
export interface Lane {
  readonly product?: string;
  readonly channel: string;
  readonly platform: string;
}

/** A release as its signed manifest describes it. */
export interface Release {
  readonly product?: string;
  readonly channel: string;
  readonly platform: string;
  readonly version: string;
  readonly released: string;
  readonly installer: string;
  readonly size: number;
  readonly sha256: string;
  readonly notes?: string;
  readonly minimumVersion?: string;
  readonly critical: boolean;
  /** The signature file's kid: the release key that signed this manifest. */
  readonly signedBy: string;
}

const DETACHED = /^([A-Za-z0-9_-]+)\.\.([A-Za-z0-9_-]+)$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
const INSTALLER = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/;

function refuse(reason: SignatureReason, message: string): never {
  throw new KeyturnClientError("signature_invalid", message, { reason });
}

/**
 * Checks a manifest's detached signature (`header..signature`, RFC 7515 appendix F) over the
 * manifest's exact bytes: ES256 only, the variant's release typ, a compiled-in release key by kid.
 * Returns the kid that signed it.
 */
export async function verifyManifestSignature(manifest: Uint8Array, sigFile: Uint8Array, variant: ClientVariant, keys: KeySet): Promise<string> {
  const text = new TextDecoder("latin1").decode(sigFile).replace(/\r?\n$/, "");
  const m = DETACHED.exec(text);
  if (!m) refuse("malformed", "the signature file is not a detached compact JWS (header..signature)");
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(fromB64url(m[1]!)));
    if (typeof header !== "object" || header === null || Array.isArray(header)) throw new Error();
  } catch {
    return refuse("malformed", "the signature header is not a base64url JSON object");
  }
  if (header.alg !== "ES256") refuse("alg", `signature alg must be ES256 (got ${JSON.stringify(header.alg)})`);
  if (header.typ !== variant.releaseTyp) refuse("typ", `signature typ must be ${variant.releaseTyp} (got ${JSON.stringify(header.typ)})`);
  if ("crit" in header || "b64" in header) refuse("malformed", "signature header must not carry crit or b64");
  if (typeof header.kid !== "string" || !keys.has(header.kid)) refuse("kid", `signed with ${JSON.stringify(header.kid)}, not a compiled-in release key`);
  const signature = fromB64url(m[2]!);
  const input = encoder.encode(`${m[1]}.${b64url(manifest)}`);
  const ok =
    signature.length === 64 &&
    (await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, await keys.get(header.kid), signature as Uint8Array<ArrayBuffer>, input));
  if (!ok) refuse("signature", `the manifest's signature does not verify with ${header.kid} (changed after signing, or signed by another key)`);
  return header.kid;
}

function bad(message: string): never {
  throw new KeyturnClientError("manifest_invalid", message);
}

/** Parses a (signature-checked) manifest and checks it is for the lane that was asked for. */
export function parseManifest(bytes: Uint8Array, variant: ClientVariant, lane: Lane, signedBy: string): Release {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return bad("the manifest is not JSON");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) bad("the manifest is not a JSON object");
  const m = doc as Record<string, unknown>;
  const text = (name: string, rule?: RegExp): string => {
    const v = m[name];
    if (typeof v !== "string" || (rule && !rule.test(v))) bad(`manifest ${name} is missing or malformed`);
    return v;
  };
  const wantProduct = variant.products.length > 0 ? lane.product : undefined;
  if (m.product !== wantProduct) bad(`manifest is for product ${JSON.stringify(m.product)}, not ${JSON.stringify(wantProduct)}`);
  if (m.channel !== lane.channel) bad(`manifest is for channel ${JSON.stringify(m.channel)}, not ${lane.channel}`);
  if (m.platform !== lane.platform) bad(`manifest is for platform ${JSON.stringify(m.platform)}, not ${lane.platform}`);
  const installer = text("installer", INSTALLER);
  if (installer.includes("..")) bad("manifest installer must be a bare file name");
  if (!Number.isSafeInteger(m.size) || (m.size as number) < 0) bad("manifest size must be a whole number of bytes");
  if (m.notes !== undefined) text("notes");
  if (m.minimumVersion !== undefined) text("minimumVersion", VERSION);
  if (m.critical !== undefined && typeof m.critical !== "boolean") bad("manifest critical must be true or false");
  return {
    ...(wantProduct !== undefined ? { product: wantProduct } : {}),
    channel: lane.channel,
    platform: lane.platform,
    version: text("version", VERSION),
    released: text("released"),
    installer,
    size: m.size as number,
    sha256: text("sha256", SHA256_HEX),
    ...(m.notes !== undefined ? { notes: m.notes as string } : {}),
    ...(m.minimumVersion !== undefined ? { minimumVersion: m.minimumVersion as string } : {}),
    critical: m.critical === true,
    signedBy,
  };
}
