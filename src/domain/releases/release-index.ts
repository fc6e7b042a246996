import type { FileIdentity } from "./files";
import type { Manifest } from "./manifest";
import { compareVersions } from "./version-order";

/** One live release: its manifest and signature as read (and checked) at scan time, and its installer's path. */
export interface Release {
  readonly manifest: Manifest;
  /** The folder, relative to the tree's root (for logs and `release check`). */
  readonly folder: string;
  readonly manifestBytes: Uint8Array;
  /** Strong ETags: the SHA-256 (hex, quoted) of each body, so every mirror gives the same. */
  readonly manifestEtag: string;
  readonly signatureBytes: Uint8Array;
  readonly signatureEtag: string;
  readonly installerEtag: string;
  readonly installerPath: string;
  /** Manifest, signature and installer as they were when read and checked (see index-snapshot.ts). */
  readonly files: readonly [manifest: FileIdentity, signature: FileIdentity, installer: FileIdentity];
}

/** Newest first: by `released`, then by version. */
export function newestFirst(a: Release, b: Release): number {
  return b.manifest.released - a.manifest.released || compareVersions(b.manifest.version, a.manifest.version);
}

const laneKey = (product: string | null, channel: string, platform: string) => `${product ?? ""}/${channel}/${platform}`;

interface Lane {
  readonly releases: readonly Release[];
  /** Installer name → the newest live release that names it. */
  readonly installers: ReadonlyMap<string, Release>;
}

/**
 * An immutable index of the live releases of one tree, by product, channel and platform. A new
 * scan builds a new index; readers keep whichever one they started with.
 *
 * An index loaded from a snapshot carries a check (its files are still those it was built from):
 * a release is checked the first time it would be answered, and one that fails is skipped as if
 * absent, so a changed release is never served from a snapshot. The result is kept for the life of
 * the index, which the scan that follows every start soon replaces.
 */
export class ReleaseIndex {
  private readonly checked = new Map<Release, boolean>();

  private constructor(
    private readonly lanes: ReadonlyMap<string, Lane>,
    private readonly everything: readonly Release[],
    private readonly check: ((r: Release) => boolean) | null,
  ) {}

  static of(releases: readonly Release[], check: ((r: Release) => boolean) | null = null): ReleaseIndex {
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
      const installers = new Map<string, Release>();
      for (const r of list) if (!installers.has(r.manifest.installer)) installers.set(r.manifest.installer, r);
      lanes.set(key, Object.freeze({ releases: Object.freeze(list), installers }));
    }
    return new ReleaseIndex(lanes, Object.freeze(sorted), check);
  }

  static readonly empty = ReleaseIndex.of([]);

  private holds = (r: Release): boolean => {
    if (!this.check) return true;
    let ok = this.checked.get(r);
    if (ok === undefined) this.checked.set(r, (ok = this.check(r)));
    return ok;
  };

  /** Every live release, newest first. */
  get all(): readonly Release[] {
    return this.check ? this.everything.filter(this.holds) : this.everything;
  }

  /** Releases in the index (for a snapshot's index: before any was checked). */
  get size(): number {
    return this.everything.length;
  }

  /** The newest live release of a product (null in gamma), channel and platform. */
  latest(product: string | null, channel: string, platform: string): Release | undefined {
    const lane = this.lanes.get(laneKey(product, channel, platform));
    return this.check ? lane?.releases.find(this.holds) : lane?.releases[0];
  }

  /** The live release of that product, channel and platform whose installer has exactly this name. */
  installer(product: string | null, channel: string, platform: string, name: string): Release | undefined {
    const lane = this.lanes.get(laneKey(product, channel, platform));
    const newest = lane?.installers.get(name);
    if (!newest || this.holds(newest)) return newest;
    return lane!.releases.find((r) => r.manifest.installer === name && this.holds(r));
  }
}
