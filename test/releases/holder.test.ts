import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/config/log";
import { VARIANTS } from "../../src/config/variants";
import { loadKeyRing } from "../../src/domain/keys";
import { ReleaseHolder } from "../../src/domain/releases/holder";
import { releaseKeysOf } from "../../src/domain/releases/signature";
import { openReleaseTables, tempDir } from "../helpers";
import { ReleaseTree } from "../release-tree";

const cleanup: (() => void)[] = [];
afterEach(() => cleanup.splice(0).forEach((f) => f()));

async function holderOf(t: ReleaseTree, opts: { debounceMs?: number; tableDir?: string } = {}) {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("json", "debug", (line) => lines.push(JSON.parse(line)));
  const holder = new ReleaseHolder({
    root: t.root,
    variant: VARIANTS[t.variant],
    releaseKeys: releaseKeysOf(await loadKeyRing(t.keysDir, VARIANTS[t.variant])),
    log,
    debounceMs: opts.debounceMs ?? 50,
    tableDir: opts.tableDir,
  });
  cleanup.push(() => holder.close());
  return { holder, lines };
}
function tree() {
  const t = new ReleaseTree("gamma");
  cleanup.push(() => t.remove());
  return t;
}
const latest = (h: ReleaseHolder) => h.current?.latest(null, "stable", "win-x64")?.manifest.version;

async function eventually(check: () => boolean, ms = 5000) {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await Bun.sleep(20);
  }
}

describe("release holder", () => {
  test("ready() waits for the first scan; a re-scan swaps a new index in whole, readers keep theirs", async () => {
    const t = tree();
    t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const { holder } = await holderOf(t);
    expect(holder.current).toBeNull();
    const pending = holder.ready();
    void holder.rescan();
    const before = await pending;
    expect(before.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
    t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    const after = await holder.rescan();
    expect(after).not.toBe(before);
    expect(after.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.1.0");
    expect(before.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
    expect(before.all.map((r) => r.manifest.version)).toEqual(["1.0.0"]);
    expect(after.all.map((r) => r.manifest.version)).toEqual(["1.1.0", "1.0.0"]);
  });

  test("with a table directory, the older releases are read back from its file, and the directory stays empty", async () => {
    const t = tree();
    for (const [n, month] of [
      [0, "07"],
      [1, "08"],
      [2, "09"],
    ] as const)
      t.add({ version: `1.${n}.0`, released: `2026-${month}-01T00:00:00+00:00` });
    const tableDir = tempDir("keyturn-data-");
    cleanup.push(() => rmSync(tableDir, { recursive: true, force: true }));
    const { holder } = await holderOf(t, { tableDir });
    const index = await holder.rescan();
    expect(readdirSync(tableDir)).toEqual([]);
    expect(openReleaseTables(tableDir).some((target) => target.endsWith("(deleted)"))).toBe(true);
    expect(index.releasesOf(null, "stable", "win-x64").map((r) => r.manifest.version)).toEqual(["1.2.0", "1.1.0", "1.0.0"]);
    const oldest = index.releasesOf(null, "stable", "win-x64")[2]!;
    expect(oldest.installerPath).toBe(join(t.root, oldest.folder, oldest.manifest.installer));
    expect(index.known.get(oldest.folder)?.release).toBe(oldest);
  });

  test("calls during a scan share one further scan, so no change is missed", async () => {
    const t = tree();
    t.add({ version: "1.0.0" });
    const { holder, lines } = await holderOf(t);
    const a = holder.rescan();
    const b = holder.rescan();
    const c = holder.rescan();
    expect(b).toBe(c);
    await Promise.all([a, b, c]);
    expect(lines.filter((l) => l.msg === "release index built")).toHaveLength(2);
  });

  test("a half-copied release never replaces a good one, and is served once complete", async () => {
    const t = tree();
    t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const { holder } = await holderOf(t);
    await holder.rescan();
    // rsync: the manifest and signature are in place, the installer still a hidden temporary.
    const next = t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    const temp = join(next.dir, `.${next.installer}.Xy12Zq`);
    renameSync(next.installerPath, temp);
    expect((await holder.rescan()).latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
    renameSync(temp, next.installerPath);
    expect((await holder.rescan()).latest(null, "stable", "win-x64")!.manifest.version).toBe("1.1.0");
  });

  test("one warning per broken folder and reason, not again on every re-scan", async () => {
    const t = tree();
    const broken = t.add({ version: "1.0.0" });
    rmSync(`${broken.manifestPath}.sig`);
    const { holder, lines } = await holderOf(t);
    await holder.rescan();
    await holder.rescan();
    const warnings = () => lines.filter((l) => l.msg === "release folder skipped");
    expect(warnings()).toEqual([expect.objectContaining({ level: "warn", folder: "stable/win-x64/1.0.0", reason: "gamma-update.json.sig is missing" })]);
    writeFileSync(broken.manifestPath, "{");
    await holder.rescan();
    expect(warnings()).toHaveLength(2);
  });

  test("a re-scan takes releases whose files are unchanged (lstat) as they are, and reads again only what changed", async () => {
    const t = tree();
    const old = t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const head = t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    t.add({ version: "1.0.0", channel: "preview", released: "2026-09-01T00:00:00+00:00" });
    const { holder, lines } = await holderOf(t);
    await holder.rescan();
    const built = () => lines.filter((l) => l.msg === "release index built").at(-1)!;
    expect(built()).toMatchObject({ live: 3, reused: 0, signaturesVerified: 3 });

    const again = await holder.rescan();
    expect(built()).toMatchObject({ live: 3, reused: 3, signaturesVerified: 0, signaturesCached: 0 });
    expect(Buffer.from(again.latest(null, "stable", "win-x64")!.manifestBytes).equals(head.manifestBytes)).toBe(true);

    // The newest release re-signed in place with new notes: read and checked again, its new bytes served.
    const changed = t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00", fields: { notes: "fixed" } });
    const third = await holder.rescan();
    expect(built()).toMatchObject({ live: 3, reused: 2, signaturesVerified: 1 });
    expect(Buffer.from(third.latest(null, "stable", "win-x64")!.manifestBytes).equals(changed.manifestBytes)).toBe(true);

    // A newer release added: the former newest, taken unread, keeps no bytes (only a lane's newest does).
    const newer = t.add({ version: "1.2.0", released: "2026-11-01T00:00:00+00:00" });
    const withNewer = await holder.rescan();
    expect(
      withNewer.all
        .filter((r) => "manifestBytes" in r)
        .map((r) => r.manifest.version)
        .sort(),
    ).toEqual(["1.0.0", "1.2.0"]);
    rmSync(newer.dir, { recursive: true });
    await holder.rescan();

    // The newest removed: the older one, taken unread and so without its bytes, is read for them now.
    rmSync(head.dir, { recursive: true });
    const fourth = await holder.rescan();
    expect(built()).toMatchObject({ live: 2, reused: 1 });
    const served = fourth.latest(null, "stable", "win-x64")!;
    expect(served.manifest.version).toBe("1.0.0");
    expect(Buffer.from(served.manifestBytes).equals(old.manifestBytes)).toBe(true);
    expect(served.manifestEtag).toBe(`"${new Bun.CryptoHasher("sha256").update(old.manifestBytes).digest("hex")}"`);
  });

  test("a file replaced by a symbolic link is not taken unread: the folder is refused as a scan refuses it", async () => {
    const t = tree();
    const r = t.add({ version: "1.0.0" });
    const { holder, lines } = await holderOf(t);
    await holder.rescan();
    const elsewhere = join(t.dir, "elsewhere.json");
    writeFileSync(elsewhere, r.manifestBytes);
    rmSync(r.manifestPath);
    symlinkSync(elsewhere, r.manifestPath);
    const index = await holder.rescan();
    expect(index.latest(null, "stable", "win-x64")).toBeUndefined();
    expect(lines.filter((l) => l.msg === "release folder skipped").at(-1)).toMatchObject({ reason: "gamma-update.json is a symbolic link" });
  });

  test("an unreadable tree keeps the releases already served", async () => {
    const t = tree();
    t.add({ version: "1.0.0" });
    const { holder, lines } = await holderOf(t);
    await holder.rescan();
    renameSync(t.root, `${t.root}.moved`);
    await holder.rescan();
    expect(latest(holder)).toBe("1.0.0");
    expect(lines.some((l) => l.level === "error" && String(l.error).includes("cannot read the release tree"))).toBe(true);
  });

  test("a release added while watching is in the index within seconds; temporaries alone do not re-scan", async () => {
    const t = tree();
    t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    const { holder, lines } = await holderOf(t);
    await holder.rescan();
    expect(holder.watch()).toBe(true);
    const builds = () => lines.filter((l) => l.msg === "release index built").length;
    writeFileSync(join(t.root, "stable", "win-x64", ".tmp.AbCdEf"), "x");
    await Bun.sleep(300);
    expect(builds()).toBe(1);
    t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
    await eventually(() => latest(holder) === "1.1.0");
  });
});
