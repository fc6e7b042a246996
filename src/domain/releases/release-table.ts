import { join } from "node:path";
import type { ReleaseFiles } from "./files";
import type { Manifest, ReleasePlace } from "./manifest";
import type { Release } from "./release-index";

/** A row's texts, in this order: where each starts in the table's one string. */
const FOLDER = 0;
const VERSION = 1;
const INSTALLER = 2;
const SHA256 = 3;
const SHA512 = 4;
const FEATURE = 5;
const ROLLOUT = 6;
const FEEDS = 7;
const TEXTS = 8;

/** A row's numbers: released, size, then its files' fifteen (files.ts). */
const RELEASED = 0;
const SIZE = 1;
const FILES = 2;
const NUMBERS = FILES + 15;

/** Which of a row's optional parts it has. */
const HAS_SHA512 = 1;
const HAS_FEATURE = 2;
const HAS_ROLLOUT = 4;
const HAS_FEEDS = 8;
const HAS_FILES = 16;

/** One release to pack: the release and, when known, the files it was read from. */
export interface Packable {
  readonly release: Release;
  readonly files: ReleaseFiles | undefined;
}

/**
 * The releases of one tree that an index holds without their bytes (all but each lane's newest),
 * packed: every text of every release in one string, every number in one Float64Array, and one
 * small object per release (PackedRelease) whose manifest is made when asked for. At 10,000
 * releases the objects and strings of each (the release, its manifest, its files' numbers, four
 * texts) held about 10 MB of the heap after a load, and every megabyte a load finds in many small
 * objects costs more than two at its peak, where one in a few large arrays costs about 1.2
 * (bench/README.md, "4a and 5a, thirteenth round"). Immutable: a scan packs a new table.
 */
export class ReleaseTable {
  /** Each row's one object, so an index, its lanes and its callers share them. */
  private readonly rows: readonly PackedRelease[];

  private constructor(
    /** The tree's root: the installer's path is joined when asked. */
    readonly root: string,
    private readonly text: string,
    /** TEXTS starts per row, then one end. */
    private readonly starts: Int32Array,
    private readonly numbers: Float64Array,
    private readonly flags: Uint8Array,
    private readonly placeOf: Uint16Array,
    private readonly places: readonly ReleasePlace[],
    /** Rows in folder order, for rowOf. */
    private readonly byFolder: Int32Array,
    /** Rows in installer-name order (rows of one name in row order), for rowsNamed. */
    private readonly byInstaller: Int32Array,
  ) {
    this.rows = Array.from({ length: flags.length }, (_, row) => Object.freeze(new PackedRelease(this, row)) as PackedRelease);
  }

  /** Packs `entries` (releases of the tree at `root`) in their order: row i is entries[i]. */
  static pack(root: string, entries: readonly Packable[]): ReleaseTable {
    const count = entries.length;
    const texts: string[] = [];
    const starts = new Int32Array(count * TEXTS + 1);
    const numbers = new Float64Array(count * NUMBERS);
    const flags = new Uint8Array(count);
    const placeOf = new Uint16Array(count);
    const places: ReleasePlace[] = [];
    const placeIds = new Map<string, number>();
    const folders: string[] = [];
    const installers: string[] = [];
    let at = 0;
    entries.forEach(({ release, files }, row) => {
      const m = release.manifest;
      const placeKey = `${m.product ?? ""}/${m.channel}/${m.platform}`;
      let place = placeIds.get(placeKey);
      if (place === undefined) {
        place = places.length;
        if (place > 0xffff) throw new Error("a release table holds at most 65,536 lanes");
        places.push(Object.freeze({ product: m.product, channel: m.channel, platform: m.platform }));
        placeIds.set(placeKey, place);
      }
      placeOf[row] = place;
      const fields: string[] = [];
      fields[FOLDER] = release.folder;
      fields[VERSION] = m.version;
      fields[INSTALLER] = m.installer;
      fields[SHA256] = m.sha256;
      fields[SHA512] = m.sha512 ?? "";
      fields[FEATURE] = m.requiresFeature ?? "";
      fields[ROLLOUT] = m.rollout === null ? "" : JSON.stringify(m.rollout);
      fields[FEEDS] = m.feeds === null ? "" : JSON.stringify(m.feeds);
      flags[row] =
        (m.sha512 !== undefined ? HAS_SHA512 : 0) |
        (m.requiresFeature !== undefined ? HAS_FEATURE : 0) |
        (m.rollout !== null ? HAS_ROLLOUT : 0) |
        (m.feeds !== null ? HAS_FEEDS : 0) |
        (files !== undefined ? HAS_FILES : 0);
      for (let f = 0; f < TEXTS; f++) {
        starts[row * TEXTS + f] = at;
        at += fields[f]!.length;
        texts.push(fields[f]!);
      }
      numbers[row * NUMBERS + RELEASED] = m.released;
      numbers[row * NUMBERS + SIZE] = m.size;
      if (files !== undefined) numbers.set(files, row * NUMBERS + FILES);
      folders.push(release.folder);
      installers.push(m.installer);
    });
    starts[count * TEXTS] = at;
    const inOrderOf = (texts: readonly string[]) =>
      Int32Array.from(texts.keys()).sort((a, b) => (texts[a]! < texts[b]! ? -1 : texts[a]! > texts[b]! ? 1 : a - b));
    return new ReleaseTable(root, texts.join(""), starts, numbers, flags, placeOf, places, inOrderOf(folders), inOrderOf(installers));
  }

  releaseAt(row: number): PackedRelease {
    return this.rows[row]!;
  }

  /** The row's manifest, made now (a new object each time: callers do not keep it). */
  manifestAt(row: number): Manifest {
    const flags = this.flags[row]!;
    const place = this.places[this.placeOf[row]!]!;
    return Object.freeze({
      product: place.product,
      channel: place.channel,
      platform: place.platform,
      version: this.textAt(row, VERSION),
      released: this.numbers[row * NUMBERS + RELEASED]!,
      installer: this.textAt(row, INSTALLER),
      size: this.numbers[row * NUMBERS + SIZE]!,
      sha256: this.textAt(row, SHA256),
      ...(flags & HAS_SHA512 ? { sha512: this.textAt(row, SHA512) } : {}),
      rollout: flags & HAS_ROLLOUT ? JSON.parse(this.textAt(row, ROLLOUT)) : null,
      feeds: flags & HAS_FEEDS ? JSON.parse(this.textAt(row, FEEDS)) : null,
      ...(flags & HAS_FEATURE ? { requiresFeature: this.textAt(row, FEATURE) } : {}),
    });
  }

  folderAt(row: number): string {
    return this.textAt(row, FOLDER);
  }

  versionAt(row: number): string {
    return this.textAt(row, VERSION);
  }

  releasedAt(row: number): number {
    return this.numbers[row * NUMBERS + RELEASED]!;
  }

  installerAt(row: number): string {
    return this.textAt(row, INSTALLER);
  }

  /** The row's product, channel and platform (one object shared by every row of its lane). */
  placeAt(row: number): ReleasePlace {
    return this.places[this.placeOf[row]!]!;
  }

  /** The rows whose installer is named `name`, in row order: the download path looks them up. */
  rowsNamed(name: string): Int32Array {
    const first = this.firstAtOrAfter(this.byInstaller, (row) => this.installerAt(row) >= name);
    const end = this.firstAtOrAfter(this.byInstaller, (row) => this.installerAt(row) > name);
    return this.byInstaller.subarray(first, end);
  }

  /** The files the row was read from, when they were given. */
  filesAt(row: number): ReleaseFiles | undefined {
    if (!(this.flags[row]! & HAS_FILES)) return undefined;
    const from = row * NUMBERS + FILES;
    return Array.from(this.numbers.subarray(from, from + 15)) as unknown as ReleaseFiles;
  }

  /** The row of the release in `folder`, or -1. */
  rowOf(folder: string): number {
    const at = this.firstAtOrAfter(this.byFolder, (row) => this.folderAt(row) >= folder);
    const row = this.byFolder[at];
    return row !== undefined && this.folderAt(row) === folder ? row : -1;
  }

  /** The first place in `order` whose row passes `reached` (which, along `order`, turns true once and stays true). */
  private firstAtOrAfter(order: Int32Array, reached: (row: number) => boolean): number {
    let low = 0;
    let high = order.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (reached(order[middle]!)) high = middle;
      else low = middle + 1;
    }
    return low;
  }

  private textAt(row: number, field: number): string {
    const at = row * TEXTS + field;
    return this.text.slice(this.starts[at]!, this.starts[at + 1]!);
  }
}

/** A release of a table: its manifest, folder and installer's path are read from the table when asked. */
export class PackedRelease implements Release {
  constructor(
    private readonly table: ReleaseTable,
    private readonly row: number,
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
    return join(this.table.root, this.table.folderAt(this.row), this.table.installerAt(this.row));
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

  get files(): ReleaseFiles | undefined {
    return this.table.filesAt(this.row);
  }
}
