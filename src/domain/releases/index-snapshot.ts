import { lstatSync, readFileSync, renameSync, statSync, writeFileSync, type Stats } from "node:fs";
import { join } from "node:path";
import type { Variant } from "../../config/variants";
import type { PublicKeyInfo } from "../keys";
import { identityOf, type FileIdentity } from "./files";
import { ReleaseIndex, type Release } from "./release-index";
import { isInstallerName } from "./manifest";
import { treeLevels, type ScanResult } from "./scan";

/**
 * The last built release index, kept in the data directory so a start can serve at once instead of
 * reading and checking every release folder first (10,000 folders: ~270 ms). At start it is used
 * only if nothing it rests on changed, checked by stat alone: the variant, the release keys and the
 * root it was built with; every directory above the release folders (a folder added, removed or
 * renamed changes its parent); and the manifest, signature and installer of each release (device,
 * inode, size, mtime, ctime as they were when read and checked), checked when the release is first
 * answered. A release with any file changed is skipped, never served from the snapshot; the whole
 * scan that follows every start replaces the snapshot's index.
 */
const FORMAT = 1;

interface SnapshotRelease {
  readonly folder: string;
  readonly manifest: Release["manifest"];
  readonly manifestBytes: string;
  readonly signatureBytes: string;
  readonly manifestEtag: string;
  readonly signatureEtag: string;
  readonly installerEtag: string;
  readonly files: Release["files"];
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
}

/** What the checks were made against: a snapshot built on other keys, variant or root is not used. */
function basisOf(o: SnapshotOptions): string {
  const keys = [...o.releaseKeys.values()].map((k) => `${k.kid}=${k.spki}`).sort();
  return new Bun.CryptoHasher("sha256").update(JSON.stringify([o.variant.name, o.variant.manifestFile, o.root, keys])).digest("hex");
}

/** What the snapshot rests on, as one string: equal stamps mean an equal snapshot. */
function stampOf(directories: ScanResult["directories"], releases: readonly Release[]): string {
  return JSON.stringify([directories, releases.map((r) => [r.folder, r.files])]);
}

/**
 * Writes the index of a whole scan (temp file and rename, so a reader never sees half of one),
 * unless it rests on exactly the files of `previous` (the snapshot loaded at start). Returns the
 * snapshot now on disk.
 */
export function saveSnapshot(o: SnapshotOptions, scan: ScanResult, previous: LoadedSnapshot | null): LoadedSnapshot {
  const now: LoadedSnapshot = { index: scan.index, stamp: stampOf(scan.directories, scan.index.all) };
  if (previous?.stamp === now.stamp) return now; // nothing to write; keep no reference to the old index
  const snapshot: Snapshot = {
    format: FORMAT,
    basis: basisOf(o),
    directories: scan.directories,
    releases: scan.index.all.map((r) => ({
      folder: r.folder,
      manifest: r.manifest,
      // A manifest is UTF-8 (the scan decoded it strictly) and a signature a compact JWS (ASCII).
      manifestBytes: Buffer.from(r.manifestBytes).toString("utf8"),
      signatureBytes: Buffer.from(r.signatureBytes).toString("latin1"),
      manifestEtag: r.manifestEtag,
      signatureEtag: r.signatureEtag,
      installerEtag: r.installerEtag,
      files: r.files,
    })),
  };
  const tmp = `${o.file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(snapshot), { mode: 0o600 });
  renameSync(tmp, o.file);
  return now;
}

export interface LoadedSnapshot {
  readonly index: ReleaseIndex;
  /** What it rests on (stampOf), so a scan that found the same files does not write it again. */
  readonly stamp: string;
}

/**
 * The snapshot's index, or null when there is none or what it rests on changed. Each release's
 * files are checked by stat when it is first answered (ReleaseIndex's check), not here: 30,000
 * stats would take most of the time a start may take.
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
  const depth = treeLevels(o.variant).length + 1;
  const inTree = (r: SnapshotRelease) => {
    const parts = r.folder.split("/");
    return parts.length === depth && parts.every((p) => p !== "" && p !== ".." && !p.startsWith(".")) && isInstallerName(r.manifest.installer);
  };
  if (!snapshot.releases.every(inTree)) return null;

  const releases = snapshot.releases.map((r): Release => {
    const dir = join(o.root, r.folder);
    return Object.freeze({
      manifest: Object.freeze(r.manifest),
      folder: r.folder,
      manifestBytes: Buffer.from(r.manifestBytes, "utf8"),
      manifestEtag: r.manifestEtag,
      signatureBytes: Buffer.from(r.signatureBytes, "latin1"),
      signatureEtag: r.signatureEtag,
      installerEtag: r.installerEtag,
      installerPath: join(dir, r.manifest.installer),
      files: r.files,
    });
  });
  const unchanged = (r: Release) => {
    const dir = join(o.root, r.folder);
    const paths = [join(dir, o.variant.manifestFile), join(dir, `${o.variant.manifestFile}.sig`), r.installerPath];
    return paths.every((path, i) => sameFile(lstatSync(path, { throwIfNoEntry: false }), r.files[i]!));
  };
  const index = ReleaseIndex.of(releases, unchanged);
  // Computed when a scan asks (after the start), not now: nothing waits for it then.
  let stamp: string | undefined;
  return {
    index,
    get stamp() {
      return (stamp ??= stampOf(snapshot.directories, releases));
    },
  };
}

function sameFile(stats: Stats | undefined, id: FileIdentity): boolean {
  if (!stats || stats.isSymbolicLink()) return false;
  const now = identityOf(stats);
  return now.every((v, i) => v === id[i]);
}
