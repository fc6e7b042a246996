import { edenGC } from "bun:jsc";
import { readdirSync, statSync, type Dirent, type Stats } from "node:fs";
import { join } from "node:path";
import type { Variant } from "../../config/variants";
import type { PublicKeyInfo } from "../keys";
import {
  hashFile,
  identityIn,
  identityOf,
  readRegularFile,
  releaseFilesOf,
  releaseFilesUnchanged,
  statInstaller,
  type FileIdentity,
  type ReleaseFiles,
} from "./files";
import { installerAdmitted, type InstallerVerifier } from "./installer-verification";
import { parseManifest, type Manifest, type ReleasePlace } from "./manifest";
import { checkFeedFiles } from "./feed-files";
import { ReleaseProblem } from "./problem";
import {
  etagOf,
  isServed,
  laneKey,
  newestFirst,
  releaseIn,
  ReleaseIndex,
  rootOf,
  sha256Of,
  ServedTreeRelease,
  type KnownRelease,
  type KnownReleases,
  type Release,
  type ServedRelease,
} from "./release-index";
import { checkSignature, parseSignature } from "./signature";
import { SignatureCache } from "./signature-cache";

/** Manifests and signatures are small; anything bigger is not one and is not read into memory. */
const MAX_MANIFEST_BYTES = 64 * 1024;
/** Folders scanned between two yields to the event loop, so a big first scan does not stall requests. */
const FOLDERS_PER_SLICE = 256;

export interface ScanOptions {
  readonly variant: Variant;
  /** Release public keys by kid. When there are none, signatures are not checked (docs/architecture.md). */
  readonly releaseKeys: ReadonlyMap<string, PublicKeyInfo>;
  /** Remembered good signatures; a fresh in-memory one when absent. */
  readonly signatures?: SignatureCache;
  /** `release check`: also hash every installer against the manifest's sha256 (never done by the server). */
  readonly hashInstallers?: boolean;
  /**
   * The live releases of the last scan (or snapshot) of this tree with these keys, by folder. One
   * whose three files are still the same files (lstat: device, inode, size, mtime, ctime) is taken
   * as it is instead of being read and checked again.
   */
  readonly previous?: KnownReleases;
  /**
   * The server's: a release is live only once its installer's bytes were hashed and found equal to
   * the manifest's sha256 (installer-verification.ts). Until then it is left out, as a folder still
   * being copied is, and its lane is listed in `verifying`.
   */
  readonly installers?: InstallerVerifier;
  /**
   * Where the index keeps what it holds of its releases without their bytes (release-table-rows.ts):
   * a long-running process's data directory. In memory when absent, as a command that scans once has it.
   */
  readonly tableDir?: string;
}

export interface ScanProblem {
  /** Relative to the tree's root, `/`-separated. */
  readonly folder: string;
  readonly reason: string;
}

export interface ScanResult {
  /** The live releases, each with the files it was read from (ReleaseIndex.filesOf, .known). */
  readonly index: ReleaseIndex;
  readonly problems: readonly ScanProblem[];
  /** Each directory above the release folders (root first), as it was before it was listed. */
  readonly directories: readonly { readonly rel: string; readonly id: FileIdentity }[];
  /** Lanes (laneKey) with a release left out only because its installer is still being hashed. */
  readonly verifying: ReadonlySet<string>;
  readonly stats: {
    readonly folders: number;
    /** Live releases taken from `previous` unread (their files unchanged). */
    readonly reused: number;
    /** Signatures checked with ECDSA during this scan, and those found in the cache. */
    readonly verified: number;
    readonly cached: number;
    readonly ms: number;
  };
}

/** The error when the tree's root itself cannot be read: the caller keeps what it had. */
export class ReleaseTreeUnreadable extends Error {}

const sha256Hex = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const isHidden = (name: string) => name.startsWith(".");

/** The directory levels above the release folders: product (when the variant has products), channel, platform. */
export function treeLevels(variant: Variant): { readonly name: keyof ReleasePlace; readonly values: readonly string[] }[] {
  return [
    ...(variant.products.length > 0 ? [{ name: "product" as const, values: variant.products }] : []),
    { name: "channel" as const, values: variant.channels },
    { name: "platform" as const, values: variant.platforms },
  ];
}

/**
 * Walks `<product>/<channel>/<platform>/<release folder>/` (gamma: no product level) and builds an
 * index of the live releases. Hidden entries (rsync's `.name.XXXXXX` temporaries among them) are
 * ignored; every other folder that is not a live release becomes one problem with its reason.
 */
export async function scanReleaseTree(root: string, opts: ScanOptions): Promise<ScanResult> {
  const started = performance.now();
  const signatures = opts.signatures ?? SignatureCache.open(null);
  signatures.beginScan();
  const levels = treeLevels(opts.variant);
  const problems: ScanProblem[] = [];
  const counts = { folders: 0, reused: 0, verified: 0, cached: 0 };
  const verifying = new Set<string>();
  opts.installers?.beginScan();

  const directories: { rel: string; id: FileIdentity }[] = [];
  const list = (dir: string, rel: string): Dirent[] => {
    // Stat before listing: a change made after the listing then shows as a changed directory.
    directories.push({ rel, id: identityOf(statSync(dir)) });
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => !isHidden(d.name))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  };
  let top: Dirent[];
  try {
    top = list(root, "");
  } catch (e) {
    throw new ReleaseTreeUnreadable(`cannot read the release tree ${root} (${(e as NodeJS.ErrnoException).code ?? e})`);
  }

  const folders: { dir: string; rel: string; place: ReleasePlace }[] = [];
  const walk = (dir: string, rel: string, entries: Dirent[], depth: number, place: Partial<Record<keyof ReleasePlace, string>>) => {
    for (const entry of entries) {
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isSymbolicLink()) {
        problems.push({ folder: childRel, reason: "is a symbolic link (not followed)" });
        continue;
      }
      if (!entry.isDirectory()) continue;
      const child = join(dir, entry.name);
      if (depth === levels.length) {
        folders.push({ dir: child, rel: childRel, place: { product: place.product ?? null, channel: place.channel!, platform: place.platform! } });
        continue;
      }
      const level = levels[depth]!;
      if (!level.values.includes(entry.name)) {
        problems.push({ folder: childRel, reason: `unknown ${level.name} (expected ${level.values.join(" or ")})` });
        continue;
      }
      let children: Dirent[];
      try {
        children = list(child, childRel);
      } catch (e) {
        problems.push({ folder: childRel, reason: `cannot be read (${(e as NodeJS.ErrnoException).code ?? e})` });
        continue;
      }
      walk(child, childRel, children, depth + 1, { ...place, [level.name]: entry.name });
    }
  };
  walk(root, "", top, 0, {});

  // Live releases in folder order (ties in the index keep it). Of those read, only each lane's newest
  // is held with its bytes, so a scan never holds every manifest and signature at once.
  const live: (KnownRelease | undefined)[] = [];
  const lanes = new Map<string, { readonly indices: number[]; newestRead?: { i: number; found: Inspected } }>();
  const read = (i: number): Inspected | null => {
    const folder = folders[i]!;
    try {
      const found = inspectFolder(folder.dir, folder.rel, folder.place, opts, signatures, counts, root);
      live[i] = { release: found.release, files: found.files };
      return admitted(i, live[i]!) ? found : null;
    } catch (e) {
      if (!(e instanceof ReleaseProblem)) throw e;
      problems.push({ folder: folder.rel, reason: e.message });
      live[i] = undefined;
      return null;
    }
  };
  /** Whether a live release's installer is verified; if not it leaves `live` (a problem when its bytes are wrong). */
  const admitted = (i: number, r: KnownRelease): boolean => {
    if (!opts.installers) return true;
    const verdict = installerAdmitted(opts.installers, r);
    if (verdict === true) return true;
    live[i] = undefined;
    const m = r.release.manifest;
    if (verdict === "pending") verifying.add(laneKey(m.product, m.channel, m.platform));
    else problems.push({ folder: folders[i]!.rel, reason: verdict });
    return false;
  };
  for (const [i, folder] of folders.entries()) {
    if (i > 0 && i % FOLDERS_PER_SLICE === 0) {
      // The slice's garbage (bytes, stats, parsed JSON) is collected before the next slice is read,
      // so its memory is reused by the next slice instead of the heap growing through the whole scan
      // with the releases kept scattered across it: 10,000 folders rose to 136 MB and settled at
      // 95 MB without this, and to 127 and 92 MB with it (bench/README.md, "4a and 5a, fourth round").
      edenGC();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    counts.folders++;
    const key = laneKey(folder.place.product, folder.place.channel, folder.place.platform);
    let lane = lanes.get(key);
    if (!lane) lanes.set(key, (lane = { indices: [] }));
    const known = opts.previous?.get(folder.rel);
    if (known && releaseFilesUnchanged(releasePaths(root, opts.variant, known.release), known.files)) {
      live[i] = known;
      if (!admitted(i, known)) continue;
      counts.reused++;
    } else {
      const found = read(i);
      if (!found) continue;
      if (!lane.newestRead || newestFirst(found.release, lane.newestRead.found.release) < 0) lane.newestRead = { i, found };
    }
    lane.indices.push(i);
  }
  // Each lane's newest release with its bytes: read above, taken unread with them, or (taken unread
  // without them) read now; one that no longer reads as a live release leaves its lane.
  const served = new Map<number, ServedRelease>();
  const readNow = new Map<number, Inspected>();
  for (const lane of lanes.values()) {
    for (let head = headOf(lane.indices, live); head !== null; head = headOf(lane.indices, live)) {
      const found = lane.newestRead?.i === head ? lane.newestRead.found : readNow.get(head);
      const release = live[head]!.release;
      const bytes = found ? servedOf(found) : isServed(release) ? release : null;
      if (bytes) {
        served.set(head, bytes);
        break;
      }
      // Read now (at most once each), it may have changed since its lstat: the head is chosen again.
      counts.reused--;
      const again = read(head);
      if (again) readNow.set(head, again);
    }
  }
  // A former newest taken unread keeps no bytes once another is its lane's newest.
  const files = new Map<Release, ReleaseFiles>();
  for (const [i, r] of live.entries()) if (r) files.set(served.get(i) ?? withoutBytes(r.release), r.files);
  problems.sort((a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0));
  return {
    index: ReleaseIndex.of([...files.keys()], null, rereaderOf(root, opts.variant, opts.releaseKeys, signatures), {
      filesOf: (r) => files.get(r),
      // Each live release's installer was verified by this scan (installerAdmitted): the index keeps its SHA-512 beside it.
      installerSha512Of: (r) => opts.installers?.sha512Of(identityIn(files.get(r)!, 2), sha256Of(r)) ?? undefined,
      tableDir: opts.tableDir,
    }),
    problems,
    directories,
    verifying,
    stats: { folders: counts.folders, reused: counts.reused, verified: counts.verified, cached: counts.cached, ms: performance.now() - started },
  };
}

/**
 * Made outside the scan's scope, so the index holds only what a read needs: the scan's scope holds
 * `opts.previous`, which would keep the previous index (and, through it, every earlier one) alive.
 */
function rereaderOf(root: string, variant: Variant, releaseKeys: ScanOptions["releaseKeys"], signatures: SignatureCache) {
  const opts: ScanOptions = { variant, releaseKeys };
  return (r: Release) => rereadRelease(root, r, opts, signatures);
}

/**
 * A live release's manifest and signature read and checked again (a staged rollout or a withdrawn
 * release makes a lane serve one kept without its bytes); null when it is no longer the release the
 * scan found (its re-scan is on its way: the tree is watched).
 */
export function rereadRelease(root: string, r: Release, opts: ScanOptions, signatures: SignatureCache): ServedRelease | null {
  let found: Inspected;
  try {
    found = inspectFolder(join(root, r.folder), r.folder, r.manifest, opts, signatures, { verified: 0, cached: 0 }, root);
  } catch (e) {
    if (e instanceof ReleaseProblem) return null;
    throw e;
  }
  const m = found.release.manifest;
  const same =
    (["version", "released", "installer", "size", "sha256"] as const).every((k) => m[k] === r.manifest[k]) &&
    JSON.stringify(m.rollout) === JSON.stringify(r.manifest.rollout) &&
    JSON.stringify(m.feeds) === JSON.stringify(r.manifest.feeds);
  return same ? servedOf({ ...found, release: r }) : null;
}

function withoutBytes(r: Release): Release {
  if (!isServed(r)) return r;
  const root = rootOf(r);
  return root !== null ? releaseIn(root, r.folder, r.manifest) : Object.freeze({ manifest: r.manifest, folder: r.folder, installerPath: r.installerPath });
}

/** The newest live release among `indices` (the first in folder order among equals). */
function headOf(indices: readonly number[], live: readonly (KnownRelease | undefined)[]): number | null {
  let best: number | null = null;
  for (const i of indices) if (live[i] && (best === null || newestFirst(live[i]!.release, live[best]!.release) < 0)) best = i;
  return best;
}

/** The manifest, signature and installer paths of a release of the tree at `root`. */
export function releasePaths(root: string, variant: Variant, r: Release): [manifest: string, signature: string, installer: string] {
  const dir = join(root, r.folder);
  return [join(dir, variant.manifestFile), join(dir, `${variant.manifestFile}.sig`), r.installerPath];
}

/** A live release folder as read: the release, its files' identities and its bytes. */
export interface Inspected {
  readonly release: Release;
  readonly files: ReleaseFiles;
  readonly manifestBytes: Uint8Array;
  readonly signatureBytes: Uint8Array;
}

/** The release with its bytes and their ETags, as the update path serves it. */
export function servedOf(r: Inspected): ServedRelease {
  const manifestEtag = etagOf(sha256Hex(r.manifestBytes));
  const signatureEtag = etagOf(sha256Hex(r.signatureBytes));
  const root = rootOf(r.release);
  if (root !== null) {
    const tree = { manifest: r.release.manifest, folder: r.release.folder, root };
    return Object.freeze(new ServedTreeRelease(tree, r.manifestBytes, manifestEtag, r.signatureBytes, signatureEtag));
  }
  const { manifest, folder, installerPath } = r.release;
  return Object.freeze({ manifest, folder, installerPath, manifestBytes: r.manifestBytes, manifestEtag, signatureBytes: r.signatureBytes, signatureEtag });
}

/** One release folder → a live release, or the ReleaseProblem that keeps it out. */
export function inspectFolder(
  dir: string,
  rel: string,
  place: ReleasePlace,
  opts: ScanOptions,
  signatures: SignatureCache,
  counts: { verified: number; cached: number },
  /** The tree's root, when `dir` is `rel` under it: one string all its releases share. */
  root?: string,
): Inspected {
  const manifestFile = opts.variant.manifestFile;
  // The identities of the files as read (fstat of the descriptor read), for the index snapshot.
  const files: FileIdentity[] = [];
  const manifestBytes = readRegularFile(join(dir, manifestFile), manifestFile, MAX_MANIFEST_BYTES, (s) => (files[0] = identityOf(s)));
  const manifest = parseManifest(manifestBytes, opts.variant, place);
  const signatureBytes = readRegularFile(join(dir, `${manifestFile}.sig`), `${manifestFile}.sig`, MAX_MANIFEST_BYTES, (s) => (files[1] = identityOf(s)));
  const installerPath = join(dir, manifest.installer);
  files[2] = identityOf(checkInstallerSize(installerPath, manifest));
  checkFeedFiles(dir, manifest.feeds, manifest.installer);

  if (opts.releaseKeys.size > 0) {
    const parsed = parseSignature(signatureBytes, opts.releaseKeys, opts.variant);
    const key = SignatureCache.keyOf(parsed.key.spki, signatureBytes, manifestBytes);
    if (signatures.has(key)) counts.cached++;
    else {
      checkSignature(manifestBytes, parsed);
      counts.verified++;
      signatures.add(key);
    }
  }
  if (opts.hashInstallers) checkInstallerHash(installerPath, manifest);

  return {
    // A folder of a tree (dir is root/rel): the installer's path is joined when asked, not kept.
    release: root !== undefined && join(root, rel) === dir ? releaseIn(root, rel, manifest) : Object.freeze({ manifest, folder: rel, installerPath }),
    files: releaseFilesOf(files[0]!, files[1]!, files[2]!),
    manifestBytes,
    signatureBytes,
  };
}

export function checkInstallerSize(path: string, manifest: Manifest): Stats {
  const stats = statInstaller(path, manifest.installer);
  const size = stats.size;
  if (size !== manifest.size) throw new ReleaseProblem(`installer ${manifest.installer} is ${size} bytes, the manifest says ${manifest.size}`);
  return stats;
}

export function checkInstallerHash(path: string, manifest: Manifest): void {
  if (hashFile(path) !== manifest.sha256) throw new ReleaseProblem(`installer ${manifest.installer} does not match the manifest's sha256`);
  if (manifest.sha512 !== undefined && hashFile(path, "sha512") !== manifest.sha512)
    throw new ReleaseProblem(`installer ${manifest.installer} does not match the manifest's sha512`);
  const velopack = manifest.feeds?.velopack;
  if (velopack && hashFile(path, "sha1") !== velopack.sha1)
    throw new ReleaseProblem(`installer ${manifest.installer} does not match the manifest's feeds.velopack.sha1`);
  const squirrel = manifest.feeds?.squirrel;
  if (squirrel && hashFile(path, "sha1") !== squirrel.sha1)
    throw new ReleaseProblem(`installer ${manifest.installer} does not match the manifest's feeds.squirrel.sha1`);
}

/**
 * The place a manifest's path puts it at: the folders above its release folder
 * (`.../<product>/<channel>/<platform>/<release>/<manifest>`). Used by `release sign`.
 */
export function placeOfManifestPath(path: string, variant: Variant): ReleasePlace {
  const parts = path.split(/[\\/]+/).filter((p) => p !== "" && p !== ".");
  const levels = treeLevels(variant);
  if (parts.at(-1) !== variant.manifestFile) throw new ReleaseProblem(`a ${variant.name} manifest is named ${variant.manifestFile}`);
  const above = parts.slice(-2 - levels.length, -2);
  if (above.length !== levels.length) throw new ReleaseProblem(`the manifest must sit in ${levels.map((l) => `<${l.name}>`).join("/")}/<release folder>/`);
  const place: Record<string, string | null> = { product: null };
  levels.forEach((level, i) => {
    if (!level.values.includes(above[i]!)) throw new ReleaseProblem(`${above[i]} is not a ${level.name} (expected ${level.values.join(" or ")})`);
    place[level.name] = above[i]!;
  });
  return place as unknown as ReleasePlace;
}
