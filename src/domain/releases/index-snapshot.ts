import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Variant } from "../../config/variants";
import type { PublicKeyInfo } from "../keys";
import { identityIn, releaseFilesUnchanged, sameFile, sameFiles, type ReleaseFiles } from "./files";
import type { InstallerVerifier } from "./installer-verification";
import { isInstallerName, type Manifest, type ReleasePlace } from "./manifest";
import { ReleaseProblem } from "./problem";
import { isServed, releaseIn, ReleaseIndex, type KnownReleases, type Release } from "./release-index";
import { inspectFolder, releasePaths, servedOf, treeLevels, type Inspected, type ScanResult } from "./scan";
import { SignatureCache } from "./signature-cache";

/**
 * The last built release index, kept in the data directory so a start can serve at once instead of
 * reading and checking every release folder first (bench/README.md). At start it is used
 * only if nothing it rests on changed, checked by stat alone: the variant, the release keys and the
 * root it was built with; every directory above the release folders (a folder added, removed or
 * renamed changes its parent); and the manifest, signature and installer of each release (device,
 * inode, size, mtime, ctime as they were when read and checked), checked when the release is first
 * answered. A release with any file changed is skipped, never served from the snapshot; the whole
 * scan that follows every start replaces the snapshot's index. Only each lane's newest release is
 * kept with its manifest and signature bytes, as in the index (release-index.ts).
 */
const FORMAT = 5;

interface SnapshotRelease {
  readonly folder: string;
  /** Product, channel and platform are the folder's. */
  readonly manifest: Omit<Manifest, keyof ReleasePlace>;
  readonly files: ReleaseFiles;
  /** A lane's newest release only: its manifest (UTF-8, as the scan decoded it) and signature (a compact JWS, ASCII). */
  readonly manifestBytes?: string;
  readonly signatureBytes?: string;
}

interface Snapshot {
  readonly format: number;
  readonly basis: string;
  readonly directories: ScanResult["directories"];
  readonly releases: readonly SnapshotRelease[];
}

export interface SnapshotOptions {
  readonly file: string;
  readonly root: string;
  readonly variant: Variant;
  readonly releaseKeys: ReadonlyMap<string, PublicKeyInfo>;
  /** Used when a release the snapshot kept without its bytes is read again. */
  readonly signatures?: SignatureCache;
  /** When given, a release is answered only if its installer's identity is among the verified ones (a snapshot of a keyturn that did not verify installers, or a deleted cache, serves nothing unverified). */
  readonly installers?: InstallerVerifier;
}

/** What the checks were made against: a snapshot built on other keys, variant or root is not used. */
function basisOf(o: SnapshotOptions): string {
  const keys = [...o.releaseKeys.values()].map((k) => `${k.kid}=${k.spki}`).sort();
  return new Bun.CryptoHasher("sha256").update(JSON.stringify([o.variant.name, o.variant.manifestFile, o.root, keys])).digest("hex");
}

/** What the snapshot rests on, hashed (the text is megabytes at 10,000 releases): equal stamps mean an equal snapshot. */
function stampOf(directories: ScanResult["directories"], index: ReleaseIndex): string {
  const text = JSON.stringify([directories, index.all.map((r) => [r.folder, index.filesOf(r)])]);
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

/**
 * Writes the index of a whole scan (temp file and rename, so a reader never sees half of one),
 * unless it rests on exactly the files of `previous` (the snapshot loaded at start). Returns the
 * snapshot now on disk.
 */
export function saveSnapshot(o: SnapshotOptions, scan: ScanResult, previous: LoadedSnapshot | null): LoadedSnapshot {
  const now: LoadedSnapshot = { index: scan.index, known: scan.index.known, stamp: stampOf(scan.directories, scan.index) };
  if (previous?.stamp === now.stamp) return now; // nothing to write; keep no reference to the old index
  const snapshot: Snapshot = {
    format: FORMAT,
    basis: basisOf(o),
    directories: scan.directories,
    releases: scan.index.all.map((r) => {
      const { product, channel, platform, ...manifest } = r.manifest;
      return {
        folder: r.folder,
        manifest,
        files: scan.index.filesOf(r)!,
        ...(isServed(r)
          ? { manifestBytes: Buffer.from(r.manifestBytes).toString("utf8"), signatureBytes: Buffer.from(r.signatureBytes).toString("latin1") }
          : {}),
      };
    }),
  };
  const tmp = `${o.file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(snapshot), { mode: 0o600 });
  renameSync(tmp, o.file);
  return now;
}

export interface LoadedSnapshot {
  readonly index: ReleaseIndex;
  /** The snapshot's releases with their files, by folder: what the scan after the start may take unread. */
  readonly known: KnownReleases;
  /** What it rests on (stampOf), so a scan that found the same files does not write it again. */
  readonly stamp: string;
}

/**
 * The snapshot's index, or null when there is none or what it rests on changed. Each release's
 * files are checked by stat when it is first answered (ReleaseIndex's check), not here: 30,000
 * stats would take most of the time a start may take. The manifest and signature of a release the
 * snapshot kept without them (not its lane's newest) are read from the tree only if it comes to be
 * served, and then checked as a scan checks them.
 */
export function loadSnapshot(o: SnapshotOptions): LoadedSnapshot | null {
  let snapshot: Snapshot;
  try {
    snapshot = JSON.parse(readFileSync(o.file, "utf8")) as Snapshot;
  } catch {
    return null;
  }
  if (snapshot.format !== FORMAT || snapshot.basis !== basisOf(o)) return null;
  for (const d of snapshot.directories) if (!sameFile(statSync(join(o.root, d.rel), { throwIfNoEntry: false }), d.id)) return null;

  // The data directory is trusted, but a snapshot still names nothing outside the release tree.
  const places = snapshot.releases.map((r) => (isInstallerName(r.manifest.installer) ? placeOfFolder(r.folder, o.variant) : null));
  if (places.includes(null)) return null;

  const files = new Map<Release, ReleaseFiles>();
  const releases = snapshot.releases.map((r, i): Release => {
    const m = r.manifest;
    const manifest: Manifest = Object.freeze({
      ...places[i]!,
      version: m.version,
      released: m.released,
      installer: m.installer,
      size: m.size,
      sha256: m.sha256,
      rollout: m.rollout ?? null,
      feeds: m.feeds ?? null,
      ...(m.requiresFeature !== undefined ? { requiresFeature: m.requiresFeature } : {}),
    });
    const release: Release = releaseIn(o.root, r.folder, manifest);
    const served =
      r.manifestBytes !== undefined && r.signatureBytes !== undefined
        ? servedOf({ release, files: r.files, manifestBytes: Buffer.from(r.manifestBytes, "utf8"), signatureBytes: Buffer.from(r.signatureBytes, "latin1") })
        : release;
    files.set(served, r.files);
    return served;
  });
  // The index packs the releases it keeps without bytes and answers with its own objects: their
  // files are the index's to tell (filesOf), not this map's.
  let index: ReleaseIndex | null = null;
  const filesOf = (r: Release) => index!.filesOf(r)!;
  const holds = (r: Release) =>
    releaseFilesUnchanged(releasePaths(o.root, o.variant, r), filesOf(r)) &&
    (!o.installers || o.installers.holds(identityIn(filesOf(r), 2), r.manifest.sha256));
  const reread = (r: Release) => {
    let found: Inspected;
    try {
      found = inspectFolder(join(o.root, r.folder), r.folder, r.manifest, o, o.signatures ?? SignatureCache.open(null), { verified: 0, cached: 0 }, o.root);
    } catch (e) {
      if (e instanceof ReleaseProblem) return null;
      throw e;
    }
    const same = sameFiles(found.files, filesOf(r));
    const m = found.release.manifest;
    const agrees =
      (["version", "released", "installer", "size", "sha256"] as const).every((k) => m[k] === r.manifest[k]) &&
      JSON.stringify(m.rollout) === JSON.stringify(r.manifest.rollout) &&
      JSON.stringify(m.feeds) === JSON.stringify(r.manifest.feeds) &&
      m.requiresFeature === r.manifest.requiresFeature;
    return same && agrees ? servedOf(found) : null;
  };
  const loaded = ReleaseIndex.of(releases, { holds, reread }, null, { filesOf: (r) => files.get(r) });
  index = loaded;
  // Computed when a scan asks (after the start), not now: nothing waits for it then. The closures
  // here name none of the parsed snapshot but what they use, so they do not keep the rest of it.
  const directories = snapshot.directories;
  let stamp: string | undefined;
  return {
    index: loaded,
    known: loaded.known,
    get stamp() {
      return (stamp ??= stampOf(directories, loaded));
    },
  };
}

/** The place of a release folder named `<product>/<channel>/<platform>/<release>` (gamma: no product), or null when it is not one. */
function placeOfFolder(folder: string, variant: Variant): ReleasePlace | null {
  const levels = treeLevels(variant);
  const parts = folder.split("/");
  if (parts.length !== levels.length + 1 || !parts.every((p) => p !== "" && p !== ".." && !p.startsWith("."))) return null;
  const place: Record<string, string | null> = { product: null, channel: null, platform: null };
  for (const [i, level] of levels.entries()) {
    // The level's own string, so 10,000 releases share a handful.
    const value = level.values.find((v) => v === parts[i]);
    if (value === undefined) return null;
    place[level.name] = value;
  }
  return place as unknown as ReleasePlace;
}
