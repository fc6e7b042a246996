import { isLane, type Variant } from "../../config/variants";
import { KeyturnError } from "../errors";
import type { FeedFile } from "./feed-files";
import type { ReleaseHolder } from "./holder";
import { laneName } from "./release-controls";
import { isServed, newestFirst, type Release, type ReleaseIndex, type ServedRelease } from "./release-index";
import type { Installation, ReleaseSelection } from "./release-selection";
import { refuseOutsideWindow } from "./licence-terms";
import { compareVersions } from "./version-order";

/** An entitled installation as the feeds see it: who it is and which channels its licence holds. */
export interface FeedCaller {
  readonly who: Installation;
  readonly channels: readonly string[];
}

/** Older releases an appcast or a Velopack feed lists besides the newest (Sparkle and Velopack pick among them). */
const OLDER_LISTED = 10;

/**
 * The feeds for updaters vendors already use, decided
 * from the same index, controls and rollouts as the update path: which release each installation
 * is offered, and the facts each format needs. The formats themselves are in feed-formats.ts.
 */
export class FeedService {
  constructor(
    readonly variant: Variant,
    /** The site's address (--base-url): downloads a feed names are on keyturn's own origin. */
    readonly baseUrl: string,
    private readonly releases: ReleaseHolder,
    private readonly selection: ReleaseSelection,
  ) {}

  /** Checks product, channel and the licence's channels; the index once ready. */
  async lane(caller: FeedCaller, product: string | null, channel: string): Promise<ReleaseIndex> {
    if (!isLane(this.variant, product, channel)) throw new KeyturnError("not_found", "There is nothing at this address.");
    if (!caller.channels.includes(channel)) throw new KeyturnError("channel_not_allowed", `The entitlement does not include the ${channel} channel.`);
    return this.releases.ready();
  }

  /**
   * The releases served to this installation on `platforms` of `channel`, and, as electron-builder
   * writes its channel files, of the channels before it in the site's list that the licence holds
   * (preview offers the newest of preview and stable). Of each platform, the newest such release.
   */
  async servedCascading(
    index: ReleaseIndex,
    caller: FeedCaller,
    product: string | null,
    channel: string,
    platforms: readonly string[],
  ): Promise<ServedRelease[]> {
    const channels = this.variant.channels.slice(0, this.variant.channels.indexOf(channel) + 1).filter((c) => caller.channels.includes(c));
    const found: ServedRelease[] = [];
    for (const platform of platforms) {
      let best: ServedRelease | null = null;
      for (const c of channels) {
        const served = await this.selection.served(index, caller.who, product, c, platform);
        if (served && (!best || compareVersions(served.manifest.version, best.manifest.version) > 0)) best = served;
      }
      if (best) found.push(best);
    }
    this.refuseWhenNone(found, product, channel, platforms);
    // One channel file lists one version: the newest, with the file of each platform that has it.
    const newest = found.reduce((a, b) => (compareVersions(b.manifest.version, a.manifest.version) > 0 ? b : a));
    return found.filter((r) => r.manifest.version === newest.manifest.version);
  }

  /** The release served to this installation on one lane, or no_release / unavailable as the update path answers. */
  async served(index: ReleaseIndex, caller: FeedCaller, product: string | null, channel: string, platform: string): Promise<ServedRelease> {
    const served = await this.selection.served(index, caller.who, product, channel, platform);
    this.refuseWhenNone(served ? [served] : [], product, channel, [platform]);
    return served!;
  }

  /**
   * What an appcast or a Velopack feed lists on `platforms`: the release served to the installation
   * and up to OLDER_LISTED older ones it may still install, newest first, those that `offers`.
   */
  async listed(
    index: ReleaseIndex,
    caller: FeedCaller,
    product: string | null,
    channel: string,
    platforms: readonly string[],
    offers: (r: Release) => boolean,
  ): Promise<Release[]> {
    const listed: Release[] = [];
    for (const platform of platforms) {
      if (!(await this.selection.served(index, caller.who, product, channel, platform))) continue;
      let count = 0;
      for (const r of index.releasesOf(product, channel, platform)) {
        if (count > OLDER_LISTED) break;
        if (!offers(r) || !(await this.selection.installerAllowed(index, caller.who, r))) continue;
        listed.push(r);
        count++;
      }
    }
    return listed.sort(newestFirst);
  }

  private refuseWhenNone(found: readonly ServedRelease[], product: string | null, channel: string, platforms: readonly string[]): void {
    if (found.length > 0) return;
    if (platforms.some((p) => this.releases.verifying(product, channel, p)))
      throw new KeyturnError("unavailable", "The release is being verified; try again shortly.");
    throw new KeyturnError("no_release", `Nothing has been released on ${platforms.map((p) => laneName(product, channel, p)).join(", ")}.`);
  }

  /**
   * A release of the installation's cascade of lanes (see servedCascading) that names the file
   * `name` (its installer, or `<installer>.blockmap`), if the installation may download it;
   * updates_window_ended for one released after the licence's maintenance window.
   */
  async fileOf(
    index: ReleaseIndex,
    caller: FeedCaller,
    product: string | null,
    channel: string,
    platforms: readonly string[],
    installer: string,
  ): Promise<Release | null> {
    const channels = this.variant.channels.slice(0, this.variant.channels.indexOf(channel) + 1).filter((c) => caller.channels.includes(c));
    for (const c of channels)
      for (const platform of platforms) {
        const release = index.installer(product, c, platform, installer);
        if (release) refuseOutsideWindow(caller.who, release.manifest);
        if (release && (await this.selection.installerAllowed(index, caller.who, release))) return release;
      }
    return null;
  }

  /** The verified installer's SHA-512 (base64); unavailable while it is being replaced. */
  sha512(release: Release): string {
    const sha512 = this.releases.installerSha512(release);
    if (sha512 === null) throw new KeyturnError("unavailable", "The installer is being replaced; try again shortly.");
    return sha512;
  }

  /** A feed file's bytes, checked against the signed manifest now; unavailable when they no longer are. */
  feedFile(release: Release, file: FeedFile): Uint8Array {
    const bytes = this.releases.readFeedFile(release, file);
    if (bytes === null) throw new KeyturnError("unavailable", "The release's files are being replaced; try again shortly.");
    return bytes;
  }

  /** The installer's path reading exactly its verified bytes; unavailable while it is being replaced. */
  installerPath(release: Release): string {
    return this.releases.verifiedInstaller(release);
  }
}

/** A served release's `notes` (read from its signed manifest's bytes; other releases are kept without them). */
export function notesOf(r: Release): string | null {
  if (!isServed(r)) return null;
  try {
    const notes = (JSON.parse(new TextDecoder().decode(r.manifestBytes)) as { notes?: unknown }).notes;
    return typeof notes === "string" ? notes : null;
  } catch {
    return null;
  }
}
