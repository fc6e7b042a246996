/**
 * The Squirrel clients' own reading rules, replayed from their sources, so tests check keyturn's
 * answers the way the clients read them rather than the way keyturn writes them.
 */

// ---- Squirrel.Windows, https://github.com/Squirrel/Squirrel.Windows/blob/51f5e2cb01add79280a53d51e8d0cfa20f8c9f9f/src/Squirrel/ReleaseEntry.cs ----

export interface SquirrelReleaseEntry {
  readonly sha1: string;
  readonly baseUrl: string | null;
  readonly filename: string;
  readonly query: string | null;
  readonly filesize: number;
  readonly isDelta: boolean;
  readonly stagingPercentage: number | null;
}

const entryRegex = /^([0-9a-fA-F]{40})\s+(\S+)\s+(\d+)[\r]*$/;
const commentRegex = /\s*#.*$/;
const stagingRegex = /#\s+(\d{1,3})%$/;
/** Path.GetInvalidFileNameChars() on Windows: control characters and " < > | : * ? \ / */
const INVALID_FILE_NAME_CHARS = /[\x00-\x1f"<>|:*?\\/]/;

/** ReleaseEntry.ParseReleaseEntry: null for a blank or comment line; throws as it throws. */
export function parseReleaseEntry(entry: string): SquirrelReleaseEntry | null {
  let stagingPercentage: number | null = null;
  const staging = stagingRegex.exec(entry);
  if (staging) stagingPercentage = Number(staging[1]) / 100;
  entry = entry.replace(commentRegex, "");
  if (entry.trim() === "") return null;
  const m = entryRegex.exec(entry);
  if (!m) throw new Error(`Invalid release entry: ${entry}`);
  let filename = m[2]!;
  let baseUrl: string | null = null;
  let query: string | null = null;
  // Utility.IsHttpUrl: an absolute http(s) URL is split into its base and the file name.
  if (/^https?:\/\//i.test(filename)) {
    const uri = new URL(filename);
    const path = decodeURIComponent(uri.pathname);
    const cut = path.lastIndexOf("/") + 1;
    baseUrl = uri.origin + path.slice(0, cut);
    filename = path.slice(cut);
    if (uri.search) query = uri.search;
  }
  if (INVALID_FILE_NAME_CHARS.test(filename)) throw new Error("Filename can either be an absolute HTTP[s] URL, *or* a file name");
  const isDelta = filename.toLowerCase().endsWith("-delta.nupkg");
  return { sha1: m[1]!, baseUrl, filename, query, filesize: Number(m[3]), isDelta, stagingPercentage };
}

/** ReleaseEntry.ParseReleaseFile (the byte order mark dropped, lines split on \n, blank ones skipped). */
export function parseReleaseFile(contents: string): SquirrelReleaseEntry[] {
  if (contents === "") return [];
  return contents
    .replace(/^\uFEFF/, "")
    .split("\n")
    .filter((x) => x.trim() !== "")
    .map(parseReleaseEntry)
    .filter((x): x is SquirrelReleaseEntry => x !== null);
}

/**
 * The version Squirrel reads from a package's name, https://github.com/Squirrel/Squirrel.Windows/blob/51f5e2cb01add79280a53d51e8d0cfa20f8c9f9f/src/Squirrel/ReleaseExtensions.cs
 * (compared here as numbers, part by part, enough for the releases of these tests).
 */
export function versionOfName(filename: string): string {
  const name = filename.replace(/(-full|-delta)?\.nupkg$/, "");
  const version = /\d+(\.\d+){0,3}(-[A-Za-z][0-9A-Za-z-]*)?$/.exec(name)?.[0];
  if (!version) throw new Error(`No version in ${filename}`);
  return version;
}

const compare = (a: string, b: string) => {
  const pa = a.split("-")[0]!.split(".").map(Number);
  const pb = b.split("-")[0]!.split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
};

/**
 * UpdateInfo.Create, https://github.com/Squirrel/Squirrel.Windows/blob/51f5e2cb01add79280a53d51e8d0cfa20f8c9f9f/src/Squirrel/UpdateInfo.cs:
 * the packages a client at `current` downloads: every delta newer than it when their sizes add up
 * to less than the newest full package, else that full package.
 */
export function packagesToApply(available: readonly SquirrelReleaseEntry[], current: string | null): SquirrelReleaseEntry[] {
  const newest = available.reduce((a, b) => (compare(versionOfName(b.filename), versionOfName(a.filename)) > 0 ? b : a));
  const newestVersion = versionOfName(newest.filename);
  const latestFull = available.find((x) => !x.isDelta && compare(versionOfName(x.filename), newestVersion) === 0);
  if (!latestFull) throw new Error("There should always be at least one full release");
  if (current === null) return [latestFull];
  if (compare(current, newestVersion) >= 0) return [];
  const newer = available
    .filter((x) => compare(versionOfName(x.filename), current) > 0)
    .sort((a, b) => compare(versionOfName(a.filename), versionOfName(b.filename)));
  const deltasSize = newer.filter((x) => x.isDelta).reduce((n, x) => n + x.filesize, 0);
  return deltasSize < latestFull.filesize && deltasSize > 0 ? newer.filter((x) => x.isDelta) : [latestFull];
}

/**
 * Where the client downloads a package from (UpdateManager.DownloadReleases.downloadRelease,
 * https://github.com/Squirrel/Squirrel.Windows/blob/51f5e2cb01add79280a53d51e8d0cfa20f8c9f9f/src/Squirrel/UpdateManager.DownloadReleases.cs):
 * BaseUrl + Filename (+ Query) resolved against the update URL with a trailing slash.
 */
export function downloadUrl(updateUrl: string, entry: SquirrelReleaseEntry): string {
  const base = updateUrl.endsWith("/") ? updateUrl : `${updateUrl}/`;
  return new URL((entry.baseUrl ?? "") + entry.filename + (entry.query ?? ""), base).href;
}

/** The RELEASES address the client asks (UpdateManager.CheckForUpdates: AppendPathToUri, then ?id=&localVersion=&arch=). */
export function releasesUrl(updateUrl: string, local: { id: string; version: string } | null): string {
  const url = new URL(updateUrl);
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  url.pathname += "RELEASES";
  if (local) {
    url.searchParams.set("id", local.id);
    url.searchParams.set("localVersion", local.version);
    url.searchParams.set("arch", "amd64");
  }
  return url.href;
}

// ---- Squirrel.Mac, https://github.com/Squirrel/Squirrel.Mac/blob/8d808803bc89ec0e2aa1450474856dfee3b00c6b/Squirrel/SQRLUpdater.m and SQRLUpdate.m ----

export interface SquirrelMacUpdate {
  readonly updateURL: URL;
  readonly releaseName: string | null;
  readonly releaseNotes: string | null;
  readonly releaseDate: Date | null;
}

/**
 * SQRLUpdate's `pub_date` transformer: NSDateFormatter with `yyyy'-'MM'-'dd'T'HH':'mm':'ssZZZZZ`
 * (ZZZZZ: `Z` or `±hh:mm`), else the "Central" format `EEE MMM dd HH:mm:ss Z yyyy`; nil when neither parses.
 */
function releaseDateOf(value: unknown): Date | null {
  if (typeof value !== "string") return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(Z|[+-]\d{2}:\d{2})$/.exec(value);
  return m ? new Date(value) : null;
}

/**
 * The check as SQRLUpdater (release-server mode) makes it: a status outside 2xx is an error, 204
 * is "no update"; otherwise the body must be a JSON object that MTLJSONAdapter makes an SQRLUpdate
 * of, whose `url` (MTLURLValueTransformer) must give a URL.
 */
export async function squirrelMacCheck(res: Response): Promise<SquirrelMacUpdate | null> {
  if (res.status < 200 || res.status > 299) throw new Error(`Update check failed (${res.status})`);
  if (res.status === 204) return null;
  const json = (await res.json()) as Record<string, unknown>;
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new Error("The server sent an invalid JSON response.");
  let updateURL: URL;
  try {
    updateURL = new URL(json.url as string);
  } catch {
    throw new Error("SQRLUpdate must be initialized with a valid updateURL.");
  }
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  return { updateURL, releaseName: text(json.name), releaseNotes: text(json.notes), releaseDate: releaseDateOf(json.pub_date) };
}
