import { join } from "node:path";
import type { ReleaseFiles } from "./files";
import type { Manifest, ReleasePlace } from "./manifest";
import { PackedRelease, ReleaseTable } from "./release-table";
import { compareVersions } from "./version-order";

/** One live release as the index keeps it: what listing it and serving its installer need. */
export interface Release {
  readonly manifest: Manifest;
  /** The folder, relative to the tree's root (for logs and `release check`). */
  readonly folder: string;
  readonly installerPath: string;
}

/**
 * A release of a tree, as scans and snapshots make them: the installer's path is joined when asked
 * (a download, a feed, a scan) rather than kept, since the index holds every live release for good
 * (10,000 paths were about 1 MB; bench/README.md, 4a). Frozen by its makers (releaseIn, servedOf).
 */
export class TreeRelease implements Release {
  constructor(
    readonly manifest: Manifest,
    readonly folder: string,
    /** The tree's root, one string shared by all its releases. */
    readonly root: string,
  ) {}

  get installerPath(): string {
    return join(this.root, this.folder, this.manifest.installer);
  }
}

/** A tree's release with its manifest and signature bytes and their ETags. */
export class ServedTreeRelease extends TreeRelease implements ServedRelease {
  constructor(
    r: Pick<TreeRelease, "manifest" | "folder" | "root">,
    readonly manifestBytes: Uint8Array,
    readonly manifestEtag: string,
    readonly signatureBytes: Uint8Array,
    readonly signatureEtag: string,
  ) {
    super(r.manifest, r.folder, r.root);
  }
}

/** The release in `folder` of the tree at `root`. */
export const releaseIn = (root: string, folder: string, manifest: Manifest): TreeRelease => Object.freeze(new TreeRelease(manifest, folder, root));

/**
 * A release with its manifest and signature as read and checked, and their strong ETags (the
 * SHA-256, hex, quoted, of each body, so every mirror gives the same). The update path serves only
 * a lane's newest release, so only that one is kept with its bytes (10,000 releases with theirs
 * were most of the process's memory).
 */
export interface ServedRelease extends Release {
  readonly manifestBytes: Uint8Array;
  readonly manifestEtag: string;
  readonly signatureBytes: Uint8Array;
  readonly signatureEtag: string;
}

export const etagOf = (hex: string) => `"${hex}"`;

/** The installer's strong ETag: its SHA-256 as the manifest declares it. */
export const installerEtag = (r: Release) => etagOf(r.manifest.sha256);

export const isServed = (r: Release): r is ServedRelease => "manifestBytes" in r;

/** Newest first: by `released`, then by version (a packed release's read from its table, its manifest not made). */
export function newestFirst(a: Release, b: Release): number {
  return releasedOf(b) - releasedOf(a) || compareVersions(versionOf(b), versionOf(a));
}

const releasedOf = (r: Release) => (r instanceof PackedRelease ? r.released : r.manifest.released);

/** A release's version, without making a packed release's manifest. */
export const versionOf = (r: Release) => (r instanceof PackedRelease ? r.version : r.manifest.version);

/** A release's manifest's sha256, without making a packed release's manifest. */
export const sha256Of = (r: Release) => (r instanceof PackedRelease ? r.sha256 : r.manifest.sha256);

/** A release's product, channel and platform, without making a packed release's manifest. */
export const placeOf = (r: Release): ReleasePlace => (r instanceof PackedRelease ? r.place : r.manifest);

export const laneKey = (product: string | null, channel: string, platform: string) => `${product ?? ""}/${channel}/${platform}`;

interface Lane {
  readonly releases: readonly Release[];
  /** Those not in the table (each lane's newest, with its bytes), in the same order. */
  readonly unpacked: readonly Release[];
}

/** A live release with the identities of the files it was read from. */
export interface KnownRelease {
  readonly release: Release;
  readonly files: ReleaseFiles;
}

/** What an index keeps of each release beside it (ReleaseIndex.of). */
export interface IndexKeeping {
  readonly filesOf?: (r: Release) => ReleaseFiles | undefined;
  readonly installerSha512Of?: (r: Release) => string | undefined;
  readonly tableDir?: string;
}

/** The live releases of an index with their files, by folder: what the next scan may take unread. */
export interface KnownReleases {
  get(folder: string): KnownRelease | undefined;
}

/** The tree root a release was found under, when it is a tree's (its installer's path is then joined when asked). */
export const rootOf = (r: Release): string | null => (r instanceof TreeRelease || r instanceof PackedRelease ? r.root : null);

/**
 * What an index loaded from a snapshot checks before it answers with a release (index-snapshot.ts):
 * that its files are still those it was built from, and, for a release the snapshot kept without
 * its bytes, the bytes read from the tree again and checked as a scan checks them.
 */
export interface SnapshotChecks {
  holds(r: Release): boolean;
  reread(r: Release): ServedRelease | null;
}

/**
 * An immutable index of the live releases of one tree, by product, channel and platform. A new
 * scan builds a new index; readers keep whichever one they started with. Each lane's newest release
 * is a ServedRelease.
 *
 * An index loaded from a snapshot carries its checks: a release is checked the first time it would
 * be answered, and one that fails is skipped as if absent, so a changed release is never served from
 * a snapshot. The result is kept for the life of the index, which the scan that follows every start
 * soon replaces.
 */
export class ReleaseIndex {
  private readonly checked = new Map<Release, boolean>();
  private readonly reread = new Map<Release, ServedRelease | null>();

  private constructor(
    private readonly lanes: ReadonlyMap<string, Lane>,
    private readonly everything: readonly Release[],
    private readonly checks: SnapshotChecks | null,
    private readonly rereadBytes: ((r: Release) => ServedRelease | null) | null,
    /** The releases held without their bytes, packed (release-table.ts); null when none could be. */
    private readonly table: ReleaseTable | null,
    /** The files of the releases not in the table (each lane's newest), when they were given. */
    private readonly unpackedFiles: ReadonlyMap<Release, ReleaseFiles>,
    /** Their installers' SHA-512s as verified, when they were given. */
    private readonly unpackedSha512s: ReadonlyMap<Release, string>,
    /** Where each release stands in `everything`: the table's by row, the others by object. */
    private readonly rowPositions: Int32Array,
    private readonly unpackedPositions: ReadonlyMap<Release, number>,
  ) {}

  /**
   * `rereadBytes` (a scan's index): reads a release kept without its bytes when one other than its
   * lane's newest comes to be served (a staged rollout or a withdrawn release falls back to it).
   * `kept.filesOf`: the files each release was read from, kept for `known` and `filesOf`;
   * `kept.installerSha512Of`: its installer's SHA-512 as verified, kept for `installerSha512Of`. The
   * releases of a tree kept without their bytes are packed into one table, and the index answers
   * with the table's releases in their place; `kept.tableDir`: where the table keeps their bytes (in
   * memory when absent).
   */
  static of(
    releases: readonly Release[],
    checks: SnapshotChecks | null = null,
    rereadBytes: ((r: Release) => ServedRelease | null) | null = null,
    kept: IndexKeeping = {},
  ): ReleaseIndex {
    const filesOf = kept.filesOf ?? (() => undefined);
    const installerSha512Of = kept.installerSha512Of ?? (() => undefined);
    // Each release's order and lane read once: a packed release's manifest is made when asked.
    const keyed = releases.map((release) => {
      const place = release instanceof PackedRelease ? release.place : release.manifest;
      return { release, lane: laneKey(place.product, place.channel, place.platform), root: rootOf(release) };
    });
    // The sort is stable: ties keep the order given (a scan's folder order).
    keyed.sort((a, b) => newestFirst(a.release, b.release));
    const root = keyed.find((k) => k.root !== null && !isServed(k.release))?.root ?? null;
    const packs = (k: (typeof keyed)[number]) => root !== null && k.root === root && !isServed(k.release);
    const packed = keyed.filter(packs);
    const table =
      packed.length > 0
        ? ReleaseTable.pack(
            root!,
            packed.map((k) => ({ release: k.release, files: filesOf(k.release), installerSha512: installerSha512Of(k.release) })),
            kept.tableDir,
          )
        : null;
    const unpackedFiles = new Map<Release, ReleaseFiles>();
    const unpackedSha512s = new Map<Release, string>();
    const rowPositions = new Int32Array(packed.length);
    const unpackedPositions = new Map<Release, number>();
    let row = 0;
    const sorted = keyed.map((k, position) => {
      if (packs(k)) {
        rowPositions[row] = position;
        return table!.releaseAt(row++);
      }
      unpackedPositions.set(k.release, position);
      const files = filesOf(k.release);
      if (files) unpackedFiles.set(k.release, files);
      const sha512 = installerSha512Of(k.release);
      if (sha512 !== undefined) unpackedSha512s.set(k.release, sha512);
      return k.release;
    });
    const grouped = new Map<string, Release[]>();
    sorted.forEach((r, i) => {
      const key = keyed[i]!.lane;
      let list = grouped.get(key);
      if (!list) grouped.set(key, (list = []));
      list.push(r);
    });
    const lanes = new Map<string, Lane>();
    for (const [key, list] of grouped) {
      if (!checks && !isServed(list[0]!)) throw new Error(`the newest release of ${key} has no bytes`);
      lanes.set(key, Object.freeze({ releases: list, unpacked: list.filter((r) => !(r instanceof PackedRelease)) }));
    }
    // The lists are readonly by type, not frozen: JavaScriptCore keeps a frozen array as a sparse
    // map, 43 more bytes an element and its reads 8 times slower (bench/README.md, "4a and 5a, third round").
    return new ReleaseIndex(lanes, sorted, checks, rereadBytes, table, unpackedFiles, unpackedSha512s, rowPositions, unpackedPositions);
  }

  static readonly empty = ReleaseIndex.of([]);

  /** The files `r` (one of this index's releases) was read from, when they were given. */
  filesOf(r: Release): ReleaseFiles | undefined {
    return r instanceof PackedRelease ? r.files : this.unpackedFiles.get(r);
  }

  /** The SHA-512 (base64) of the installer of `r` (one of this index's releases) as verified, when it was given. */
  installerSha512Of(r: Release): string | undefined {
    return r instanceof PackedRelease ? r.installerSha512 : this.unpackedSha512s.get(r);
  }

  /** The releases with their files, by folder (those whose files were given). */
  readonly known: KnownReleases = {
    get: (folder: string): KnownRelease | undefined => {
      const row = this.table?.rowOf(folder) ?? -1;
      if (row >= 0) {
        const files = this.table!.filesAt(row);
        return files && { release: this.table!.releaseAt(row), files };
      }
      for (const [release, files] of this.unpackedFiles) if (release.folder === folder) return { release, files };
      return undefined;
    },
  };

  private holds = (r: Release): boolean => {
    if (!this.checks) return true;
    let ok = this.checked.get(r);
    if (ok === undefined) this.checked.set(r, (ok = this.checks.holds(r)));
    return ok;
  };

  /** A snapshot release with its bytes, read again when the snapshot kept none; null (and skipped from then on) when that fails. */
  private served(r: Release, checks: Pick<SnapshotChecks, "reread">): ServedRelease | null {
    if (isServed(r)) return r;
    let served = this.reread.get(r);
    if (served === undefined) this.reread.set(r, (served = checks.reread(r)));
    if (!served) this.checked.set(r, false);
    return served;
  }

  /** Every live release, newest first. */
  get all(): readonly Release[] {
    return this.checks ? this.everything.filter(this.holds) : this.everything;
  }

  /** Releases in the index (for a snapshot's index: before any was checked). */
  get size(): number {
    return this.everything.length;
  }

  /** The newest live release of a product (null in gamma), channel and platform, with its bytes. */
  latest(product: string | null, channel: string, platform: string): ServedRelease | undefined {
    const lane = this.lanes.get(laneKey(product, channel, platform));
    if (!lane) return undefined;
    if (!this.checks) return lane.releases[0] as ServedRelease;
    for (const r of lane.releases) {
      const served = this.holds(r) ? this.served(r, this.checks) : null;
      if (served) return served;
    }
    return undefined;
  }

  /** The live releases of a product (null in gamma), channel and platform, newest first. */
  releasesOf(product: string | null, channel: string, platform: string): readonly Release[] {
    const lane = this.lanes.get(laneKey(product, channel, platform));
    if (!lane) return [];
    return this.checks ? lane.releases.filter(this.holds) : lane.releases;
  }

  /** A live release with its manifest and signature bytes (read again if the index kept none); null when it no longer reads as live. */
  withBytes(r: Release): ServedRelease | null {
    if (isServed(r)) return r;
    if (this.checks) return this.holds(r) ? this.served(r, this.checks) : null;
    if (this.rereadBytes) return this.served(r, { reread: this.rereadBytes });
    return null;
  }

  /** The live releases of that product, channel and platform whose installer has exactly this name, newest first: several may share one. */
  *installersNamed(product: string | null, channel: string, platform: string, name: string): Generator<Release> {
    const lane = this.lanes.get(laneKey(product, channel, platform));
    if (!lane) return;
    // Found by name, not by walking the lane: a download asks on every request, and a lane may hold thousands.
    const named = lane.unpacked.filter((r) => r.manifest.installer === name).map((r) => ({ r, at: this.unpackedPositions.get(r)! }));
    for (const row of this.table?.rowsNamed(name) ?? []) {
      const place = this.table!.placeAt(row);
      if (place.product === product && place.channel === channel && place.platform === platform)
        named.push({ r: this.table!.releaseAt(row), at: this.rowPositions[row]! });
    }
    named.sort((a, b) => a.at - b.at);
    for (const { r } of named) if (this.holds(r)) yield r;
  }
}
