import { KeyturnError } from "../errors";
import type { FeedFile, SparkleDelta } from "./feed-files";
import type { FeedUpdater } from "./feeds";
import type { Manifest } from "./manifest";
import type { Release } from "./release-index";

/**
 * The answers of the existing updaters' feeds, each as its client reads it (docs/releases.md,
 * "Feeds for existing updaters", says which fields each client reads).
 */

// ---- which of the site's platforms a feed's names stand for ----

/**
 * Node's name (`process.arch`, which electron-updater puts in channel file names and vendors in
 * `?arch=`) of a platform's architecture: the site names 32-bit ones as Tauri does (`x86`,
 * `armv7`), Node as `ia32` and `arm` (electron-builder's packages/electron-updater/src/providers/Provider.ts,
 * getChannelFilePrefix).
 */
const NODE_ARCH: Record<string, string> = { x86: "ia32", armv7: "arm" };

/** The architecture part of a platform name (`mac-arm64` → `arm64`) as Node names it. */
function nodeArch(platform: string): string {
  const arch = platform.slice(platform.indexOf("-") + 1);
  return Object.hasOwn(NODE_ARCH, arch) ? NODE_ARCH[arch]! : arch;
}

/**
 * electron-updater's channel file suffix of a platform (peers.md 1.1): none on Windows, `-mac`,
 * `-linux` for x64 and `-linux-<arch>` otherwise, in Node's name of the architecture; null for a
 * platform it has no name for.
 */
export function electronSuffix(platform: string): string | null {
  if (platform.startsWith("win-")) return "";
  if (platform.startsWith("mac-")) return "-mac";
  if (platform === "linux-x64") return "-linux";
  if (platform.startsWith("linux-")) return `-linux-${nodeArch(platform)}`;
  return null;
}

/** Whether a platform is of the architecture an electron feed URL's `?arch=` names (`process.arch`: `ia32` is `win-x86`). */
export const electronArchIs = (platform: string, arch: string): boolean => nodeArch(platform) === arch || platform.endsWith(`-${arch}`);

/**
 * `<channel><suffix>.yml` → the channel name and the site's platforms it covers; null when the
 * name is no channel file of these platforms. The channel part is electron-updater's default
 * `latest` or the channel of the URL itself.
 */
export function electronChannelFile(name: string, channel: string, platforms: readonly string[]): readonly string[] | null {
  if (!name.endsWith(".yml")) return null;
  const stem = name.slice(0, -".yml".length);
  for (const prefix of ["latest", channel]) {
    if (!stem.startsWith(prefix)) continue;
    const suffix = stem.slice(prefix.length);
    const covered = platforms.filter((p) => electronSuffix(p) === suffix);
    if (covered.length > 0) return covered;
  }
  return null;
}

const TAURI_OS: Record<string, string> = { windows: "win", darwin: "mac", linux: "linux" };
const TAURI_ARCH: Record<string, string> = { x86_64: "x64", aarch64: "arm64", i686: "x86", armv7: "armv7", riscv64: "riscv64" };

/** Tauri's `{{target}}` and `{{arch}}` (peers.md 2.1) as a platform name (`darwin`, `aarch64` → `mac-arm64`). */
export function tauriPlatform(target: string, arch: string): string | null {
  const os = Object.hasOwn(TAURI_OS, target) ? TAURI_OS[target] : undefined;
  const a = Object.hasOwn(TAURI_ARCH, arch) ? TAURI_ARCH[arch] : undefined;
  return os && a ? `${os}-${a}` : null;
}

const VELOPACK_OS: Record<string, string> = { win: "win-", osx: "mac-", linux: "linux-" };

/**
 * The site's platforms a Velopack channel file stands for (peers.md 4.1): `releases.<os>.json`
 * (vpk's default channel, `win`, `osx`, `linux`) those of that system; `releases.<os>-<arch>.json`
 * (a channel per runtime id, as Velopack's docs advise for a program built for several
 * architectures) that platform alone.
 */
export function velopackPlatforms(channelName: string, platforms: readonly string[]): readonly string[] {
  const [os = "", arch, ...more] = channelName.split("-");
  const prefix = Object.hasOwn(VELOPACK_OS, os) ? VELOPACK_OS[os]! : null;
  if (prefix === null || more.length > 0) return [];
  if (arch === undefined) return platforms.filter((p) => p.startsWith(prefix));
  return platforms.includes(prefix + arch) ? [prefix + arch] : [];
}

/** The architectures Velopack's C# client names (it sends `rid=win-Unknown` for one it cannot tell, which names nothing). */
const MACHINE_ARCHES = new Set(["x86", "x64", "arm64"]);

/** What each machine architecture runs besides its own: Windows on ARM and Rosetta run x64 builds, 64-bit Windows runs x86 ones. */
const EMULATED: Record<string, readonly string[]> = { "win-arm64": ["x64", "x86"], "osx-arm64": ["x64"], "win-x64": ["x86"] };

/**
 * The platforms a Velopack channel file lists (null: not a channel of this site). `releases.<os>-<arch>.json`
 * names its platform, whatever machine asks. A system's channel is narrowed by the machine that
 * Velopack's C# client names in its query (`rid=osx-arm64`, else `arch=arm64`; its Rust core
 * sends neither) to what that machine runs: its own architecture, else one it emulates, else none.
 */
export function velopackFeedPlatforms(channelName: string, platforms: readonly string[], query: URLSearchParams): readonly string[] | null {
  const covered = velopackPlatforms(channelName, platforms);
  if (covered.length === 0) return null;
  if (channelName.includes("-")) return covered;
  const machineArch = [velopackArchOf(query.get("rid"), channelName), query.get("arch")].find((a) => a !== null && MACHINE_ARCHES.has(a)) ?? null;
  if (machineArch === null) return covered;
  const own = covered.filter((p) => p.endsWith(`-${machineArch}`));
  if (own.length > 0) return own;
  for (const arch of EMULATED[`${channelName}-${machineArch}`] ?? []) {
    const emulated = covered.filter((p) => p.endsWith(`-${arch}`));
    if (emulated.length > 0) return emulated;
  }
  return [];
}

/** The architecture of a runtime id of that system (`osx-arm64` → `arm64`), or null. */
function velopackArchOf(rid: string | null, os: string): string | null {
  return rid?.startsWith(`${os}-`) ? rid.slice(os.length + 1) : null;
}

/**
 * Velopack's core installs the newest full package of its feed whatever its architecture (velopack
 * src/lib-rust/src/manager.rs, check_for_updates): a feed whose packages are of two platforms is
 * refused, naming the channel each architecture needs.
 */
export function refuseMixedVelopack(channelName: string, listed: readonly Release[]): void {
  const platforms = [...new Set(listed.map((r) => r.manifest.platform))];
  if (platforms.length < 2) return;
  const example = `${channelName}-${platforms[0]!.slice(platforms[0]!.indexOf("-") + 1)}`;
  throw new KeyturnError(
    "not_found",
    `The feed releases.${channelName}.json would list the packages of ${platforms.join(", ")} together, and Velopack installs the newest whatever its architecture: pack each with its own channel (vpk pack --channel ${example}), read from releases.${example}.json.`,
  );
}

/**
 * electron-updater: on macOS its MacUpdater installs only a zip of the app (it refuses a channel
 * file without one: "ZIP file not provided", electron-builder's packages/electron-updater/src/MacUpdater.ts);
 * elsewhere whatever installer the release has.
 */
export const ELECTRON: FeedUpdater = {
  installs: (m) => !m.platform.startsWith("mac-") || m.installer.toLowerCase().endsWith(".zip"),
  needs: "electron-updater can install (on macOS, a release whose installer is a .zip)",
};

/** Squirrel.Mac installs a zip of the app bundle (SQRLUpdater.m unarchives what it downloads): any macOS release whose installer is one. */
export const isSquirrelMacRelease = (m: Manifest) => m.platform.startsWith("mac-") && m.installer.toLowerCase().endsWith(".zip");

export const macPlatforms = (platforms: readonly string[]) => platforms.filter((p) => p.startsWith("mac-"));

/**
 * The feeds that offer a release (the admin API's release overview): electron-updater's for any
 * platform it names and installer it installs (`electron.blockmap` too when differential updates are possible), and Tauri's,
 * Sparkle's (macOS only) and Velopack's when the manifest names what they need.
 */
export function feedsOffered(m: Manifest): string[] {
  const offered: string[] = [];
  if (electronSuffix(m.platform) !== null && ELECTRON.installs(m)) offered.push("electron", ...(m.feeds?.electron?.blockmap ? ["electron.blockmap"] : []));
  if (m.feeds?.tauri) offered.push("tauri");
  if (m.feeds?.sparkle && m.platform.startsWith("mac-")) offered.push("sparkle", ...(m.feeds.sparkle.deltas ? ["sparkle.deltas"] : []));
  if (m.feeds?.velopack) offered.push("velopack", ...(m.feeds.velopack.deltas ? ["velopack.deltas"] : []));
  if (m.feeds?.squirrel && m.platform.startsWith("win-")) offered.push("squirrel", ...(m.feeds.squirrel.deltas.length ? ["squirrel.deltas"] : []));
  if (isSquirrelMacRelease(m)) offered.push("squirrel-mac");
  return offered;
}

// ---- the documents ----

/**
 * Every character XML 1.0 allows (https://www.w3.org/TR/xml/#charsets): tab, LF, CR, U+0020–U+D7FF,
 * U+E000–U+FFFD and U+10000 up. The rest (other C0 controls, U+FFFE, U+FFFF, a surrogate without
 * its pair) is stripped from every text a feed carries: XML cannot hold them at all (the appcast
 * becomes invalid), YAML's printable set excludes them, and a lone surrogate is no UTF-8.
 */
const NOT_XML_CHAR = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
export const feedText = (s: string) => s.replace(NOT_XML_CHAR, "");

/** A YAML scalar that is also JSON: a double-quoted string with JSON's escapes is valid YAML 1.2. */
const yamlText = (s: string) => JSON.stringify(feedText(s));

export interface ElectronFile {
  readonly url: string;
  readonly sha512: string;
  readonly size: number;
  /** The blockmap embedded at the end of the file (AppImage): its differential download needs it. */
  readonly blockMapSize: number | null;
}

/**
 * An electron-updater channel file (`UpdateInfo`, peers.md 1.2): `version`, `files[]` with base64
 * SHA-512 and size, the legacy top-level `path` and `sha512` of the first file for clients before
 * 2.16, `releaseNotes` when the manifest has notes, `releaseDate`. No `stagingPercentage`: keyturn
 * decided the rollout already, per installation.
 */
export function electronYaml(o: { version: string; files: readonly ElectronFile[]; releaseDate: string; notes: string | null }): string {
  const lines = [`version: ${yamlText(o.version)}`, "files:"];
  for (const f of o.files) {
    lines.push(`  - url: ${yamlText(f.url)}`, `    sha512: ${yamlText(f.sha512)}`, `    size: ${f.size}`);
    if (f.blockMapSize !== null) lines.push(`    blockMapSize: ${f.blockMapSize}`);
  }
  const first = o.files[0]!;
  lines.push(`path: ${yamlText(first.url)}`, `sha512: ${yamlText(first.sha512)}`);
  if (o.notes !== null) lines.push(`releaseNotes: ${yamlText(o.notes)}`);
  lines.push(`releaseDate: ${yamlText(o.releaseDate)}`);
  return lines.join("\n") + "\n";
}

/** Tauri v2's dynamic update answer (peers.md 2.2): the stored `.sig` text as `signature`, the download on keyturn's origin. */
export function tauriJson(o: { version: string; url: string; signature: string; notes: string | null; pubDate: string }): string {
  return JSON.stringify({
    version: feedText(o.version),
    url: feedText(o.url),
    signature: feedText(o.signature),
    notes: feedText(o.notes ?? ""),
    pub_date: o.pubDate,
  });
}

const xmlText = (s: string) => feedText(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);

export interface AppcastItem {
  readonly release: Release;
  readonly url: string;
  readonly edSignature: string;
  readonly bundleVersion: string;
  readonly notes: string | null;
  /** The release's deltas (`feeds.sparkle.deltas`), each with its address on keyturn's origin. */
  readonly deltas?: readonly { readonly url: string; readonly delta: SparkleDelta }[];
  /** The manifest's `critical`: Sparkle 2 shows it promptly and lets nobody skip it. */
  readonly critical: boolean;
}

/** RFC 822 date as RSS and Sparkle's phased rollouts read `<pubDate>`. */
export function rfc822(ms: number): string {
  return new Date(ms).toUTCString().replace("GMT", "+0000");
}

/** A Sparkle appcast (peers.md 3.1): one item per release, the enclosure on keyturn's origin with the vendor's edSignature. */
export function sparkleAppcast(o: { title: string; items: readonly AppcastItem[] }): string {
  const items = o.items.map((i) => {
    const m = i.release.manifest;
    return [
      "<item>",
      `<title>${xmlText(`Version ${m.version}`)}</title>`,
      `<sparkle:version>${xmlText(i.bundleVersion)}</sparkle:version>`,
      `<sparkle:shortVersionString>${xmlText(m.version)}</sparkle:shortVersionString>`,
      ...(i.notes !== null ? [`<description>${xmlText(i.notes)}</description>`] : []),
      ...(i.critical ? ["<sparkle:criticalUpdate/>"] : []),
      `<pubDate>${rfc822(m.released)}</pubDate>`,
      `<enclosure url="${xmlText(i.url)}" length="${m.size}" type="application/octet-stream" sparkle:edSignature="${xmlText(i.edSignature)}"/>`,
      // Sparkle's delta updates (https://sparkle-project.org/documentation/delta-updates/): one enclosure per version it patches from.
      ...(i.deltas?.length
        ? [
            "<sparkle:deltas>",
            ...i.deltas.map(
              (d) =>
                `<enclosure url="${xmlText(d.url)}" sparkle:deltaFrom="${xmlText(d.delta.deltaFrom)}" length="${d.delta.size}" type="application/octet-stream" sparkle:edSignature="${xmlText(d.delta.edSignature)}"/>`,
            ),
            "</sparkle:deltas>",
          ]
        : []),
      "</item>",
    ].join("\n");
  });
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle">',
    "<channel>",
    `<title>${xmlText(o.title)}</title>`,
    ...items,
    "</channel>",
    "</rss>",
    "",
  ].join("\n");
}

/**
 * Velopack's `releases.{channel}.json` (peers.md 4.1): Full assets, SHA-1 and SHA-256 in upper case
 * as vpk writes them, `FileName` the package's bare name: the client downloads it relative to the
 * feed URL and saves it under that name in its packages folder, so an absolute URL there cannot be saved.
 */
export function velopackJson(assets: readonly { packageId: string; sha1: string; release: Release; notes: string | null; delta?: FeedFile }[]): string {
  return JSON.stringify({
    Assets: assets.map((a) => ({
      PackageId: feedText(a.packageId),
      Version: feedText(a.release.manifest.version),
      // A delta (`-delta.nupkg`) patches the release before it up to this version; bare names both.
      Type: a.delta ? "Delta" : "Full",
      FileName: feedText(a.delta ? a.delta.file : a.release.manifest.installer),
      SHA1: (a.delta ? a.delta.sha1! : a.sha1).toUpperCase(),
      SHA256: (a.delta ? a.delta.sha256 : a.release.manifest.sha256).toUpperCase(),
      Size: a.delta ? a.delta.size : a.release.manifest.size,
      NotesMarkdown: feedText(a.notes ?? ""),
    })),
  });
}
