import { isLane, type Variant } from "../../config/variants";
import { KeyturnError } from "../errors";
import { deltaOf, type DeltaFeed, type FeedFile } from "./feed-files";
import type { ReleaseHolder } from "./holder";
import type { Manifest } from "./manifest";
import { laneName } from "./release-controls";
import { isServed, newestFirst, type Release, type ReleaseIndex, type ServedRelease } from "./release-index";
import type { Installation, ReleaseSelection } from "./release-selection";
import { compareVersions } from "./version-order";

/** An entitled installation as the feeds see it: who it is and which channels its licence holds. */
export interface FeedCaller {
  readonly who: Installation;
  readonly channels: readonly string[];
}

/** What an updater can install (feed-formats.ts), and what it needs, worded for a refusal. */
export interface FeedUpdater {
  installs(m: Manifest): boolean;
  /** Completes "No release on <lanes> is one …". */
  readonly needs: string;
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
   * The channels a feed of `channel` offers from: that channel and those before it in the site's
   * list that the licence holds. design.md: "a channel feed offers the newest release of that
   * channel or any channel below it" (preview offers the newest of preview and stable), as
   * electron-builder writes its channel files.
   */
  private cascade(caller: FeedCaller, channel: string): string[] {
    return this.variant.channels.slice(0, this.variant.channels.indexOf(channel) + 1).filter((c) => caller.channels.includes(c));
  }

  /** Of the releases served to this installation on `platform` in the cascade of `channel`, the newest; null when none. */
  private async newestServed(
    index: ReleaseIndex,
    caller: FeedCaller,
    product: string | null,
    channel: string,
    platform: string,
  ): Promise<ServedRelease | null> {
    let best: ServedRelease | null = null;
    for (const c of this.cascade(caller, channel)) {
      const served = await this.selection.served(index, caller.who, product, c, platform);
      if (served && (!best || compareVersions(served.manifest.version, best.manifest.version) > 0)) best = served;
    }
    return best;
  }

  /**
   * The releases served to this installation on `platforms` in the cascade of `channel`: of each
   * platform, the newest such release the updater `installs` (electron-updater on macOS takes only
   * a zip), else the newest older one it installs that the installation may still install.
   */
  async servedCascading(
    index: ReleaseIndex,
    caller: FeedCaller,
    product: string | null,
    channel: string,
    platforms: readonly string[],
    updater: FeedUpdater,
  ): Promise<Release[]> {
    const found: Release[] = [];
    let unfit = false;
    for (const platform of platforms) {
      const served = await this.newestServed(index, caller, product, channel, platform);
      if (!served) continue;
      const best = updater.installs(served.manifest) ? served : await this.newestInstallable(index, caller, product, channel, platform, updater);
      if (best) found.push(best);
      else unfit = true;
    }
    if (found.length === 0 && unfit && !platforms.some((p) => this.verifyingIn(caller, product, channel, p)))
      throw new KeyturnError("no_release", `No release on ${platforms.map((p) => laneName(product, channel, p)).join(", ")} is one ${updater.needs}.`);
    this.refuseWhenNone(found, caller, product, channel, platforms);
    // One channel file lists one version: the newest, with the file of each platform that has it.
    const newest = found.reduce((a, b) => (compareVersions(b.manifest.version, a.manifest.version) > 0 ? b : a));
    return found.filter((r) => r.manifest.version === newest.manifest.version);
  }

  /** Of the releases this installation may install on `platform` in the cascade of `channel`, the newest the updater installs. */
  private async newestInstallable(
    index: ReleaseIndex,
    caller: FeedCaller,
    product: string | null,
    channel: string,
    platform: string,
    updater: FeedUpdater,
  ): Promise<Release | null> {
    let best: Release | null = null;
    for (const c of this.cascade(caller, channel)) {
      const r = await this.selection.newestAllowedWhere(index, caller.who, { product, channel: c, platform }, (r) => updater.installs(r.manifest));
      if (r && (!best || compareVersions(r.manifest.version, best.manifest.version) > 0)) best = r;
    }
    // With its manifest's bytes where they still read, so its notes are listed too (notesOf).
    return best && (index.withBytes(best) ?? best);
  }

  /** Whether a lane of the cascade waits for an installer being hashed. */
  private verifyingIn(caller: FeedCaller, product: string | null, channel: string, platform: string): boolean {
    return this.cascade(caller, channel).some((c) => this.releases.verifying(product, c, platform));
  }

  /**
   * The newest release served to this installation on one platform in the cascade of `channel`;
   * null when none (a feed whose protocol has "no update" says so), unavailable while it is verified.
   */
  async servedOrNone(index: ReleaseIndex, caller: FeedCaller, product: string | null, channel: string, platform: string): Promise<ServedRelease | null> {
    const served = await this.newestServed(index, caller, product, channel, platform);
    if (served === null && this.cascade(caller, channel).some((c) => this.releases.verifying(product, c, platform)))
      throw new KeyturnError("unavailable", "The release is being verified; try again shortly.");
    return served;
  }

  /**
   * What an appcast or a Velopack feed lists on `platforms`, in the cascade of `channel`: in each
   * lane the release served to the installation and up to OLDER_LISTED older ones it may still
   * install, those that `offers`, newest first. Each carries its manifest's bytes where they still
   * read, so its notes are listed too (notesOf).
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
    for (const platform of platforms)
      for (const c of this.cascade(caller, channel)) {
        if (!(await this.selection.served(index, caller.who, product, c, platform))) continue;
        let count = 0;
        for (const r of index.releasesOf(product, c, platform)) {
          if (count > OLDER_LISTED) break;
          if (!offers(r) || !(await this.selection.installerAllowed(index, caller.who, r))) continue;
          listed.push(index.withBytes(r) ?? r);
          count++;
        }
      }
    return listed.sort(newestFirst);
  }

  private refuseWhenNone(found: readonly Release[], caller: FeedCaller, product: string | null, channel: string, platforms: readonly string[]): void {
    if (found.length > 0) return;
    if (platforms.some((p) => this.verifyingIn(caller, product, channel, p)))
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
    for (const c of this.cascade(caller, channel))
      for (const platform of platforms) {
        const release = await this.selection.installerNamed(index, caller.who, { product, channel: c, platform }, installer);
        if (release) return release;
      }
    return null;
  }

  /**
   * The release of the installation's cascade of lanes on `platforms` with a delta named `file`
   * (Velopack's, Sparkle's, Squirrel's), and that delta, if the installation may install the release.
   */
  async deltaOf(
    index: ReleaseIndex,
    caller: FeedCaller,
    product: string | null,
    channel: string,
    platforms: readonly string[],
    feed: DeltaFeed,
    file: string,
  ): Promise<{ release: Release; delta: FeedFile } | null> {
    const channels = this.variant.channels.slice(0, this.variant.channels.indexOf(channel) + 1).filter((c) => caller.channels.includes(c));
    for (const c of channels)
      for (const platform of platforms)
        for (const release of index.releasesOf(product, c, platform)) {
          const delta = deltaOf(release.manifest.feeds, feed, file);
          if (delta && (await this.selection.installerAllowed(index, caller.who, release))) return { release, delta };
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

/** A field of a served release's signed manifest, read from its bytes (the index keeps neither notes nor critical). */
function signedField(r: Release, name: "notes" | "critical"): unknown {
  if (!isServed(r)) return undefined;
  try {
    return (JSON.parse(new TextDecoder().decode(r.manifestBytes)) as Record<string, unknown>)[name];
  } catch {
    return undefined;
  }
}

/** A served release's `notes` (read from its signed manifest's bytes; other releases are kept without them). */
export function notesOf(r: Release): string | null {
  const notes = signedField(r, "notes");
  return typeof notes === "string" ? notes : null;
}

/** Whether a served release's signed manifest says `critical: true`. */
export const criticalOf = (r: Release): boolean => signedField(r, "critical") === true;
