import { createPrivateKey, type KeyObject } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { Variant } from "../config/variants";
import { parseKid } from "../domain/keys";
import { checkFeedFiles } from "../domain/releases/feed-files";
import { readRegularFile } from "../domain/releases/files";
import { parseManifest, type ReleasePlace } from "../domain/releases/manifest";
import { checkInstallerHash, checkInstallerSize } from "../domain/releases/scan";
import { signManifest } from "../domain/releases/signature";

/** A release private key as `release sign` and `release make --key` take it: `<variant>-release-YYYY-MM.pem`, P-256. */
export interface ReleaseSigningKey {
  readonly kid: string;
  readonly variant: string;
  readonly privateKey: KeyObject;
}

/** Why a key file cannot sign: its name (a usage error) or its contents. */
export class SigningKeyError extends Error {
  constructor(
    message: string,
    readonly badName: boolean,
  ) {
    super(message);
  }
}

/** The kid and variant a key file's name says, or null when it is not a release private key's name. */
export function releaseKidOf(path: string): { kid: string; variant: string } | null {
  const kid = basename(path).replace(/\.pem$/, "");
  const parsed = parseKid(kid);
  if (!path.endsWith(".pem") || !parsed || parsed.purpose !== "release") return null;
  return { kid, variant: parsed.variant };
}

export function loadReleaseKey(path: string): ReleaseSigningKey {
  const named = releaseKidOf(path);
  if (!named) throw new SigningKeyError(`--key must be a release private key named <variant>-release-YYYY-MM.pem (got "${basename(path)}")`, true);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(readFileSync(path, "utf8"));
    if (privateKey.asymmetricKeyDetails?.namedCurve !== "prime256v1") throw new Error("not a P-256 key");
  } catch (e) {
    throw new SigningKeyError(`cannot use ${path}: ${(e as Error).message}`, false);
  }
  return { ...named, privateKey };
}

/**
 * Checks a manifest the way keyturn will (fields, agreement with `place`, its installer's size and
 * hashes, its feed files) and writes `<manifest>.sig` beside it (under a temporary name, renamed).
 * Throws ReleaseProblem naming what is wrong; nothing is written then.
 */
export function signManifestFile(manifestPath: string, place: ReleasePlace, key: ReleaseSigningKey, variant: Variant): void {
  const bytes = readRegularFile(manifestPath, variant.manifestFile, 64 * 1024);
  const manifest = parseManifest(bytes, variant, place);
  const installer = join(dirname(manifestPath), manifest.installer);
  checkInstallerSize(installer, manifest);
  checkInstallerHash(installer, manifest);
  checkFeedFiles(dirname(manifestPath), manifest.feeds, manifest.installer);
  const sigPath = `${manifestPath}.sig`;
  const tmp = join(dirname(sigPath), `.${basename(sigPath)}.${process.pid}`);
  writeFileSync(tmp, signManifest(bytes, key, variant), { mode: 0o644 });
  renameSync(tmp, sigPath);
}
