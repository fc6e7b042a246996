import { afterEach, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { loadKeyRing } from "../../src/domain/keys";
import { scanReleaseTree, ReleaseTreeUnreadable } from "../../src/domain/releases/scan";
import { releaseKeysOf } from "../../src/domain/releases/signature";
import { SignatureCache } from "../../src/domain/releases/signature-cache";
import { ReleaseTree } from "../release-tree";

const trees: ReleaseTree[] = [];
afterEach(() => trees.splice(0).forEach((t) => t.remove()));
function newTree(variant: VariantName) {
  const t = new ReleaseTree(variant);
  trees.push(t);
  return t;
}
async function scan(t: ReleaseTree, extra: { signatures?: SignatureCache; hashInstallers?: boolean; noKeys?: boolean } = {}) {
  const releaseKeys = extra.noKeys ? new Map() : releaseKeysOf(await loadKeyRing(t.keysDir, VARIANTS[t.variant]));
  return scanReleaseTree(t.root, { variant: VARIANTS[t.variant], releaseKeys, signatures: extra.signatures, hashInstallers: extra.hashInstallers });
}

describe.each(["alpha", "beta", "gamma"] as const)("scanning a %s tree", (variant) => {
  test("indexes live releases per lane, newest first; gamma has no product level", async () => {
    const t = newTree(variant);
    const v = VARIANTS[variant];
    const products = v.products.length > 0 ? v.products : [null];
    for (const product of products) {
      t.add({ product, version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
      t.add({ product, version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
      t.add({ product, channel: "preview", version: "1.2.0-beta.1", released: "2026-11-01T00:00:00+00:00" });
    }
    const result = await scan(t);
    expect(result.problems).toEqual([]);
    expect(result.index.size).toBe(3 * products.length);
    for (const product of products) {
      expect(result.index.latest(product, "stable", "win-x64")!.manifest.version).toBe("1.1.0");
      expect(result.index.latest(product, "preview", "win-x64")!.manifest.version).toBe("1.2.0-beta.1");
      expect(result.index.installersNamed(product, "stable", "win-x64", `${product ?? variant}-1.0.0-win-x64.exe`).next().value!.manifest.version).toBe(
        "1.0.0",
      );
    }
    expect(result.index.all.map((r) => r.manifest.released)).toEqual([...result.index.all.map((r) => r.manifest.released)].sort((a, b) => b - a));
    const first = result.index.all[0]!;
    expect(first.folder).toBe([...(first.manifest.product ? [first.manifest.product] : []), "preview", "win-x64", "1.2.0-beta.1"].join("/"));
  });
});

describe("what keeps a release folder out, one reason each", () => {
  test("bad JSON, path mismatch, missing or short installer, missing or bad signature, unknown product", async () => {
    const t = newTree("alpha");
    t.add({ version: "1.0.0" });
    writeFileSync(t.add({ version: "2.0.0" }).manifestPath, "{ not json");
    t.add({ version: "3.0.0", folder: "3.0.0", fields: { channel: "preview" } });
    unlinkSync(t.add({ version: "4.0.0" }).installerPath);
    truncateSync(t.add({ version: "5.0.0" }).installerPath, 5000);
    t.add({ version: "6.0.0", sign: false });
    const tampered = t.add({ version: "7.0.0" });
    writeFileSync(tampered.manifestPath, tampered.manifestBytes.toString().replace("7.0.0", "7.0.1"));
    mkdirSync(join(t.root, "alpha-pro", "stable"), { recursive: true });
    const result = await scan(t);
    expect(result.index.all.map((r) => r.manifest.version)).toEqual(["1.0.0"]);
    expect(result.problems).toEqual([
      { folder: "alpha-pro", reason: "unknown product (expected alpha or alpha-cli)" },
      { folder: "alpha/stable/win-x64/2.0.0", reason: "alpha-update.json is not valid JSON" },
      { folder: "alpha/stable/win-x64/3.0.0", reason: "manifest says channel preview, but the folder is under stable" },
      { folder: "alpha/stable/win-x64/4.0.0", reason: "installer alpha-4.0.0-win-x64.exe is missing" },
      { folder: "alpha/stable/win-x64/5.0.0", reason: "installer alpha-5.0.0-win-x64.exe is 5000 bytes, the manifest says 10000" },
      { folder: "alpha/stable/win-x64/6.0.0", reason: "alpha-update.json.sig is missing" },
      {
        folder: "alpha/stable/win-x64/7.0.0",
        reason: "signature does not verify with alpha-release-2026-11 (manifest changed after signing, or signed with another key)",
      },
    ]);
  });

  test("without release public keys, signatures are not checked (design.md), but the .sig must still exist", async () => {
    const t = newTree("gamma");
    const tampered = t.add({ version: "1.0.0" });
    writeFileSync(tampered.manifestPath, tampered.manifestBytes.toString().replace("1.0.0", "1.0.1"));
    t.add({ version: "2.0.0", sign: false });
    const result = await scan(t, { noKeys: true });
    expect(result.index.all.map((r) => r.manifest.version)).toEqual(["1.0.1"]);
    expect(result.problems.map((p) => p.reason)).toEqual(["gamma-update.json.sig is missing"]);
  });

  test("hidden and temporary entries are ignored: rsync's .name.XXXXXX, hidden folders", async () => {
    const t = newTree("gamma");
    const r = t.add({ version: "1.0.0" });
    writeFileSync(join(r.dir, ".gamma-1.1.0-win-x64.exe.Ab12Cd"), "partial");
    mkdirSync(join(t.root, "stable", "win-x64", ".1.1.0.partial"));
    writeFileSync(join(t.root, "stable", "win-x64", ".1.1.0.partial", "gamma-update.json"), "{");
    mkdirSync(join(t.root, ".staging"));
    writeFileSync(join(t.root, "README.txt"), "files at the top are not folders");
    const result = await scan(t);
    expect(result.problems).toEqual([]);
    expect(result.index.size).toBe(1);
  });

  test("symbolic links are not followed: an installer linked to a file outside the tree is refused", async () => {
    const t = newTree("gamma");
    const secret = join(t.dir, "secret.bin");
    const r = t.add({ version: "1.0.0" });
    writeFileSync(secret, readFileSync(r.installerPath));
    unlinkSync(r.installerPath);
    symlinkSync(secret, r.installerPath);
    const linkedFolder = t.add({ version: "2.0.0" });
    symlinkSync(linkedFolder.dir, join(t.root, "stable", "win-x64", "latest"));
    const result = await scan(t);
    expect(result.index.size).toBe(1);
    expect(result.problems).toEqual([
      { folder: "stable/win-x64/1.0.0", reason: "installer gamma-1.0.0-win-x64.exe is a symbolic link" },
      { folder: "stable/win-x64/latest", reason: "is a symbolic link (not followed)" },
    ]);
  });

  test("a FIFO in place of the manifest is refused without hanging the scan", async () => {
    const t = newTree("gamma");
    const r = t.add({ version: "1.0.0" });
    unlinkSync(r.manifestPath);
    execFileSync("mkfifo", [r.manifestPath]);
    const result = await scan(t);
    expect(result.problems).toEqual([{ folder: "stable/win-x64/1.0.0", reason: "gamma-update.json is not a regular file" }]);
  });

  test("installers are hashed only when asked (release check), never by the server's scan", async () => {
    const t = newTree("gamma");
    const r = t.add({ version: "1.0.0" });
    writeFileSync(r.installerPath, Buffer.alloc(r.installerBytes.length, 7));
    expect((await scan(t)).index.size).toBe(1);
    expect((await scan(t, { hashInstallers: true })).problems).toEqual([
      { folder: "stable/win-x64/1.0.0", reason: "installer gamma-1.0.0-win-x64.exe does not match the manifest's sha256" },
    ]);
  });

  test("an unreadable root is an error of its own (the server keeps what it serves)", async () => {
    const t = newTree("gamma");
    rmSync(t.root, { recursive: true });
    await expect(scan(t)).rejects.toBeInstanceOf(ReleaseTreeUnreadable);
  });
});

describe("what the index keeps per release", () => {
  test("one path string for the whole tree: each release joins its installer's path when asked, the same path as the folder's file", async () => {
    const t = newTree("alpha");
    const added = [t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" }), t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" })];
    const { index } = await scan(t);
    for (const r of index.all) {
      expect(Object.keys(r)).not.toContain("installerPath");
      expect(r.installerPath).toBe(added.find((a) => r.folder.endsWith(`/${a.dir.split("/").at(-1)}`))!.installerPath);
    }
    // The newest, kept with its bytes, joins it the same way.
    expect(index.latest("alpha", "stable", "win-x64")!.installerPath).toBe(added[1]!.installerPath);
  });
});

describe("signature cache", () => {
  test("a second scan checks no signature again; a restart reads the cache file; a changed manifest is a miss", async () => {
    const t = newTree("alpha");
    for (let i = 0; i < 5; i++) t.add({ version: `1.${i}.0` });
    const file = join(t.dir, "release-signatures.cache");
    const cache = SignatureCache.open(file);
    const first = await scan(t, { signatures: cache });
    cache.finishScan();
    expect(first.stats).toMatchObject({ folders: 5, verified: 5, cached: 0 });
    expect((await scan(t, { signatures: cache })).stats).toMatchObject({ verified: 0, cached: 5 });
    cache.finishScan();
    expect(readFileSync(file, "latin1").trim().split("\n")).toHaveLength(5);

    const restarted = SignatureCache.open(file);
    expect((await scan(t, { signatures: restarted })).stats).toMatchObject({ verified: 0, cached: 5 });
    restarted.finishScan();

    const tampered = t.add({ version: "1.0.0" });
    writeFileSync(tampered.manifestPath, tampered.manifestBytes.toString().replace('"size"', '"notes": "x", "size"'));
    const result = await scan(t, { signatures: SignatureCache.open(file) });
    expect(result.stats).toMatchObject({ verified: 0, cached: 4 });
    expect(result.problems.map((p) => p.folder)).toEqual(["alpha/stable/win-x64/1.0.0"]);
  });

  test("between scans a cache with a file holds no keys, and the next scan reads them again from the file", async () => {
    const t = newTree("alpha");
    for (let i = 0; i < 3; i++) t.add({ version: `1.${i}.0` });
    const file = join(t.dir, "release-signatures.cache");
    const cache = SignatureCache.open(file);
    await scan(t, { signatures: cache });
    cache.finishScan();
    expect(cache.size).toBe(0);
    expect((await scan(t, { signatures: cache })).stats).toMatchObject({ verified: 0, cached: 3 });
    cache.finishScan();
    expect(readFileSync(file, "latin1").trim().split("\n")).toHaveLength(3);

    // A file that cannot be written: the keys stay in memory, so the next scan still checks none.
    const unwritable = SignatureCache.open(join(t.dir, "no-such-directory", "cache"));
    await scan(t, { signatures: unwritable });
    unwritable.finishScan();
    expect(unwritable.size).toBe(3);
    expect((await scan(t, { signatures: unwritable })).stats).toMatchObject({ verified: 0, cached: 3 });
  });

  test("entries no longer met are dropped when the file is rewritten", async () => {
    const t = newTree("gamma");
    const a = t.add({ version: "1.0.0" });
    t.add({ version: "1.1.0" });
    const file = join(t.dir, "cache");
    const cache = SignatureCache.open(file);
    await scan(t, { signatures: cache });
    cache.finishScan();
    rmSync(a.dir, { recursive: true });
    await scan(t, { signatures: cache });
    cache.finishScan();
    expect(SignatureCache.open(file).size).toBe(1);
  });
});
