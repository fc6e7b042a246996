import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/config/log";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles, loadKeyRing } from "../../src/domain/keys";
import { ReleaseHolder } from "../../src/domain/releases/holder";
import { isServed } from "../../src/domain/releases/release-index";
import { releaseKeysOf } from "../../src/domain/releases/signature";
import { ReleaseTree, type WrittenRelease } from "../release-tree";

// Issue 6: "from process start to a healthy answer under 200 ms with 10,000 release folders". The
// index of the last scan is kept in the data directory and used at start when a stat of everything
// it rests on shows no change; a release whose manifest, .sig or installer changed is never served
// from it.

const cleanup: (() => void)[] = [];
afterEach(() => cleanup.splice(0).forEach((f) => f()));

function tree() {
  const t = new ReleaseTree("gamma");
  cleanup.push(() => t.remove());
  return t;
}

/** A holder as a keyturn process has one: started once, with the snapshot file in a data directory. */
async function started(t: ReleaseTree, keysDir = t.keysDir) {
  const lines: Record<string, unknown>[] = [];
  const holder = new ReleaseHolder({
    root: t.root,
    variant: VARIANTS.gamma,
    releaseKeys: releaseKeysOf(await loadKeyRing(keysDir, VARIANTS.gamma)),
    log: createLogger("json", "debug", (line) => lines.push(JSON.parse(line))),
    snapshotFile: join(t.dir, "release-index.snapshot"),
  });
  cleanup.push(() => holder.close());
  const scanned = holder.start();
  // What is served before the scan of the tree has finished: the snapshot's index, if it was used.
  const atOnce = holder.current;
  await scanned;
  return { holder, atOnce, lines };
}

const versions = (index: ReleaseHolder["current"]) => index?.all.map((r) => r.manifest.version) ?? null;

describe("release index snapshot", () => {
  test("keeps each release's rollout, and reads an older release's bytes when a rollout serves it", async () => {
    const t = tree();
    const old = t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    t.add({ version: "1.1.0", fields: { rollout: { days: 4 } } });
    const first = await started(t);
    expect(first.holder.current!.all.map((r) => r.manifest.rollout)).toEqual([{ days: 4 }, null]);
    const second = await started(t);
    expect(second.atOnce!.all.map((r) => r.manifest.rollout)).toEqual([{ days: 4 }, null]);
    // The older release was kept without its bytes: read (and checked) from the tree when served.
    const older = second.atOnce!.releasesOf(null, "stable", "win-x64")[1]!;
    expect(isServed(older)).toBe(false);
    expect(Buffer.from(second.atOnce!.withBytes(older)!.manifestBytes).equals(old.manifestBytes)).toBe(true);
    const scanned = second.holder.current!.releasesOf(null, "stable", "win-x64")[1]!;
    expect(Buffer.from(second.holder.current!.withBytes(scanned)!.manifestBytes).equals(old.manifestBytes)).toBe(true);
  });

  test("a restart with nothing changed serves the last index at once, byte for byte, and then re-scans", async () => {
    const t = tree();
    t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const newest = t.add({ version: "1.1.0" });
    const first = await started(t);
    expect(first.atOnce).toBeNull();
    const written = statSync(join(t.dir, "release-index.snapshot"));

    const second = await started(t);
    expect(versions(second.atOnce)).toEqual(["1.1.0", "1.0.0"]);
    const served = second.atOnce!.latest(null, "stable", "win-x64")!;
    expect(Buffer.from(served.manifestBytes).equals(newest.manifestBytes)).toBe(true);
    expect(served).toEqual(first.holder.current!.latest(null, "stable", "win-x64")!);
    expect(second.lines.find((l) => l.msg === "release index loaded from the snapshot")).toMatchObject({ releases: 2 });
    // The scan still runs and its index replaces the snapshot's.
    // It takes both releases unread: their files are the very ones the snapshot was built from.
    expect(second.lines.find((l) => l.msg === "release index built")).toMatchObject({ live: 2, reused: 2, signaturesVerified: 0, signaturesCached: 0 });
    expect(second.holder.current).not.toBe(second.atOnce);
    // That scan found the very same files: the snapshot is not written again.
    expect(statSync(join(t.dir, "release-index.snapshot")).ino).toBe(written.ino);
  });

  const changes: [string, (r: WrittenRelease) => void][] = [
    ["manifest rewritten", (r) => writeFileSync(r.manifestPath, Buffer.from(r.manifestBytes.toString().replace("1.1.0", "1.1.9")))],
    ["signature replaced", (r) => writeFileSync(`${r.manifestPath}.sig`, "not a signature")],
    ["installer rewritten in place, same size", (r) => writeFileSync(r.installerPath, new Uint8Array(r.installerBytes.length))],
    [
      "installer rewritten with its old size and mtime put back (rsync -t)",
      (r) => {
        const before = statSync(r.installerPath);
        writeFileSync(r.installerPath, new Uint8Array(r.installerBytes.length).fill(7));
        utimesSync(r.installerPath, before.atime, before.mtime);
      },
    ],
  ];
  for (const [name, change] of changes)
    test(`${name} between two runs: that release is not served from the snapshot`, async () => {
      const t = tree();
      t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
      const newest = t.add({ version: "1.1.0" });
      await started(t);
      change(newest);
      const again = await started(t);
      expect(again.atOnce!.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
      expect([...again.atOnce!.installersNamed(null, "stable", "win-x64", newest.installer)]).toEqual([]);
      expect(versions(again.atOnce)).toEqual(["1.0.0"]);
      // The scan after the start reads the changed release again and refuses it (an installer of other
      // bytes, even of the old size and mtime, does not hash to the manifest's sha256). The other
      // became its lane's newest, so it is read for its bytes.
      expect(again.lines.find((l) => l.msg === "release index built")).toMatchObject({ live: 1, reused: 0 });
      if (name.startsWith("installer"))
        expect(again.lines.find((l) => l.msg === "release folder skipped")).toMatchObject({
          reason: `installer ${newest.installer} does not match the manifest's sha256`,
        });
    });

  test("a release folder added or removed since: the snapshot is not used (the lane's directory changed)", async () => {
    const t = tree();
    t.add({ version: "1.0.0" });
    await started(t);
    t.add({ version: "2.0.0", released: "2026-11-01T00:00:00+00:00" });
    const again = await started(t);
    expect(again.atOnce).toBeNull();
    expect(versions(again.holder.current)).toEqual(["2.0.0", "1.0.0"]);
  });

  test("other release keys than the snapshot was checked with: the snapshot is not used", async () => {
    const t = tree();
    t.add({ version: "1.0.0" });
    await started(t);
    const otherKeys = join(t.dir, "other-keys");
    generateKeyFiles(otherKeys, "gamma-release-2027-01");
    const again = await started(t, otherKeys);
    expect(again.atOnce).toBeNull();
  });
});

describe("a release the snapshot keeps without its bytes (not its lane's newest)", () => {
  const sha256 = (bytes: Uint8Array) => `"${new Bun.CryptoHasher("sha256").update(bytes).digest("hex")}"`;
  const changeNewest = (r: WrittenRelease) => writeFileSync(r.manifestPath, Buffer.from(r.manifestBytes.toString().replace("1.1.0", "1.1.9")));

  test("only each lane's newest release is kept with its bytes", async () => {
    const t = tree();
    t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    t.add({ version: "1.1.0" });
    t.add({ version: "2.0.0", channel: "preview" });
    await started(t);
    const again = await started(t);
    expect(
      again
        .atOnce!.all.filter(isServed)
        .map((r) => r.manifest.version)
        .sort(),
    ).toEqual(["1.1.0", "2.0.0"]);
    expect(
      again.holder
        .current!.all.filter(isServed)
        .map((r) => r.manifest.version)
        .sort(),
    ).toEqual(["1.1.0", "2.0.0"]);
  });

  test("served when the newest changed: read from the tree, byte for byte, with the ETag of the bytes read", async () => {
    const t = tree();
    const older = t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const newest = t.add({ version: "1.1.0" });
    await started(t);
    changeNewest(newest);
    const served = (await started(t)).atOnce!.latest(null, "stable", "win-x64")!;
    const signature = readFileSync(`${older.manifestPath}.sig`);
    expect(served.manifest.version).toBe("1.0.0");
    expect(Buffer.from(served.manifestBytes).equals(older.manifestBytes)).toBe(true);
    expect(served.manifestEtag).toBe(sha256(older.manifestBytes));
    expect(Buffer.from(served.signatureBytes).equals(signature)).toBe(true);
    expect(served.signatureEtag).toBe(sha256(signature));
  });

  test("read again, it is checked as a scan checks it: a release that no longer agrees with the snapshot is skipped", async () => {
    const t = tree();
    t.add({ version: "0.9.0", released: "2026-08-01T00:00:00+00:00" });
    t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const newest = t.add({ version: "1.1.0" });
    await started(t);
    changeNewest(newest);
    // What the snapshot says of 1.0.0 no longer matches its folder (its files are unchanged by stat).
    const file = join(t.dir, "release-index.snapshot");
    const snapshot = JSON.parse(readFileSync(file, "utf8"));
    snapshot.releases.find((r: { manifest: { version: string } }) => r.manifest.version === "1.0.0").manifest.sha256 = "0".repeat(64);
    writeFileSync(file, JSON.stringify(snapshot));
    const again = await started(t);
    expect(again.atOnce!.latest(null, "stable", "win-x64")!.manifest.version).toBe("0.9.0");
    expect(versions(again.atOnce)).toEqual(["0.9.0"]);
  });

  test("changed on disk too: not served from the snapshot", async () => {
    const t = tree();
    const older = t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const newest = t.add({ version: "1.1.0" });
    await started(t);
    changeNewest(newest);
    writeFileSync(`${older.manifestPath}.sig`, "not a signature");
    const again = await started(t);
    expect(again.atOnce!.latest(null, "stable", "win-x64")).toBeUndefined();
    // The scan that follows serves neither.
    expect(again.holder.current!.latest(null, "stable", "win-x64")).toBeUndefined();
  });
});

test("a snapshot naming a folder outside the tree is not used", async () => {
  const t = tree();
  t.add({ version: "1.0.0" });
  await started(t);
  const file = join(t.dir, "release-index.snapshot");
  const snapshot = JSON.parse(readFileSync(file, "utf8"));
  snapshot.releases[0].folder = "stable/win-x64/../../../keys";
  writeFileSync(file, JSON.stringify(snapshot));
  expect((await started(t)).atOnce).toBeNull();
});
