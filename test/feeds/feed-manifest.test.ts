import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { parseManifest } from "../../src/domain/releases/manifest";
import { feedFileEntry, ReleaseTree } from "../release-tree";

const alpha = VARIANTS.alpha;
const place = { product: "alpha", channel: "stable", platform: "win-x64" };
const base = {
  product: "alpha",
  channel: "stable",
  platform: "win-x64",
  version: "1.0.0",
  released: "2026-10-01T00:00:00+00:00",
  installer: "a.exe",
  size: 1,
  sha256: "0".repeat(64),
};
const entry = (file: string) => ({ file, size: 3, sha256: "1".repeat(64) });
const parse = (feeds: unknown, installer = "a.exe") => parseManifest(Buffer.from(JSON.stringify({ ...base, installer, feeds })), alpha, place);
const problem = (feeds: unknown, installer?: string) => {
  try {
    parse(feeds, installer);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
};

describe("a manifest's feeds (signed with the rest)", () => {
  test("each feed with what it needs; no feeds: null", () => {
    expect(parseManifest(Buffer.from(JSON.stringify(base)), alpha, place).feeds).toBeNull();
    const ed = "A".repeat(86) + "==";
    expect(parse({ electron: { blockmap: entry("a.exe.blockmap") }, tauri: { signature: entry("a.exe.sig") }, sparkle: { edSignature: ed } }).feeds).toEqual({
      electron: { blockmap: entry("a.exe.blockmap"), blockMapSize: null },
      tauri: { signature: entry("a.exe.sig") },
      sparkle: { edSignature: ed, bundleVersion: null },
    });
    expect(parse({ electron: {} }).feeds).toEqual({ electron: { blockmap: null, blockMapSize: null } });
    expect(parse({ velopack: { packageId: "Alpha", sha1: "a".repeat(40) } }, "Alpha-1.0.0-full.nupkg").feeds).toEqual({
      velopack: { packageId: "Alpha", sha1: "a".repeat(40) },
    });
  });

  test.each([
    [{ squirrel: {} }, "manifest feeds.squirrel.sha1 must be the installer's SHA-1, 40 lower-case hex digits"],
    [{ nuget: {} }, 'manifest feeds has an unknown field "nuget"'],
    [{ electron: { blockmap: entry("other.blockmap") } }, "manifest feeds.electron.blockmap.file must be a.exe.blockmap"],
    [{ tauri: { signature: entry("../a.sig") } }, "manifest feeds.tauri.signature.file must be a bare file name"],
    [{ tauri: { signature: entry("alpha-update.json.sig") } }, "manifest feeds.tauri.signature.file must not be the installer, the manifest or its signature"],
    [{ tauri: { signature: { ...entry("a.sig"), size: 5000 } } }, "manifest feeds.tauri.signature.size must be a whole number of bytes, at most 4096"],
    [{ tauri: { signature: { ...entry("a.sig"), sha256: "X" } } }, "manifest feeds.tauri.signature.sha256 must be 64 lower-case hex digits"],
    [{ sparkle: { edSignature: "not base64" } }, "manifest feeds.sparkle.edSignature must be the base64 Ed25519 signature sign_update printed"],
    [{ velopack: { packageId: "Alpha", sha1: "a".repeat(40) } }, "manifest feeds.velopack needs the installer to be the -full.nupkg vpk pack wrote"],
    [{ velopack: { packageId: "Alpha" } }, "manifest feeds.velopack.sha1 must be the installer's SHA-1, 40 lower-case hex digits"],
  ])("%j is refused: %s", (feeds, message) => {
    expect(problem(feeds)).toBe(message);
  });
});

describe("release sign and release check verify feed files like the installer", () => {
  const ROOT = resolve(import.meta.dir, "../..");
  const tree = new ReleaseTree("gamma");
  afterAll(() => tree.remove());
  const run = async (args: string[]) => {
    const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), ...args], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, KEYTURN_VARIANT: undefined },
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  };

  test("a signature file changed after the manifest was written: sign refuses, check names the folder and why", async () => {
    const sig = "dGF1cmkgc2lnbmF0dXJl";
    const r = tree.add({
      version: "1.0.0",
      installer: "g.exe",
      files: { "g.exe.sig": sig },
      fields: { feeds: { tauri: { signature: feedFileEntry("g.exe.sig", sig) } } },
      sign: false,
    });
    expect((await run(["release", "sign", "--key", tree.privateKeyFile, r.manifestPath])).code).toBe(0);
    const check = await run(["release", "check", "--releases", tree.root, "--keys", tree.keysDir, "--variant", "gamma"]);
    expect([check.code, check.stdout]).toEqual([0, expect.stringContaining("live     stable/win-x64/1.0.0")]);

    writeFileSync(join(r.dir, "g.exe.sig"), sig.toUpperCase());
    const refused = await run(["release", "sign", "--key", tree.privateKeyFile, r.manifestPath]);
    expect([refused.code, refused.stderr.trim()]).toEqual([
      1,
      `keyturn: not signed: ${r.manifestPath}: feed file g.exe.sig does not match the manifest's sha256`,
    ]);
    const broken = await run(["release", "check", "--releases", tree.root, "--keys", tree.keysDir, "--variant", "gamma"]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain("PROBLEM  stable/win-x64/1.0.0: feed file g.exe.sig does not match the manifest's sha256");
    const velopack = tree.add({
      version: "2.0.0",
      installer: "G-2.0.0-full.nupkg",
      fields: { feeds: { velopack: { packageId: "G", sha1: "0".repeat(40) } } },
      sign: false,
    });
    const wrongSha1 = await run(["release", "sign", "--key", tree.privateKeyFile, velopack.manifestPath]);
    expect(wrongSha1.stderr).toContain("installer G-2.0.0-full.nupkg does not match the manifest's feeds.velopack.sha1");
    writeFileSync(join(r.dir, "g.exe.sig"), sig + "==");
    expect((await run(["release", "check", "--releases", tree.root, "--keys", tree.keysDir, "--variant", "gamma"])).stdout).toContain(
      "PROBLEM  stable/win-x64/1.0.0: feed file g.exe.sig is larger than 20 bytes",
    );
  });
});
