import { closeSync, constants, openSync, readSync } from "node:fs";
import type { Variant } from "../../config/variants";
import { isoTime } from "../clock";
import { parseManifest, type Manifest, type ReleasePlace } from "./manifest";
import { ReleaseProblem } from "./problem";

/** What a vendor's build knows of a release; the hashes and sizes are read from the files themselves. */
export interface ReleaseFacts extends ReleasePlace {
  readonly version: string;
  /** Milliseconds since the epoch; written as ISO 8601 with +00:00. */
  readonly released: number;
  readonly installer: { readonly name: string; readonly path: string };
  readonly notes?: string;
  readonly minimumVersion?: string;
  readonly critical?: boolean;
  /** `25%`/`25` (a fixed share) or `7d` (a ramp over seven days). */
  readonly rollout?: string;
  /** Files the feeds serve, by the name they take in the folder: electron's blockmap, Tauri's `.sig`. */
  readonly blockmap?: { readonly name: string; readonly path: string };
  readonly tauriSignature?: { readonly name: string; readonly path: string };
  readonly sparkle?: { readonly edSignature: string; readonly bundleVersion?: string };
  readonly velopackPackageId?: string;
}

/** A file's size and its digests, read in one pass. */
export interface FileDigests {
  readonly size: number;
  readonly sha256: string;
  readonly sha512: string;
  readonly sha1: string;
}

export function digestFile(path: string): FileDigests {
  const hashers = { sha256: new Bun.CryptoHasher("sha256"), sha512: new Bun.CryptoHasher("sha512"), sha1: new Bun.CryptoHasher("sha1") };
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY);
  } catch (e) {
    throw new ReleaseProblem(`${path} cannot be read (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  let size = 0;
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      size += n;
      for (const h of Object.values(hashers)) h.update(chunk.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return { size, sha256: hashers.sha256.digest("hex"), sha512: hashers.sha512.digest("hex"), sha1: hashers.sha1.digest("hex") };
}

/** `--rollout`: `25%` or `25` (percent), `7d` (a ramp of days). */
export function rolloutOf(text: string): { percent: number } | { days: number } {
  const days = /^(\d+(?:\.\d+)?)d$/.exec(text);
  if (days) return { days: Number(days[1]) };
  const percent = /^(\d+(?:\.\d+)?)%?$/.exec(text);
  if (percent) return { percent: Number(percent[1]) };
  throw new ReleaseProblem(`manifest rollout must be a percentage like 25% or a ramp like 7d (got ${JSON.stringify(text.slice(0, 40))})`);
}

/**
 * The manifest of a release, as bytes: the fields in the order docs/releases.md lists them, two
 * spaces of indent and a final line break (what a vendor writing it by hand would write), checked
 * by the same parser as the scan, so a refusal names the field as `release check` would.
 */
export function makeManifest(facts: ReleaseFacts, variant: Variant): { bytes: Buffer; manifest: Manifest } {
  const installer = digestFile(facts.installer.path);
  const feedFile = (f: { name: string; path: string }) => {
    const d = digestFile(f.path);
    return { file: f.name, size: d.size, sha256: d.sha256 };
  };
  const feeds: Record<string, unknown> = {};
  if (facts.blockmap) feeds.electron = { blockmap: feedFile(facts.blockmap) };
  if (facts.tauriSignature) feeds.tauri = { signature: feedFile(facts.tauriSignature) };
  if (facts.sparkle)
    feeds.sparkle = {
      edSignature: facts.sparkle.edSignature,
      ...(facts.sparkle.bundleVersion !== undefined ? { bundleVersion: facts.sparkle.bundleVersion } : {}),
    };
  if (facts.velopackPackageId !== undefined) feeds.velopack = { packageId: facts.velopackPackageId, sha1: installer.sha1 };
  const doc = {
    ...(facts.product !== null ? { product: facts.product } : {}),
    channel: facts.channel,
    platform: facts.platform,
    version: facts.version,
    released: isoTime(facts.released),
    installer: facts.installer.name,
    size: installer.size,
    sha256: installer.sha256,
    sha512: installer.sha512,
    ...(facts.notes !== undefined ? { notes: facts.notes } : {}),
    ...(facts.minimumVersion !== undefined ? { minimumVersion: facts.minimumVersion } : {}),
    ...(facts.critical !== undefined ? { critical: facts.critical } : {}),
    ...(facts.rollout !== undefined ? { rollout: rolloutOf(facts.rollout) } : {}),
    ...(Object.keys(feeds).length > 0 ? { feeds } : {}),
  };
  const bytes = Buffer.from(`${JSON.stringify(doc, null, 2)}\n`);
  return { bytes, manifest: parseManifest(bytes, variant, facts) };
}
