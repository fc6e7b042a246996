import { lstatSync, readFileSync, renameSync, statSync, writeFileSync, type Stats } from "node:fs";
import { join } from "node:path";
import type { Variant } from "../../config/variants";
import type { PublicKeyInfo } from "../keys";
import { identityOf, type FileIdentity } from "./files";
import { ReleaseIndex, type Release } from "./release-index";
import type { ScanResult } from "./scan";

/**
 * The last built release index, kept in the data directory so a start can serve at once instead of
 * reading and checking every release folder first (10,000 folders: ~270 ms). At start it is used
 * only if nothing it rests on changed, checked by stat alone: the variant, the release keys and the
 * root it was built with; every directory above the release folders (a folder added, removed or
 * renamed changes its parent); and the manifest, signature and installer of each release (device,
 * inode, size, mtime, ctime as they were when read and checked). A release with any file changed is
 * left out, never served from the snapshot; the full re-scan that follows every start puts it back.
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

/** Writes the index of a whole scan (temp file and rename, so a reader never sees half of one). */
export function saveSnapshot(o: SnapshotOptions, scan: ScanResult): void {
  const snapshot: Snapshot = {
    format: FORMAT,
    basis: basisOf(o),
    directories: scan.directories,
    releases: scan.index.all.map((r) => ({
      folder: r.folder,
      manifest: r.manifest,
      manifestBytes: Buffer.from(r.manifestBytes).toString("base64"),
      signatureBytes: Buffer.from(r.signatureBytes).toString("base64"),
      manifestEtag: r.manifestEtag,
      signatureEtag: r.signatureEtag,
      installerEtag: r.installerEtag,
      files: r.files,
    })),
  };
  const tmp = `${o.file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(snapshot), { mode: 0o600 });
  renameSync(tmp, o.file);
}

export interface LoadedSnapshot {
  readonly index: ReleaseIndex;
  /** Releases of the snapshot left out because a file of theirs changed. */
  readonly changed: number;
}

/** The snapshot's index, with every changed release left out; null when there is none or it cannot be trusted. */
export function loadSnapshot(o: SnapshotOptions): LoadedSnapshot | null {
  let snapshot: Snapshot;
  try {
    snapshot = JSON.parse(readFileSync(o.file, "utf8")) as Snapshot;
  } catch {
    return null;
  }
  if (snapshot.format !== FORMAT || snapshot.basis !== basisOf(o)) return null;
  for (const d of snapshot.directories) if (!sameFile(statSync(join(o.root, d.rel), { throwIfNoEntry: false }), d.id)) return null;

  const releases: Release[] = [];
  let changed = 0;
  for (const r of snapshot.releases) {
    const dir = join(o.root, r.folder);
    const installerPath = join(dir, r.manifest.installer);
    const paths = [join(dir, o.variant.manifestFile), join(dir, `${o.variant.manifestFile}.sig`), installerPath];
    if (!paths.every((path, i) => sameFile(lstatSync(path, { throwIfNoEntry: false }), r.files[i]!))) {
      changed++;
      continue;
    }
    releases.push(
      Object.freeze({
        manifest: Object.freeze(r.manifest),
        folder: r.folder,
        manifestBytes: Buffer.from(r.manifestBytes, "base64"),
        manifestEtag: r.manifestEtag,
        signatureBytes: Buffer.from(r.signatureBytes, "base64"),
        signatureEtag: r.signatureEtag,
        installerEtag: r.installerEtag,
        installerPath,
        files: r.files,
      }),
    );
  }
  return { index: ReleaseIndex.of(releases), changed };
}

function sameFile(stats: Stats | undefined, id: FileIdentity): boolean {
  if (!stats || stats.isSymbolicLink()) return false;
  const now = identityOf(stats);
  return now.every((v, i) => v === id[i]);
}
