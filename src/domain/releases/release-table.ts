import { join } from "node:path";
import type { ReleaseFiles } from "./files";
import type { Manifest, ReleasePlace } from "./manifest";
import type { Release } from "./release-index";
import { rowsInFile, rowsInMemory, type TableRows } from "./release-table-rows";

/** A row's texts, in this order. */
const FOLDER = 0;
const VERSION = 1;
const INSTALLER = 2;
const SHA256 = 3;
const SHA512 = 4;
const FEATURE = 5;
const ROLLOUT = 6;
const FEEDS = 7;
const INSTALLER_SHA512 = 8;
const TEXTS = 9;

/** A row's bytes: its size and its files' fifteen numbers (files.ts), each text's byte length, then the texts (UTF-8). */
const SIZE_AT = 0;
const FILES_AT = 8;
const FILE_NUMBERS = 15;
const LENGTHS_AT = FILES_AT + 8 * FILE_NUMBERS;
const TEXTS_AT = LENGTHS_AT + 4 * TEXTS;

/** Which of a row's optional parts it has. */
const HAS_SHA512 = 1;
const HAS_FEATURE = 2;
const HAS_ROLLOUT = 4;
const HAS_FEEDS = 8;
const HAS_FILES = 16;
const HAS_INSTALLER_SHA512 = 32;

/** One release to pack: the release and, when known, the files it was read from and its verified installer's SHA-512. */
export interface Packable {
  readonly release: Release;
  readonly files: ReleaseFiles | undefined;
  readonly installerSha512?: string;
}

/** A text's 32-bit FNV-1a hash over its UTF-16 code units: rows are found by folder and installer name through it. */
export function textHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash | 0;
}

/** A row's bytes, read once, with each text decoded when asked. */
class RowBytes {
  constructor(private readonly bytes: Buffer) {}

  text(field: number): string {
    let at = TEXTS_AT;
    for (let f = 0; f < field; f++) at += this.bytes.readUInt32LE(LENGTHS_AT + 4 * f);
    return this.bytes.toString("utf8", at, at + this.bytes.readUInt32LE(LENGTHS_AT + 4 * field));
  }

  get size(): number {
    return this.bytes.readDoubleLE(SIZE_AT);
  }

  get files(): ReleaseFiles {
    return Array.from({ length: FILE_NUMBERS }, (_, i) => this.bytes.readDoubleLE(FILES_AT + 8 * i)) as unknown as ReleaseFiles;
  }
}

/**
 * The releases of one tree that an index holds without their bytes (all but each lane's newest),
 * packed. In memory a row is its place, flags, `released`, where its bytes are and the hashes of its
 * folder and installer's name; its texts, its size, its files' identities and its installer's
 * verified SHA-512 are bytes, kept in a file of the data directory when the index was given one
 * (release-table-rows.ts) and read when asked. One small object per release
 * (PackedRelease) stands for it; its manifest is made when asked for.
 *
 * At 10,000 releases the objects and strings of each (the release, its manifest, its files' numbers,
 * four texts) held about 10 MB of the heap after a load, and every megabyte a load finds in many
 * small objects costs more than two at its peak, where one in a few large arrays costs about 1.2;
 * the texts and numbers in memory, packed, were still 2.9 MB (bench/README.md, "4a and 5a, thirteenth
 * round" and "fifteenth round"). Immutable: a scan packs a new table.
 */
export class ReleaseTable {
  /** Each row's one object, so an index, its lanes and its callers share them. */
  private readonly releases: readonly PackedRelease[];

  private constructor(
    /** The tree's root: the installer's path is joined when asked. */
    readonly root: string,
    private readonly rows: TableRows,
    /** Where each row's bytes start, then where the last one ends. */
    private readonly starts: Float64Array,
    private readonly released: Float64Array,
    private readonly flags: Uint8Array,
    private readonly placeOf: Uint16Array,
    private readonly places: readonly ReleasePlace[],
    /** Each row's folder's hash, and the rows in the order of those hashes (rows of one hash in row order), for rowOf. */
    private readonly folderHashes: Int32Array,
    private readonly byFolder: Int32Array,
    /** The same for installers' names, for rowsNamed. */
    private readonly installerHashes: Int32Array,
    private readonly byInstaller: Int32Array,
  ) {
    this.releases = Array.from({ length: flags.length }, (_, row) => Object.freeze(new PackedRelease(this, row)) as PackedRelease);
  }

  /**
   * Packs `entries` (releases of the tree at `root`) in their order: row i is entries[i]. With
   * `dir`, the rows' bytes go to a file there; without, they stay in memory.
   */
  static pack(root: string, entries: readonly Packable[], dir?: string): ReleaseTable {
    const count = entries.length;
    const starts = new Float64Array(count + 1);
    const released = new Float64Array(count);
    const flags = new Uint8Array(count);
    const placeOf = new Uint16Array(count);
    const places: ReleasePlace[] = [];
    const placeIds = new Map<string, number>();
    const folderHashes = new Int32Array(count);
    const installerHashes = new Int32Array(count);
    // One buffer for every row, grown as needed: no object per row or text on the way.
    let bytes = Buffer.alloc(Math.max(1024, count * 512));
    let at = 0;
    const room = (needed: number) => {
      if (at + needed <= bytes.length) return;
      const grown = Buffer.alloc(Math.max(bytes.length * 2, at + needed));
      bytes.copy(grown, 0, 0, at);
      bytes = grown;
    };
    const placeIdOf = (p: ReleasePlace) => {
      const placeKey = `${p.product ?? ""}/${p.channel}/${p.platform}`;
      let place = placeIds.get(placeKey);
      if (place === undefined) {
        place = places.length;
        if (place > 0xffff) throw new Error("a release table holds at most 65,536 lanes");
        places.push(Object.freeze({ product: p.product, channel: p.channel, platform: p.platform }));
        placeIds.set(placeKey, place);
      }
      return place;
    };
    entries.forEach(({ release, files, installerSha512 }, row) => {
      // A release of an earlier table read again unchanged (a re-scan takes most so): its row is
      // copied as it is, without making its manifest.
      const from = release instanceof PackedRelease ? release : null;
      const earlier = from?.table.reusableRow(from.row, files, installerSha512);
      if (from && earlier) {
        starts[row] = at;
        room(earlier.length);
        at += earlier.copy(bytes, at);
        placeOf[row] = placeIdOf(from.place);
        flags[row] = from.table.flags[from.row]!;
        released[row] = from.released;
        folderHashes[row] = from.table.folderHashes[from.row]!;
        installerHashes[row] = from.table.installerHashes[from.row]!;
        return;
      }
      const m = release.manifest;
      placeOf[row] = placeIdOf(m);
      const texts: string[] = [];
      texts[FOLDER] = release.folder;
      texts[VERSION] = m.version;
      texts[INSTALLER] = m.installer;
      texts[SHA256] = m.sha256;
      texts[SHA512] = m.sha512 ?? "";
      texts[FEATURE] = m.requiresFeature ?? "";
      texts[ROLLOUT] = m.rollout === null ? "" : JSON.stringify(m.rollout);
      texts[FEEDS] = m.feeds === null ? "" : JSON.stringify(m.feeds);
      texts[INSTALLER_SHA512] = installerSha512 ?? "";
      flags[row] =
        (m.sha512 !== undefined ? HAS_SHA512 : 0) |
        (m.requiresFeature !== undefined ? HAS_FEATURE : 0) |
        (m.rollout !== null ? HAS_ROLLOUT : 0) |
        (m.feeds !== null ? HAS_FEEDS : 0) |
        (files !== undefined ? HAS_FILES : 0) |
        (installerSha512 !== undefined ? HAS_INSTALLER_SHA512 : 0);
      starts[row] = at;
      room(TEXTS_AT + texts.reduce((sum, text) => sum + Buffer.byteLength(text, "utf8"), 0));
      bytes.writeDoubleLE(m.size, at + SIZE_AT);
      if (files !== undefined) for (let i = 0; i < FILE_NUMBERS; i++) bytes.writeDoubleLE(files[i]!, at + FILES_AT + 8 * i);
      let textAt = at + TEXTS_AT;
      texts.forEach((text, f) => {
        const length = bytes.write(text, textAt, "utf8");
        bytes.writeUInt32LE(length, at + LENGTHS_AT + 4 * f);
        textAt += length;
      });
      at = textAt;
      released[row] = m.released;
      folderHashes[row] = textHash(release.folder);
      installerHashes[row] = textHash(m.installer);
    });
    starts[count] = at;
    const inOrderOf = (hashes: Int32Array) => Int32Array.from(hashes.keys()).sort((a, b) => hashes[a]! - hashes[b]! || a - b);
    return new ReleaseTable(
      root,
      dir === undefined ? rowsInMemory(bytes.subarray(0, at)) : rowsInFile(dir, bytes.subarray(0, at)),
      starts,
      released,
      flags,
      placeOf,
      places,
      folderHashes,
      inOrderOf(folderHashes),
      installerHashes,
      inOrderOf(installerHashes),
    );
  }

  releaseAt(row: number): PackedRelease {
    return this.releases[row]!;
  }

  /** The row's manifest, made now (a new object each time: callers do not keep it). */
  manifestAt(row: number): Manifest {
    const flags = this.flags[row]!;
    const place = this.places[this.placeOf[row]!]!;
    const bytes = this.bytesOf(row);
    return Object.freeze({
      product: place.product,
      channel: place.channel,
      platform: place.platform,
      version: bytes.text(VERSION),
      released: this.released[row]!,
      installer: bytes.text(INSTALLER),
      size: bytes.size,
      sha256: bytes.text(SHA256),
      ...(flags & HAS_SHA512 ? { sha512: bytes.text(SHA512) } : {}),
      rollout: flags & HAS_ROLLOUT ? JSON.parse(bytes.text(ROLLOUT)) : null,
      feeds: flags & HAS_FEEDS ? JSON.parse(bytes.text(FEEDS)) : null,
      ...(flags & HAS_FEATURE ? { requiresFeature: bytes.text(FEATURE) } : {}),
    });
  }

  folderAt(row: number): string {
    return this.bytesOf(row).text(FOLDER);
  }

  versionAt(row: number): string {
    return this.bytesOf(row).text(VERSION);
  }

  sha256At(row: number): string {
    return this.bytesOf(row).text(SHA256);
  }

  releasedAt(row: number): number {
    return this.released[row]!;
  }

  /** The path of the row's installer under the tree's root. */
  installerPathAt(row: number): string {
    const bytes = this.bytesOf(row);
    return join(this.root, bytes.text(FOLDER), bytes.text(INSTALLER));
  }

  /** The row's product, channel and platform (one object shared by every row of its lane). */
  placeAt(row: number): ReleasePlace {
    return this.places[this.placeOf[row]!]!;
  }

  /** The rows whose installer is named `name`, in row order: the download path looks them up. */
  rowsNamed(name: string): Int32Array {
    return this.rowsWith(this.installerHashes, this.byInstaller, name, INSTALLER);
  }

  /** The files the row was read from, when they were given. */
  filesAt(row: number): ReleaseFiles | undefined {
    return this.flags[row]! & HAS_FILES ? this.bytesOf(row).files : undefined;
  }

  /** The SHA-512 (base64) of the row's installer as verified, when it was given. */
  installerSha512At(row: number): string | undefined {
    return this.flags[row]! & HAS_INSTALLER_SHA512 ? this.bytesOf(row).text(INSTALLER_SHA512) : undefined;
  }

  /**
   * The row's bytes, when they hold exactly `files` (or no files, as none are given) and, when
   * `installerSha512` is given, a SHA-512 (the same file's, so the same one); else null.
   */
  private reusableRow(row: number, files: ReleaseFiles | undefined, installerSha512: string | undefined): Buffer | null {
    const flags = this.flags[row]!;
    if ((files !== undefined) !== Boolean(flags & HAS_FILES)) return null;
    if (installerSha512 !== undefined && !(flags & HAS_INSTALLER_SHA512)) return null;
    const bytes = this.rows.read(this.starts[row]!, this.starts[row + 1]!);
    if (files !== undefined) for (let i = 0; i < FILE_NUMBERS; i++) if (bytes.readDoubleLE(FILES_AT + 8 * i) !== files[i]) return null;
    return bytes;
  }

  /** The row of the release in `folder`, or -1. */
  rowOf(folder: string): number {
    return this.rowsWith(this.folderHashes, this.byFolder, folder, FOLDER)[0] ?? -1;
  }

  /** The rows whose text `field` is `text`, in row order: those of its hash, each read to compare. */
  private rowsWith(hashes: Int32Array, order: Int32Array, text: string, field: number): Int32Array {
    const hash = textHash(text);
    let low = 0;
    let high = order.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (hashes[order[middle]!]! < hash) low = middle + 1;
      else high = middle;
    }
    const found: number[] = [];
    for (let at = low; at < order.length && hashes[order[at]!] === hash; at++) {
      const row = order[at]!;
      if (this.bytesOf(row).text(field) === text) found.push(row);
    }
    return Int32Array.from(found);
  }

  private bytesOf(row: number): RowBytes {
    return new RowBytes(this.rows.read(this.starts[row]!, this.starts[row + 1]!));
  }
}

/** A release of a table: its manifest, folder and installer's path are read from the table when asked. */
export class PackedRelease implements Release {
  constructor(
    /** Read by a table packing the same release again (ReleaseTable.pack), which copies its row. */
    readonly table: ReleaseTable,
    readonly row: number,
  ) {}

  get manifest(): Manifest {
    return this.table.manifestAt(this.row);
  }

  get folder(): string {
    return this.table.folderAt(this.row);
  }

  get root(): string {
    return this.table.root;
  }

  get installerPath(): string {
    return this.table.installerPathAt(this.row);
  }

  /** Its product, channel and platform, without making its manifest. */
  get place(): ReleasePlace {
    return this.table.placeAt(this.row);
  }

  /** Its manifest's `released`, without making its manifest (an index sorts by it). */
  get released(): number {
    return this.table.releasedAt(this.row);
  }

  /** Its manifest's version, without making its manifest. */
  get version(): string {
    return this.table.versionAt(this.row);
  }

  /** Its manifest's sha256, without making its manifest. */
  get sha256(): string {
    return this.table.sha256At(this.row);
  }

  get files(): ReleaseFiles | undefined {
    return this.table.filesAt(this.row);
  }

  get installerSha512(): string | undefined {
    return this.table.installerSha512At(this.row);
  }
}
