import { createHash } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { readRegularFile } from "./files";
import { ReleaseProblem } from "./problem";

/**
 * A file of a release folder that one of the existing updaters' feeds serves: named in the signed manifest with its size and SHA-256, checked by `release
 * sign`, `release check` and the scan like the installer, and hashed again each time it is served.
 */
export interface FeedFile {
  readonly file: string;
  readonly size: number;
  readonly sha256: string;
  /** A package's SHA-1, where its client checks one (Velopack's and Squirrel's deltas); verified with the SHA-256. */
  readonly sha1?: string;
}

/** A Sparkle delta: the archive that patches the release with CFBundleVersion `deltaFrom` up to this one, and its EdDSA signature. */
export interface SparkleDelta extends FeedFile {
  readonly deltaFrom: string;
  readonly edSignature: string;
}

/**
 * A manifest's optional `feeds`: which updaters' feeds offer the release, with what each needs
 * beyond the installer. The vendor's own signatures are stored, never made: Tauri's minisign `.sig`
 * file and Sparkle's `sign_update` edSignature.
 */
export interface Feeds {
  /**
   * electron-updater (generic provider); `blockmap`: `<installer>.blockmap`, for differential
   * updates; `blockMapSize`: the size of the blockmap embedded at the installer's end (an AppImage,
   * as app-builder printed it), which the AppImage updater's differential download needs.
   */
  readonly electron?: { readonly blockmap: FeedFile | null; readonly blockMapSize: number | null };
  /** Tauri v2 updater: the `.sig` file `tauri build` wrote beside the artifact. */
  readonly tauri?: { readonly signature: FeedFile };
  /** Sparkle: the EdDSA signature `sign_update` printed, and the CFBundleVersion (default: the manifest's version). */
  readonly sparkle?: { readonly edSignature: string; readonly bundleVersion: string | null; readonly deltas?: readonly SparkleDelta[] };
  /**
   * Velopack: the package id (`vpk pack --packId`) and the installer's SHA-1 (Velopack's client
   * checks it; `release sign` and `release check` verify it); the installer is its `-full.nupkg`.
   */
  readonly velopack?: { readonly packageId: string; readonly sha1: string; readonly deltas?: readonly FeedFile[] };
  /**
   * Squirrel.Windows (Electron's built-in autoUpdater on Windows): the installer is the
   * `-full.nupkg` Electron Forge's Squirrel maker wrote, `sha1` its SHA-1 (the RELEASES line), and
   * its `-delta.nupkg` files.
   */
  readonly squirrel?: { readonly sha1: string; readonly deltas: readonly FeedFile[] };
}

export const FEED_NAMES = ["electron", "tauri", "sparkle", "velopack", "squirrel"] as const;
export type FeedName = (typeof FEED_NAMES)[number];

/** Blockmaps are about 1/100 000 of their installer (a few hundred KiB for a GiB); signatures under 1 KiB. */
/**
 * Deltas are read whole and hashed each time one is served (like every feed file), so they are
 * bounded: a larger change is shipped as the full package.
 */
const MAX_FEED_FILE_BYTES = { blockmap: 16 << 20, signature: 4096, delta: 64 << 20 } as const;
/** Deltas a release lists (from that many older releases); Velopack applies at most 10 in a row anyway. */
const MAX_DELTAS = 16;
/** The deltas each feed's manifest entry may list: Sparkle's from several earlier versions; vpk pack and Squirrel's makers write one per release, from the one before. */
export const MAX_FEED_DELTAS = { sparkle: MAX_DELTAS, velopack: 1, squirrel: 1 } as const;
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,219}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
const SHA1_HEX = /^[0-9a-f]{40}$/;
/** 64 bytes of Ed25519 signature, base64 (88 characters with padding). */
const ED_SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;
const BUNDLE_VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/;
const PACKAGE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function only(o: Record<string, unknown>, where: string, allowed: readonly string[]): void {
  const extra = Object.keys(o).find((k) => !allowed.includes(k));
  if (extra !== undefined) throw new ReleaseProblem(`manifest ${where} has an unknown field ${JSON.stringify(extra.slice(0, 40))}`);
}

function feedFile(
  v: unknown,
  where: string,
  kind: keyof typeof MAX_FEED_FILE_BYTES,
  name: (file: string) => string | null,
  more: readonly string[] = [],
): FeedFile {
  if (!isObject(v)) throw new ReleaseProblem(`manifest ${where} must be { "file", "size", "sha256"${more.map((f) => `, "${f}"`).join("")} }`);
  only(v, where, ["file", "size", "sha256", ...more]);
  const { file, size, sha256 } = v;
  if (typeof file !== "string" || !FILE_NAME.test(file) || file.includes("..")) throw new ReleaseProblem(`manifest ${where}.file must be a bare file name`);
  const wrong = name(file);
  if (wrong !== null) throw new ReleaseProblem(`manifest ${where}.file ${wrong}`);
  if (!Number.isSafeInteger(size) || (size as number) < 0 || (size as number) > MAX_FEED_FILE_BYTES[kind])
    throw new ReleaseProblem(`manifest ${where}.size must be a whole number of bytes, at most ${MAX_FEED_FILE_BYTES[kind]}`);
  if (typeof sha256 !== "string" || !SHA256_HEX.test(sha256)) throw new ReleaseProblem(`manifest ${where}.sha256 must be 64 lower-case hex digits`);
  if (!more.includes("sha1")) return Object.freeze({ file, size: size as number, sha256 });
  if (typeof v.sha1 !== "string" || !SHA1_HEX.test(v.sha1)) throw new ReleaseProblem(`manifest ${where}.sha1 must be 40 lower-case hex digits`);
  return Object.freeze({ file, size: size as number, sha256, sha1: v.sha1 });
}

/**
 * A feed's `deltas` (absent: none): at most MAX_DELTAS files, distinct, none the installer's or
 * another reserved name, each checked by `one` (its index in the list given).
 */
function deltaList<D extends FeedFile>(v: unknown, where: string, one: (entry: unknown, at: string) => D, max = MAX_DELTAS): readonly D[] {
  if (v === undefined) return Object.freeze([]);
  if (!Array.isArray(v) || v.length > max)
    throw new ReleaseProblem(
      max === 1
        ? `manifest ${where} must be a list of one delta file, from the release before (the format cannot say which release a delta starts from)`
        : `manifest ${where} must be a list of at most ${max} delta files`,
    );
  const deltas = v.map((entry, i) => one(entry, `${where}[${i}]`));
  const names = new Set(deltas.map((d) => d.file));
  if (names.size !== deltas.length) throw new ReleaseProblem(`manifest ${where} names a file twice`);
  return Object.freeze(deltas);
}

/** A `-delta.nupkg` (Velopack's and Squirrel's delta packages end so: their clients tell deltas from full packages by the name). */
const nupkgDelta = (notReserved: (file: string) => string | null) => (file: string) =>
  notReserved(file) ?? (file.toLowerCase().endsWith("-delta.nupkg") ? null : "must be a -delta.nupkg");

/**
 * Checks a manifest's `feeds` (undefined: the release is offered on the update path only). The
 * names must not be the installer's, the manifest's or its signature's (reserved: `reserved`).
 */
export function parseFeeds(value: unknown, installer: string, reserved: readonly string[]): Feeds | null {
  if (value === undefined) return null;
  if (!isObject(value)) throw new ReleaseProblem("manifest feeds must be an object");
  only(value, "feeds", FEED_NAMES);
  const feeds: { -readonly [K in keyof Feeds]: Feeds[K] } = {};
  const notReserved = (file: string) => (file === installer || reserved.includes(file) ? "must not be the installer, the manifest or its signature" : null);
  if (value.electron !== undefined) {
    const e = value.electron;
    if (!isObject(e)) throw new ReleaseProblem("manifest feeds.electron must be an object");
    only(e, "feeds.electron", ["blockmap", "blockMapSize"]);
    // electron-updater asks for `<installer URL>.blockmap`, and for an older release's at the same path with its version.
    const blockmap =
      e.blockmap === undefined
        ? null
        : feedFile(e.blockmap, "feeds.electron.blockmap", "blockmap", (f) => (f === `${installer}.blockmap` ? null : `must be ${installer}.blockmap`));
    const blockMapSize = e.blockMapSize === undefined ? null : e.blockMapSize;
    if (
      blockMapSize !== null &&
      (!Number.isSafeInteger(blockMapSize) || (blockMapSize as number) < 1 || (blockMapSize as number) > MAX_FEED_FILE_BYTES.blockmap)
    )
      throw new ReleaseProblem(`manifest feeds.electron.blockMapSize must be a whole number of bytes, at most ${MAX_FEED_FILE_BYTES.blockmap}`);
    feeds.electron = Object.freeze({ blockmap, blockMapSize: blockMapSize as number | null });
  }
  if (value.tauri !== undefined) {
    const t = value.tauri;
    if (!isObject(t)) throw new ReleaseProblem("manifest feeds.tauri must be an object");
    only(t, "feeds.tauri", ["signature"]);
    feeds.tauri = Object.freeze({ signature: feedFile(t.signature, "feeds.tauri.signature", "signature", notReserved) });
  }
  if (value.sparkle !== undefined) {
    const s = value.sparkle;
    if (!isObject(s)) throw new ReleaseProblem("manifest feeds.sparkle must be an object");
    only(s, "feeds.sparkle", ["edSignature", "bundleVersion", "deltas"]);
    if (typeof s.edSignature !== "string" || !ED_SIGNATURE.test(s.edSignature))
      throw new ReleaseProblem("manifest feeds.sparkle.edSignature must be the base64 Ed25519 signature sign_update printed");
    if (s.bundleVersion !== undefined && (typeof s.bundleVersion !== "string" || !BUNDLE_VERSION.test(s.bundleVersion)))
      throw new ReleaseProblem("manifest feeds.sparkle.bundleVersion must be a CFBundleVersion like 1248 or 1.5.1");
    const deltas = deltaList(s.deltas, "feeds.sparkle.deltas", (entry, at): SparkleDelta => {
      const f = feedFile(entry, at, "delta", notReserved, ["deltaFrom", "edSignature"]);
      const d = entry as Record<string, unknown>;
      if (typeof d.deltaFrom !== "string" || !BUNDLE_VERSION.test(d.deltaFrom))
        throw new ReleaseProblem(`manifest ${at}.deltaFrom must be the CFBundleVersion the delta updates from, like 1247`);
      if (typeof d.edSignature !== "string" || !ED_SIGNATURE.test(d.edSignature))
        throw new ReleaseProblem(`manifest ${at}.edSignature must be the base64 Ed25519 signature sign_update printed for the delta`);
      return Object.freeze({ ...f, deltaFrom: d.deltaFrom, edSignature: d.edSignature });
    });
    if (new Set(deltas.map((d) => d.deltaFrom)).size !== deltas.length)
      throw new ReleaseProblem("manifest feeds.sparkle.deltas has two deltas from one deltaFrom");
    feeds.sparkle = Object.freeze({
      edSignature: s.edSignature,
      bundleVersion: (s.bundleVersion as string | undefined) ?? null,
      ...(deltas.length ? { deltas } : {}),
    });
  }
  if (value.velopack !== undefined) {
    const p = value.velopack;
    if (!isObject(p)) throw new ReleaseProblem("manifest feeds.velopack must be an object");
    only(p, "feeds.velopack", ["packageId", "sha1", "deltas"]);
    if (typeof p.packageId !== "string" || !PACKAGE_ID.test(p.packageId))
      throw new ReleaseProblem("manifest feeds.velopack.packageId must be a package id like MyApp");
    if (typeof p.sha1 !== "string" || !SHA1_HEX.test(p.sha1))
      throw new ReleaseProblem("manifest feeds.velopack.sha1 must be the installer's SHA-1, 40 lower-case hex digits");
    if (!installer.endsWith("-full.nupkg")) throw new ReleaseProblem("manifest feeds.velopack needs the installer to be the -full.nupkg vpk pack wrote");
    const deltas = deltaList(
      p.deltas,
      "feeds.velopack.deltas",
      (entry, at) => feedFile(entry, at, "delta", nupkgDelta(notReserved), ["sha1"]),
      MAX_FEED_DELTAS.velopack,
    );
    feeds.velopack = Object.freeze({ packageId: p.packageId, sha1: p.sha1, ...(deltas.length ? { deltas } : {}) });
  }
  if (value.squirrel !== undefined) {
    const q = value.squirrel;
    if (!isObject(q)) throw new ReleaseProblem("manifest feeds.squirrel must be an object");
    only(q, "feeds.squirrel", ["sha1", "deltas"]);
    if (typeof q.sha1 !== "string" || !SHA1_HEX.test(q.sha1))
      throw new ReleaseProblem("manifest feeds.squirrel.sha1 must be the installer's SHA-1, 40 lower-case hex digits");
    // Squirrel.Windows reads the version from the package's name (ReleaseExtensions.cs: `<id>-<version>-full.nupkg`).
    if (!installer.toLowerCase().endsWith("-full.nupkg"))
      throw new ReleaseProblem("manifest feeds.squirrel needs the installer to be the -full.nupkg Squirrel wrote");
    const deltas = deltaList(
      q.deltas,
      "feeds.squirrel.deltas",
      (entry, at) => feedFile(entry, at, "delta", nupkgDelta(notReserved), ["sha1"]),
      MAX_FEED_DELTAS.squirrel,
    );
    feeds.squirrel = Object.freeze({ sha1: q.sha1, deltas });
  }
  return Object.freeze(feeds);
}

/** The files a release's feeds serve from its folder. */
export function feedFilesOf(feeds: Feeds | null): FeedFile[] {
  return [
    feeds?.electron?.blockmap,
    feeds?.tauri?.signature,
    ...(feeds?.sparkle?.deltas ?? []),
    ...(feeds?.velopack?.deltas ?? []),
    ...(feeds?.squirrel?.deltas ?? []),
  ].filter((f): f is FeedFile => f != null);
}

/** The feeds whose manifests declare deltas. */
export type DeltaFeed = "velopack" | "sparkle" | "squirrel";

/** The delta named `file` among the deltas one feed of a release declares, or null. */
export function deltaOf(feeds: Feeds | null, feed: DeltaFeed, file: string): FeedFile | null {
  const deltas: readonly FeedFile[] = feeds?.[feed]?.deltas ?? [];
  return deltas.find((d) => d.file === file) ?? null;
}

/**
 * A feed file's bytes, read from the release folder (a regular file only, no symbolic link) and
 * checked against the manifest; throws ReleaseProblem naming what is wrong. The scan, `release
 * sign` and every request that serves one go through here, so no other bytes are ever sent.
 */
export function readFeedFile(dir: string, f: FeedFile): Buffer {
  const bytes = readRegularFile(join(dir, f.file), `feed file ${f.file}`, Math.max(f.size, 1));
  if (bytes.length !== f.size) throw new ReleaseProblem(`feed file ${f.file} is ${bytes.length} bytes, the manifest says ${f.size}`);
  if (createHash("sha256").update(bytes).digest("hex") !== f.sha256) throw new ReleaseProblem(`feed file ${f.file} does not match the manifest's sha256`);
  if (f.sha1 !== undefined && createHash("sha1").update(bytes).digest("hex") !== f.sha1)
    throw new ReleaseProblem(`feed file ${f.file} does not match the manifest's sha1`);
  return bytes;
}

/**
 * Checks every feed file of a release folder (scan, `release sign`), and an embedded blockmap's
 * size against the installer's last four bytes (big-endian, as app-builder appends it).
 */
export function checkFeedFiles(dir: string, feeds: Feeds | null, installer?: string): void {
  for (const f of feedFilesOf(feeds)) readFeedFile(dir, f);
  const embedded = feeds?.electron?.blockMapSize;
  if (embedded != null && installer !== undefined) {
    const fd = openSync(join(dir, installer), "r");
    try {
      const size = fstatSync(fd).size;
      const tail = Buffer.alloc(4);
      if (size < embedded + 4 || readSync(fd, tail, 0, 4, size - 4) !== 4 || tail.readUInt32BE(0) !== embedded)
        throw new ReleaseProblem(`installer ${installer} does not end with an embedded blockmap of ${embedded} bytes (feeds.electron.blockMapSize)`);
    } finally {
      closeSync(fd);
    }
  }
}
