import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ReleaseFiles } from "../../src/domain/releases/files";
import type { Manifest } from "../../src/domain/releases/manifest";
import { isServed, releaseIn, ReleaseIndex, ServedTreeRelease, type Release } from "../../src/domain/releases/release-index";
import { PackedRelease, ReleaseTable, textHash } from "../../src/domain/releases/release-table";
import { openReleaseTables, tempDir } from "../helpers";

const ROOT = "/srv/releases";

/** A manifest with its fields in the order parseManifest gives them (manifest.ts). */
function manifest(version: string, released: number, more: Partial<Manifest> = {}): Manifest {
  const m = {
    product: "alpha",
    channel: "stable",
    platform: "win-x64",
    version,
    released,
    installer: `alpha-${version}.exe`,
    size: 1000 + released,
    sha256: "a".repeat(63) + (released % 10),
    ...more,
  };
  const { sha512, requiresFeature, rollout = null, feeds = null, ...fields } = m;
  return Object.freeze({
    ...fields,
    ...(sha512 !== undefined ? { sha512 } : {}),
    rollout,
    feeds,
    ...(requiresFeature !== undefined ? { requiresFeature } : {}),
  }) as Manifest;
}

const folderOf = (m: Manifest) => `${m.product}/${m.channel}/${m.platform}/${m.version}`;
const filesFor = (n: number) => Array.from({ length: 15 }, (_, i) => n * 100 + i + 0.5) as unknown as ReleaseFiles;
const tree = (m: Manifest) => releaseIn(ROOT, folderOf(m), m);
const served = (m: Manifest) => Object.freeze(new ServedTreeRelease(tree(m), new Uint8Array([1]), '"m"', new Uint8Array([2]), '"s"'));

describe.each([
  ["in memory", () => undefined],
  ["in a file of the data directory", () => tempDir("keyturn-table-")],
])("a release table (releases kept without their bytes, packed), its rows %s", (_, dirOf) => {
  const dir = dirOf();
  const odd = [
    manifest("1.0.0", 1),
    manifest("1.1.0", 2, { sha512: "b".repeat(128), requiresFeature: "pro.export" }),
    manifest("1.2.0-beta.1", 3, { rollout: { percent: 25, targets: { licenses: ["lic_1"], plans: [] } } }),
    manifest("1.3.0", 4, {
      feeds: { electron: { blockmap: null, blockMapSize: null }, velopack: { packageId: "Alpha", sha1: "c".repeat(40) } },
    }),
    manifest("2.0.0", 5, { product: null, channel: "preview", platform: "linux-x64", installer: "Ünïcode-2.0.0.AppImage" }),
  ];
  const table = ReleaseTable.pack(
    ROOT,
    odd.map((m, i) => ({ release: tree(m), files: i === 3 ? undefined : filesFor(i) })),
    dir,
  );

  test("each row gives back its manifest as read, every field and in the same order, and its folder and installer's path", () => {
    for (const [row, m] of odd.entries()) {
      const back = table.manifestAt(row);
      expect(back).toEqual(m);
      expect(Object.keys(back)).toEqual(Object.keys(m));
      expect(Object.isFrozen(back)).toBe(true);
      const release = table.releaseAt(row);
      expect(release.folder).toBe(folderOf(m));
      expect(release.installerPath).toBe(join(ROOT, folderOf(m), m.installer));
      expect(release.released).toBe(m.released);
      expect(release.version).toBe(m.version);
    }
  });

  test("a row's manifest is made anew each time; its release object is one and the same", () => {
    expect(table.manifestAt(2)).not.toBe(table.manifestAt(2));
    expect(table.releaseAt(2)).toBe(table.releaseAt(2));
  });

  test("files are kept exactly where given, and absent where not", () => {
    expect(table.filesAt(0)).toEqual(filesFor(0));
    expect(table.filesAt(4)).toEqual(filesFor(4));
    expect(table.filesAt(3)).toBeUndefined();
  });

  test("a folder finds its row; one not packed finds none", () => {
    for (const [row, m] of odd.entries()) expect(table.rowOf(folderOf(m))).toBe(row);
    expect(table.rowOf("alpha/stable/win-x64/9.9.9")).toBe(-1);
    expect(table.rowOf("")).toBe(-1);
  });

  test("an installer's name finds its rows: the same name only, not a prefix or a longer name", () => {
    expect([...table.rowsNamed("alpha-1.0.0.exe")]).toEqual([0]);
    expect([...table.rowsNamed("alpha-1.0.0.ex")]).toEqual([]);
    expect([...table.rowsNamed("alpha-1.0.0.exe2")]).toEqual([]);
    expect([...table.rowsNamed("alpha-1.1.0.exe")]).toEqual([1]);
    expect([...table.rowsNamed("Ünïcode-2.0.0.AppImage")]).toEqual([4]);
  });
});

describe("a release table's rows in a file", () => {
  const rows = (names: readonly string[], dir: string | undefined) =>
    ReleaseTable.pack(
      ROOT,
      names.map((name, i) => ({ release: releaseIn(ROOT, name, manifest(`1.0.${i}`, i, { installer: `${name}.exe` })), files: filesFor(i) })),
      dir,
    );

  test("the file is removed as soon as it is written: nothing is left in the directory, and the rows read back through the open file", () => {
    const dir = tempDir("keyturn-table-");
    const table = rows(["a/1", "a/2", "a/3"], dir);
    expect(readdirSync(dir)).toEqual([]);
    expect(openReleaseTables(dir).some((target) => target.endsWith("(deleted)"))).toBe(true);
    expect(table.folderAt(1)).toBe("a/2");
    expect(table.manifestAt(2).installer).toBe("a/3.exe");
    expect(table.filesAt(0)).toEqual(filesFor(0));
  });

  test("a directory that cannot be written keeps the rows in memory, read the same", () => {
    const table = rows(["a/1", "a/2"], join(tmpdir(), "keyturn-no-such-directory", "data"));
    expect(table.rowOf("a/2")).toBe(1);
    expect(table.manifestAt(0).version).toBe("1.0.0");
  });

  test("texts of one hash are told apart by reading them: folders and installers found exactly", () => {
    // Two known collisions of 32-bit FNV-1a.
    expect(textHash("costarring")).toBe(textHash("liquid"));
    expect(textHash("declinate")).toBe(textHash("macallums"));
    for (const dir of [undefined, tempDir("keyturn-table-")]) {
      const table = rows(["costarring", "x", "liquid", "declinate"], dir);
      expect(table.rowOf("costarring")).toBe(0);
      expect(table.rowOf("liquid")).toBe(2);
      expect(table.rowOf("declinate")).toBe(3);
      expect(table.rowOf("macallums")).toBe(-1);
      expect([...table.rowsNamed("liquid.exe")]).toEqual([2]);
      expect([...table.rowsNamed("costarring.exe")]).toEqual([0]);
    }
  });

  test("a release of an earlier table packed again with the same files is copied as it is, its manifest not made; with other files it is packed anew", () => {
    const dir = tempDir("keyturn-table-");
    const sha512 = "s".repeat(86) + "==";
    const first = ReleaseTable.pack(
      ROOT,
      ["a/1", "a/2"].map((name, i) => ({ release: releaseIn(ROOT, name, manifest(`1.0.${i}`, i)), files: filesFor(i), installerSha512: sha512 })),
      dir,
    );
    const made = first.manifestAt.bind(first);
    first.manifestAt = () => {
      throw new Error("a copied row's manifest was made");
    };
    const again = ReleaseTable.pack(
      ROOT,
      [0, 1].map((row) => ({ release: first.releaseAt(row), files: filesFor(row), installerSha512: sha512 })),
      dir,
    );
    for (const row of [0, 1]) {
      expect(again.manifestAt(row)).toEqual(made(row));
      expect(again.filesAt(row)).toEqual(filesFor(row));
      expect(again.installerSha512At(row)).toBe(sha512);
      expect(again.rowOf(`a/${row + 1}`)).toBe(row);
      expect([...again.rowsNamed(`alpha-1.0.${row}.exe`)]).toEqual([row]);
    }
    // Other files (the release was read again): its row is made anew from its manifest.
    first.manifestAt = made;
    const changed = ReleaseTable.pack(ROOT, [{ release: first.releaseAt(1), files: filesFor(7) }], dir);
    expect(changed.filesAt(0)).toEqual(filesFor(7));
    expect(changed.manifestAt(0)).toEqual(made(1));
    expect(changed.installerSha512At(0)).toBeUndefined();
  });

  test("a table no longer reachable closes its file", async () => {
    const dir = tempDir("keyturn-table-");
    const inDir = () => openReleaseTables(dir);
    (() => {
      for (let i = 0; i < 4; i++) rows(["a/1"], dir);
    })();
    expect(inDir().length).toBeGreaterThan(0);
    for (let tries = 0; tries < 200 && inDir().length > 0; tries++) {
      Bun.gc(true);
      await Bun.sleep(5);
    }
    expect(inDir()).toEqual([]);
  });
});

describe("an index packs the releases it keeps without bytes", () => {
  // Two lanes: each one's newest served (with bytes), the rest packed.
  const stable = [1, 2, 3, 4].map((n) => manifest(`1.${n}.0`, n));
  const beta = manifest("2.0.0", 10, { channel: "beta" });
  const releases: Release[] = [tree(stable[0]!), tree(stable[1]!), tree(stable[2]!), served(stable[3]!), served(beta)];
  const files = new Map<Release, ReleaseFiles>(releases.map((r, i) => [r, filesFor(i)]));
  const index = ReleaseIndex.of(releases, null, null, { filesOf: (r) => files.get(r) });

  test("newest first across lanes and within each; the lane's newest keeps its bytes, the rest are the table's", () => {
    expect(index.all.map((r) => r.manifest.version)).toEqual(["2.0.0", "1.4.0", "1.3.0", "1.2.0", "1.1.0"]);
    const lane = index.releasesOf("alpha", "stable", "win-x64");
    expect(lane.map((r) => r.manifest.version)).toEqual(["1.4.0", "1.3.0", "1.2.0", "1.1.0"]);
    expect(isServed(lane[0]!)).toBe(true);
    expect(lane.slice(1).every((r) => r instanceof PackedRelease)).toBe(true);
    expect(index.latest("alpha", "beta", "win-x64")?.manifest.version).toBe("2.0.0");
  });

  test("the same release objects every time, so callers may key by them", () => {
    expect(index.releasesOf("alpha", "stable", "win-x64")[2]).toBe(index.all[3]!);
    const [named] = [...index.installersNamed("alpha", "stable", "win-x64", "alpha-1.2.0.exe")];
    expect(named).toBe(index.all[3]!);
    expect([...index.installersNamed("alpha", "stable", "win-x64", "alpha-1.2.0.ex")]).toEqual([]);
  });

  test("each release's files, and what a re-scan may take unread by folder, packed or not", () => {
    for (const [i, r] of releases.entries()) {
      const known = index.known.get(r.folder)!;
      expect(known.files).toEqual(filesFor(i));
      expect(known.release.manifest).toEqual(r.manifest);
      expect(index.filesOf(known.release)).toEqual(filesFor(i));
    }
    expect(index.known.get("alpha/stable/win-x64/0.0.1")).toBeUndefined();
  });

  test("each release kept without bytes is one small object: its table and its row, nothing made from them kept", () => {
    const lane = index.releasesOf("alpha", "stable", "win-x64").slice(1);
    for (const r of lane) {
      void r.manifest;
      void r.folder;
      expect(r).toBeInstanceOf(PackedRelease);
      expect(Object.keys(r)).toEqual(["table", "row"]);
    }
  });
});
