import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Variant } from "../config/variants";

export type KeyPurpose = "license" | "release";

export interface PublicKeyInfo {
  readonly kid: string;
  readonly purpose: KeyPurpose;
  /** SubjectPublicKeyInfo, DER, base64: what vendors compile into their programs. */
  readonly spki: string;
  readonly publicKey: KeyObject;
  /** The same key for WebCrypto (jose verifies with it). */
  readonly cryptoKey: CryptoKey;
}

export interface KeyRing {
  /** The newest license key (by the year and month in its kid), or null when there is none. */
  readonly signing: { readonly kid: string; readonly privateKey: KeyObject } | null;
  /** Every key of this variant that verifies, by kid. */
  readonly verify: ReadonlyMap<string, PublicKeyInfo>;
  /** Problems worth a warning at start (loose permissions, unreadable files). */
  readonly warnings: readonly string[];
}

const KID = /^(alpha|beta|gamma)-(license|release)-(\d{4})-(\d{2})(?:-([a-z0-9]{1,16}))?$/;

export interface ParsedKid {
  readonly variant: string;
  readonly purpose: KeyPurpose;
  /** YYYY-MM plus the optional suffix, comparable as text: newer sorts later. */
  readonly order: string;
}

export function parseKid(kid: string): ParsedKid | null {
  const m = KID.exec(kid);
  if (!m || Number(m[4]) < 1 || Number(m[4]) > 12) return null;
  return { variant: m[1]!, purpose: m[2] as KeyPurpose, order: `${m[3]}-${m[4]}${m[5] ? `-${m[5]}` : ""}` };
}

export function defaultKid(variant: Variant, purpose: KeyPurpose, now: Date): string {
  const ym = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}`;
  return `${variant.name}-${purpose}-${ym}`;
}

export function spkiBase64(publicKey: KeyObject): string {
  return (publicKey.export({ type: "spki", format: "der" }) as Buffer).toString("base64");
}

export async function toCryptoKey(publicKey: KeyObject): Promise<CryptoKey> {
  const der = new Uint8Array(publicKey.export({ type: "spki", format: "der" }) as Buffer);
  return crypto.subtle.importKey("spki", der, { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]);
}

export function isP256(key: KeyObject): boolean {
  return key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1";
}

/**
 * Reads every `<kid>.pem` (PKCS#8 private) and `<kid>.pub.pem` (SPKI public) of this variant in
 * `dir`. Files of other variants are left alone, so one directory can serve several.
 */
export async function loadKeyRing(dir: string, variant: Variant): Promise<KeyRing> {
  const warnings: string[] = [];
  const privates = new Map<string, KeyObject>();
  const publics = new Map<string, KeyObject>();
  const names = existsSync(dir) ? readdirSync(dir).sort() : [];
  for (const name of names) {
    const m = /^(.+?)(\.pub)?\.pem$/.exec(name);
    if (!m) continue;
    const kid = m[1]!;
    const parsed = parseKid(kid);
    if (!parsed || parsed.variant !== variant.name) continue;
    const path = join(dir, name);
    try {
      const pem = readFileSync(path, "utf8");
      if (m[2]) {
        const key = createPublicKey(pem);
        if (!isP256(key)) throw new Error("not a P-256 key");
        publics.set(kid, key);
      } else {
        const loose = looseMode(statSync(path).mode);
        if (loose) warnings.push(`key file ${path} ${loose}`);
        const key = createPrivateKey(pem);
        if (!isP256(key)) throw new Error("not a P-256 key");
        privates.set(kid, key);
      }
    } catch (e) {
      warnings.push(`key file ${path} skipped: ${(e as Error).message}`);
    }
  }
  for (const [kid, key] of privates) if (!publics.has(kid)) publics.set(kid, createPublicKey(key));

  const verify = new Map<string, PublicKeyInfo>();
  for (const [kid, publicKey] of publics) {
    const purpose = parseKid(kid)!.purpose;
    verify.set(kid, { kid, purpose, spki: spkiBase64(publicKey), publicKey, cryptoKey: await toCryptoKey(publicKey) });
  }
  const newestLicense = [...privates.keys()]
    .filter((kid) => parseKid(kid)!.purpose === "license")
    .sort((a, b) => (parseKid(a)!.order < parseKid(b)!.order ? -1 : 1))
    .at(-1);
  const pinned = readSigningPin(dir, variant);
  if (pinned !== null && !privates.has(pinned))
    warnings.push(`${signingPinPath(dir, variant)} names ${pinned}, whose private key is not in ${dir}: the newest license key signs`);
  const signs = pinned !== null && privates.has(pinned) ? pinned : newestLicense;
  return {
    signing: signs ? { kid: signs, privateKey: privates.get(signs)! } : null,
    verify,
    warnings,
  };
}

/**
 * Which license key signs, when the operator chose one (`keyturn keys rotate` / `keys promote`): a
 * file `<variant>-license.signing` in the keys directory holding its kid. Without it the newest
 * signs; with it, a newer key is published (in /meta and the feed) and verifies, but signs only
 * once promoted, so programs and mirrors can carry it first.
 */
export function signingPinPath(dir: string, variant: Variant): string {
  return join(dir, `${variant.name}-license.signing`);
}

export function readSigningPin(dir: string, variant: Variant): string | null {
  const path = signingPinPath(dir, variant);
  if (!existsSync(path)) return null;
  const kid = readFileSync(path, "utf8").trim();
  const parsed = parseKid(kid);
  return parsed && parsed.variant === variant.name && parsed.purpose === "license" ? kid : null;
}

/** Names the key that signs (written whole, then renamed over the old file, so a reload never reads half of it). */
export function writeSigningPin(dir: string, variant: Variant, kid: string): void {
  const path = signingPinPath(dir, variant);
  writeFileSync(`${path}.tmp`, `${kid}\n`, { mode: 0o644 });
  renameSync(`${path}.tmp`, path);
}

/** A license key's part in a rotation: the one that signs, newer ones published ahead, older ones still verifying. */
export type LicenseKeyRole = "signing" | "next" | "previous";

export function licenseKeyRole(kid: string, signing: string): LicenseKeyRole {
  if (kid === signing) return "signing";
  return parseKid(kid)!.order > parseKid(signing)!.order ? "next" : "previous";
}

/**
 * The rule for a private key file (docs/operating.md "Signing keys and rotation"): readable by the
 * service and no one else; written by its owner only. So 0600 owned by the service user, or 0640
 * owned by root with the service's group. Anything more open is named (a warning at start).
 */
export function looseMode(mode: number): string | null {
  const bits = mode & 0o777;
  if ((bits & 0o027) === 0) return null;
  const what = bits & 0o007 ? "is open to every user" : "is writable by its group";
  return `${what} (mode ${bits.toString(8).padStart(4, "0")}): make it 0600 owned by the service user, or 0640 owned by root with the service's group`;
}

/**
 * The license private keys of this variant in `dir` that cannot be used, each with why (cannot be
 * read by this process, not a P-256 PKCS#8 key); also the directory itself when it exists but cannot
 * be listed. `serve` refuses to start on any: licensing would be silently off (every activation 503).
 */
export function unusableLicenseKeys(dir: string, variant: Variant): { path: string; why: string }[] {
  if (!existsSync(dir)) return [];
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (e) {
    return [{ path: dir, why: `cannot be listed: ${describe(e)}` }];
  }
  const found: { path: string; why: string }[] = [];
  for (const name of names) {
    const m = /^(.+)\.pem$/.exec(name);
    if (!m || name.endsWith(".pub.pem")) continue;
    const parsed = parseKid(m[1]!);
    if (!parsed || parsed.variant !== variant.name || parsed.purpose !== "license") continue;
    const path = join(dir, name);
    try {
      const key = createPrivateKey(readFileSync(path, "utf8"));
      if (!isP256(key)) found.push({ path, why: "is not a P-256 key" });
    } catch (e) {
      found.push({ path, why: `cannot be read as a private key: ${describe(e)}` });
    }
  }
  return found;
}

function describe(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (err.code === "EACCES" || err.code === "EPERM")
    return `permission denied to uid ${process.getuid?.() ?? "?"} (make it 0600 owned by the service user, or 0640 with the service's group)`;
  if (err.code === "EISDIR") return "it is a directory";
  return err.code ? `${err.code} ${err.message}` : err.message;
}

/** The private key files (`*.pem` but not `*.pub.pem`, of any variant) in `dir`: a mirror must hold none. */
export function privateKeyFiles(dir: string): string[] {
  const names = existsSync(dir) ? readdirSync(dir).sort() : [];
  return names.filter((n) => n.endsWith(".pem") && !n.endsWith(".pub.pem"));
}

export class KeyExistsError extends Error {}

/** Writes a new P-256 key pair as `<kid>.pem` (0600) and `<kid>.pub.pem`; refuses to overwrite. */
export function generateKeyFiles(dir: string, kid: string): { kid: string; spki: string; privatePath: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const privatePath = join(dir, `${kid}.pem`);
  const publicPath = join(dir, `${kid}.pub.pem`);
  if (existsSync(privatePath) || existsSync(publicPath)) throw new KeyExistsError(`a key with kid ${kid} already exists in ${dir}`);
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  // "wx": fail rather than overwrite, even if another process created the file a moment ago.
  writeFileSync(privatePath, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600, flag: "wx" });
  writeFileSync(publicPath, publicKey.export({ type: "spki", format: "pem" }), { mode: 0o644, flag: "wx" });
  return { kid, spki: spkiBase64(publicKey), privatePath };
}
