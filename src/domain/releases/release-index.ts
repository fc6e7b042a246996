import { join } from "node:path";
import type { Manifest } from "./manifest";
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
    r: TreeRelease,
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

/** Newest first: by `released`, then by version. */
export function newestFirst(a: Release, b: Release): number {
  return b.manifest.released - a.manifest.released || compareVersions(b.manifest.version, a.manifest.version);
}

export const laneKey = (product: string | null, channel: string, platform: string) => `${product ?? ""}/${channel}/${platform}`;

interface Lane {
  readonly releases: readonly Release[];
  /** Installer name → the live releases that name it, newest first (most names are one release's). */
  readonly installers: ReadonlyMap<string, Release | readonly Release[]>;
}

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
  ) {}

  /**
   * `rereadBytes` (a scan's index): reads a release kept without its bytes when one other than its
   * lane's newest comes to be served (a staged rollout or a withdrawn release falls back to it).
   */
  static of(
    releases: readonly Release[],
    checks: SnapshotChecks | null = null,
    rereadBytes: ((r: Release) => ServedRelease | null) | null = null,
  ): ReleaseIndex {
    const sorted = [...releases].sort(newestFirst);
    const grouped = new Map<string, Release[]>();
    for (const r of sorted) {
      const key = laneKey(r.manifest.product, r.manifest.channel, r.manifest.platform);
      let list = grouped.get(key);
      if (!list) grouped.set(key, (list = []));
      list.push(r);
    }
    const lanes = new Map<string, Lane>();
    for (const [key, list] of grouped) {
      if (!checks && !isServed(list[0]!)) throw new Error(`the newest release of ${key} has no bytes`);
      lanes.set(key, Object.freeze({ releases: list, installers: byInstaller(list) }));
    }
    // The lists are readonly by type, not frozen: JavaScriptCore keeps a frozen array as a sparse
    // map, 43 more bytes an element and its reads 8 times slower (bench/README.md, "4a and 5a, third round").
    return new ReleaseIndex(lanes, sorted, checks, rereadBytes);
  }

  static readonly empty = ReleaseIndex.of([]);

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
    const named = this.lanes.get(laneKey(product, channel, platform))?.installers.get(name);
    if (named === undefined) return;
    for (const r of Array.isArray(named) ? named : [named as Release]) if (this.holds(r)) yield r;
  }
}

/**
 * A lane's releases by installer name, newest first. A name one release has maps to that release
 * itself: an array for each of 10,000 releases would cost the index about a megabyte.
 */
function byInstaller(newestFirst: readonly Release[]): Map<string, Release | Release[]> {
  const named = new Map<string, Release | Release[]>();
  for (const r of newestFirst) {
    const name = r.manifest.installer;
    const before = named.get(name);
    if (before === undefined) named.set(name, r);
    else if (Array.isArray(before)) before.push(r);
    else named.set(name, [before, r]);
  }
  return named;
}
