import { feedText } from "./feed-formats";
import type { Release } from "./release-index";
import { compareVersions } from "./version-order";

/**
 * The answers of Electron's built-in autoUpdater: Squirrel.Windows' `RELEASES` file and
 * Squirrel.Mac's update JSON, each as its client reads it (docs/squirrel-and-deltas.md).
 */

/** One `RELEASES` line: a package, its SHA-1 and size; `name` as the client resolves it against the feed's address. */
export interface SquirrelEntry {
  readonly sha1: string;
  readonly name: string;
  readonly size: number;
}

/**
 * What a Squirrel.Windows client is offered, oldest first (`releases`: the release served and older
 * ones it may still install, as FeedService.listed gives them, newest first). Each release's full
 * package; and the deltas only when they make an unbroken chain from `localVersion` (deltaChain).
 */
export function squirrelEntries(releases: readonly Release[], localVersion: string | null, laneOf: (r: Release) => readonly Release[]): SquirrelEntry[] {
  const oldestFirst = [...releases].reverse();
  const newer = localVersion === null ? [] : oldestFirst.filter((r) => compareVersions(r.manifest.version, localVersion) > 0);
  const chain = localVersion !== null && deltaChain(releases, localVersion, laneOf);
  const entries: SquirrelEntry[] = [];
  for (const r of oldestFirst) {
    const s = r.manifest.feeds!.squirrel!;
    // As Squirrel writes the file (ReleaseEntry.WriteReleaseFile): by version, a version's delta before its full package.
    if (chain && newer.includes(r)) for (const d of s.deltas) entries.push({ sha1: d.sha1!, name: d.file, size: d.size });
    entries.push({ sha1: s.sha1, name: r.manifest.installer, size: r.manifest.size });
  }
  return entries;
}

/**
 * Whether the deltas of the releases newer than `localVersion` patch it up to the newest: the
 * client applies every delta newer than its version in a row whenever any is listed
 * (UpdateInfo.Create in Squirrel.Windows: https://github.com/Squirrel/Squirrel.Windows/blob/51f5e2cb01add79280a53d51e8d0cfa20f8c9f9f/src/Squirrel/UpdateInfo.cs),
 * and a delta patches the release before it in its lane. So the installation's own release must be
 * listed, and every release of its lane after it, up to the newest listed, must be listed too (none
 * withdrawn or held back between) with its one delta; the newest must be of that lane.
 */
function deltaChain(listed: readonly Release[], localVersion: string, laneOf: (r: Release) => readonly Release[]): boolean {
  const local = listed.find((r) => r.manifest.version === localVersion);
  const newest = listed[0];
  if (!local || !newest || newest === local) return false;
  // Compared by folder: a listed release may be its index entry with its bytes read.
  const folders = new Set(listed.map((r) => r.folder));
  const lane = laneOf(local).map((r) => r.folder);
  const [to, from] = [lane.indexOf(newest.folder), lane.indexOf(local.folder)];
  if (to < 0 || from < 0) return false;
  const between = laneOf(local).slice(to, from);
  return between.every((r) => folders.has(r.folder) && r.manifest.feeds?.squirrel?.deltas.length === 1);
}

/** A `RELEASES` file: `SHA1 name size` per line, the SHA-1 in upper case as Squirrel writes it; names carry no white space (their rule: `\S+`). */
export function squirrelReleasesFile(entries: readonly SquirrelEntry[]): string {
  return entries.map((e) => `${e.sha1.toUpperCase()} ${e.name} ${e.size}`).join("\n");
}

/**
 * Squirrel.Mac's `pub_date`: ISO 8601 to the second with the zone as `Z` or `+hh:mm`, the format
 * SQRLUpdate's date transformer parses (`yyyy'-'MM'-'dd'T'HH':'mm':'ssZZZZZ`; fractions of a second
 * would not parse): https://github.com/Squirrel/Squirrel.Mac/blob/8d808803bc89ec0e2aa1450474856dfee3b00c6b/Squirrel/SQRLUpdate.m
 */
export function squirrelMacDate(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** Squirrel.Mac's update JSON (SQRLUpdate: `url` required; `name`, `notes`, `pub_date` strings). */
export function squirrelMacJson(o: { url: string; version: string; notes: string | null; released: number }): string {
  return JSON.stringify({
    url: feedText(o.url),
    name: feedText(o.version),
    notes: feedText(o.notes ?? ""),
    pub_date: squirrelMacDate(o.released),
  });
}
