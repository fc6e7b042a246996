import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/config/log";
import { VARIANTS } from "../../src/config/variants";
import { loadKeyRing } from "../../src/domain/keys";
import { ReleaseHolder } from "../../src/domain/releases/holder";
import { INLINE_HASH_MAX_BYTES, InstallerVerifier } from "../../src/domain/releases/installer-verification";
import { releaseKeysOf } from "../../src/domain/releases/signature";
import { releaseSite, ReleaseTree } from "../release-tree";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});
const bytesOf = async (r: Response) => Buffer.from(await r.arrayBuffer());
const otherBytes = (b: Uint8Array) => Buffer.from(b).map((x) => x ^ 0xff);

async function site() {
  const s = await releaseSite("gamma");
  cleanup.push(() => s.close());
  const old = s.tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
  const newest = s.tree.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
  await s.holder.rescan();
  const token = await s.token(["stable"]);
  const get = (file: string, headers: Record<string, string> = {}) => s.site.request("GET", `/updates/${newest.lane}/${file}`, { token, headers });
  return { s, old, newest, get };
}

describe("installers are served only with the bytes their manifest's sha256 names", () => {
  test("an installer replaced in place by other bytes of the same size is never served, and its release leaves the index", async () => {
    const { s, old, newest, get } = await site();
    const first = await get(newest.installer);
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect((await bytesOf(first)).equals(Buffer.from(newest.installerBytes))).toBe(true);

    const replaced = otherBytes(newest.installerBytes);
    writeFileSync(newest.installerPath, replaced);
    // Before any re-scan: a resumed download (If-Range with the old ETag) is refused, not spliced.
    const resumed = await get(newest.installer, { range: "bytes=100-", "if-range": etag });
    expect(resumed.status).toBe(503);
    expect(((await resumed.json()) as { error: string }).error).toBe("unavailable");
    // That refusal started a re-scan; whether or not it has finished, the other bytes are never sent.
    const whole = await get(newest.installer);
    expect([503, 404]).toContain(whole.status);
    expect((await bytesOf(whole)).includes(replaced.subarray(0, 64))).toBe(false);
    // The refusal started a re-scan: the release is out, its lane falls back to the previous one.
    await s.holder.rescan();
    const manifest = (await (await get(VARIANTS.gamma.manifestFile)).json()) as { version: string };
    expect(manifest.version).toBe("1.0.0");
    expect((await get(newest.installer)).status).toBe(404);
    expect((await bytesOf(await get(old.installer))).equals(Buffer.from(old.installerBytes))).toBe(true);
  });

  test("an installer renamed over by same-size other bytes (a new inode) is refused the same way", async () => {
    const { newest, get } = await site();
    expect((await get(newest.installer)).status).toBe(200);
    writeFileSync(`${newest.installerPath}.tmp`, otherBytes(newest.installerBytes));
    renameSync(`${newest.installerPath}.tmp`, newest.installerPath);
    const res = await get(newest.installer);
    expect(res.status).toBe(503);
  });

  test("a release whose installer never matched its manifest's sha256 is skipped with that reason", async () => {
    const { s, get } = await site();
    const bad = s.tree.add({ version: "2.0.0", released: "2026-11-01T00:00:00+00:00", fields: { sha256: "0".repeat(64) } });
    const index = await s.holder.rescan();
    expect(index.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.1.0");
    expect((await get(bad.installer)).status).toBe(404);
  });

  test("a release folder swapped for a symbolic link to a folder outside the tree after the scan: no outside byte is served", async () => {
    const { s, newest, get } = await site();
    expect((await get(newest.installer)).status).toBe(200);
    const outside = join(s.tree.dir, "outside");
    mkdirSync(outside);
    const secret = otherBytes(newest.installerBytes);
    writeFileSync(join(outside, newest.installer), secret);
    renameSync(newest.dir, join(s.tree.dir, "moved-away"));
    symlinkSync(outside, newest.dir);
    // Refused (503), and the re-scan it starts drops the release (404): never a byte from outside.
    for (const [i, headers] of ([{}, { range: "bytes=0-99" }, {}] as Record<string, string>[]).entries()) {
      const res = await get(newest.installer, headers);
      const body = await bytesOf(res);
      if (i === 0) expect(res.status).toBe(503);
      else expect([503, 404]).toContain(res.status);
      expect(body.includes(secret.subarray(0, 64))).toBe(false);
    }
    await s.holder.rescan();
    expect((await get(newest.installer)).status).toBe(404);
  });
});

describe("verification in the background", () => {
  test("a lane whose only release is still being hashed answers unavailable (not no_release), and /health counts it", async () => {
    const s = await releaseSite("gamma");
    cleanup.push(() => s.close());
    // Above the size hashed during the scan: left to the background, which starts once the scan is over.
    const big = s.tree.add({ version: "1.0.0", channel: "preview", installerBytes: new Uint8Array(24 << 20).fill(9) });
    await s.holder.rescan();
    const token = await s.token(["preview"]);
    const manifest = () => s.site.request("GET", `/updates/${big.lane}/${VARIANTS.gamma.manifestFile}`, { token });
    expect(s.holder.installersVerifying).toBe(1);
    const health = (await (await s.site.request("GET", "/health")).json()) as { installersVerifying?: number };
    const waiting = await manifest();
    // Still hashing when those answered (else this test proves nothing): it reads 24 MiB in 96 steps.
    expect(s.holder.installersVerifying).toBe(1);
    expect(health.installersVerifying).toBe(1);
    expect(waiting.status).toBe(503);
    expect(((await waiting.json()) as { error: string }).error).toBe("unavailable");
    const none = await s.site.request("GET", `/updates/stable/win-x64/${VARIANTS.gamma.manifestFile}`, { token: await s.token(["stable"]) });
    expect(((await none.json()) as { error: string }).error).toBe("no_release");

    await s.holder.verified();
    expect((await manifest()).status).toBe(200);
    expect((await bytesOf(await s.site.request("GET", `/updates/${big.lane}/${big.installer}`, { token }))).equals(Buffer.from(big.installerBytes))).toBe(true);
    expect(await (await s.site.request("GET", "/health")).json()).toEqual({ ok: true, status: "ok", rateLimits: "per-process", licensing: "on" });
  });

  async function holderOf(t: ReleaseTree, installers: InstallerVerifier, snapshotFile?: string) {
    const lines: Record<string, unknown>[] = [];
    const holder = new ReleaseHolder({
      root: t.root,
      variant: VARIANTS.gamma,
      releaseKeys: releaseKeysOf(await loadKeyRing(t.keysDir, VARIANTS.gamma)),
      log: createLogger("json", "debug", (line) => lines.push(JSON.parse(line))),
      installers,
      snapshotFile,
    });
    cleanup.push(() => holder.close());
    return { holder, lines };
  }

  test("a release joins only once its installer is hashed; meanwhile its lane serves the newest verified one, and restarts remember it", async () => {
    const t = new ReleaseTree("gamma");
    cleanup.push(() => t.remove());
    const cache = join(t.dir, "release-installers.cache");
    t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00", installerBytes: new Uint8Array(1000).fill(1) });
    t.add({ version: "2.0.0", released: "2026-10-01T00:00:00+00:00", channel: "preview", installerBytes: new Uint8Array(3 << 20).fill(2) });
    const big = t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00", installerBytes: new Uint8Array(3 << 20).fill(3) });
    // Nothing hashed during the scan: everything goes to the background.
    const { holder } = await holderOf(t, InstallerVerifier.open(cache, { inlineMaxBytes: 0 }));
    const first = await holder.rescan();
    expect(first.size).toBe(0);
    expect(holder.verifying(null, "stable", "win-x64")).toBe(true);
    expect(holder.verifying(null, "preview", "win-x64")).toBe(true);
    expect(holder.verifying(null, "beta", "win-x64")).toBe(false);
    expect(holder.installersVerifying).toBeGreaterThan(0);

    const after = await holder.verified();
    expect(after.all.map((r) => r.manifest.version).sort()).toEqual(["1.0.0", "1.1.0", "2.0.0"]);
    expect(after.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.1.0");
    expect(holder.verifying(null, "stable", "win-x64")).toBe(false);
    expect(holder.openInstaller(after.installersNamed(null, "stable", "win-x64", big.installer).next().value!)).not.toBeNull();

    // A restart reads the verified identities back: nothing is pending, nothing is hashed again.
    const again = InstallerVerifier.open(cache, { inlineMaxBytes: 0 });
    const restarted = await holderOf(t, again);
    const index = await restarted.holder.rescan();
    expect(index.size).toBe(3);
    expect(restarted.holder.installersVerifying).toBe(0);

    // The big installer touched (same bytes, new ctime): pending again, so its lane falls back meanwhile.
    const st = statSync(big.installerPath);
    utimesSync(big.installerPath, st.atime, new Date(st.mtimeMs + 1000));
    const changed = await restarted.holder.rescan();
    expect(changed.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
    expect((await restarted.holder.verified()).latest(null, "stable", "win-x64")!.manifest.version).toBe("1.1.0");
  });

  test("the SHA-512 (base64, for electron-updater) is hashed in the same pass, kept with the verified identity across restarts; a cache line without it is hashed again", async () => {
    const t = new ReleaseTree("gamma");
    cleanup.push(() => t.remove());
    const cache = join(t.dir, "release-installers.cache");
    const small = t.add({ version: "1.0.0", installerBytes: new Uint8Array(1000).fill(7) });
    const big = t.add({ version: "1.1.0", channel: "preview", installerBytes: new Uint8Array(2 << 20).fill(8) });
    const sha512 = (b: Uint8Array) => new Bun.CryptoHasher("sha512").update(b).digest("base64");
    const { holder } = await holderOf(t, InstallerVerifier.open(cache));
    await holder.rescan();
    const index = await holder.verified();
    const releaseOf = (r: typeof small) => index.all.find((x) => x.manifest.version === (r === small ? "1.0.0" : "1.1.0"))!;
    // Hashed inline during the scan (small) and in the background (big).
    expect(holder.installerSha512(releaseOf(small))).toBe(sha512(small.installerBytes));
    expect(holder.installerSha512(releaseOf(big))).toBe(sha512(big.installerBytes));

    const restarted = await holderOf(t, InstallerVerifier.open(cache, { inlineMaxBytes: 0 }));
    const again = await restarted.holder.rescan();
    expect(restarted.holder.installersVerifying).toBe(0);
    expect(restarted.holder.installerSha512(again.all.find((r) => r.manifest.version === "1.1.0")!)).toBe(sha512(big.installerBytes));

    // Lines that are not `<key> <sha512>` (no space, a blank line) are passed over; the last line
    // needs no newline after it.
    const lines = (await Bun.file(cache).text()).trim().split("\n");
    writeFileSync(cache, ["nospace", "", lines[0], "  ", lines[1]].join("\n"));
    const tolerant = await holderOf(t, InstallerVerifier.open(cache, { inlineMaxBytes: 0 }));
    expect((await tolerant.holder.rescan()).size).toBe(2);
    expect(tolerant.holder.installersVerifying).toBe(0);

    // A cache written before the SHA-512 was kept: its lines name no SHA-512, so the installers are hashed again.
    writeFileSync(cache, lines.map((l) => l.slice(0, l.lastIndexOf(" "))).join("\n") + "\n");
    const old = await holderOf(t, InstallerVerifier.open(cache, { inlineMaxBytes: 0 }));
    expect((await old.holder.rescan()).size).toBe(0);
    expect(old.holder.installersVerifying).toBe(2);
    expect((await old.holder.verified()).size).toBe(2);
  });

  test("between scans the verifier holds nothing: downloads and SHA-512s of the live releases come from the index, and a replaced installer is still refused", async () => {
    const t = new ReleaseTree("gamma");
    cleanup.push(() => t.remove());
    const cache = join(t.dir, "release-installers.cache");
    const sha512 = (b: Uint8Array) => new Bun.CryptoHasher("sha512").update(b).digest("base64");
    const old = t.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00", installerBytes: new Uint8Array(1000).fill(4) });
    const newest = t.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00", installerBytes: new Uint8Array(1000).fill(5) });
    const verifier = InstallerVerifier.open(cache);
    const { holder } = await holderOf(t, verifier);
    const index = await holder.rescan();
    expect(verifier.held).toBe(false);
    // What serving asks is answered by the index alone: with the file gone, nothing reads it again.
    rmSync(cache);
    const [served, packed] = index.releasesOf(null, "stable", "win-x64");
    expect(served!.manifest.version).toBe("1.1.0");
    expect(holder.installerSha512(packed!)).toBe(sha512(old.installerBytes));
    expect(holder.installerSha512(served!)).toBe(sha512(newest.installerBytes));
    expect(holder.openInstaller(packed!)).not.toBeNull();
    expect(verifier.held).toBe(false);
    // An installer replaced by other bytes is another identity: neither the index nor the verifier knows it.
    writeFileSync(old.installerPath, otherBytes(old.installerBytes));
    expect(holder.installerSha512(packed!)).toBeNull();
    expect(holder.openInstaller(packed!)).toBeNull();
  });

  test("the verifier stays in memory when its file cannot hold what it knows (no file, or an unwritable one)", async () => {
    const t = new ReleaseTree("gamma");
    cleanup.push(() => t.remove());
    t.add({ version: "1.0.0", installerBytes: new Uint8Array(1000).fill(6) });
    const inMemory = InstallerVerifier.open(null);
    await (await holderOf(t, inMemory)).holder.rescan();
    expect(inMemory.held).toBe(true);
    const unwritable = InstallerVerifier.open(join(t.dir, "no-such-directory", "release-installers.cache"));
    await (await holderOf(t, unwritable)).holder.rescan();
    expect(unwritable.held).toBe(true);
  });

  test("an installer over 1 MiB (hashed in the background) whose bytes are not its manifest's sha256 never joins, and is never served", async () => {
    const s = await releaseSite("gamma");
    cleanup.push(() => s.close());
    const size = INLINE_HASH_MAX_BYTES * 2;
    expect(size).toBeGreaterThan(INLINE_HASH_MAX_BYTES);
    s.tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    // Published with a wrong sha256 from the start.
    const wrong = s.tree.add({
      version: "1.1.0",
      released: "2026-10-01T00:00:00+00:00",
      installerBytes: new Uint8Array(size).fill(4),
      fields: { sha256: "0".repeat(64) },
    });
    // Right at first, then overwritten in place with other bytes of the same size.
    const swapped = s.tree.add({ version: "1.2.0", channel: "preview", released: "2026-10-02T00:00:00+00:00", installerBytes: new Uint8Array(size).fill(5) });
    await s.holder.rescan();
    expect(s.holder.installersVerifying).toBe(2);
    const settled = await s.holder.verified();
    expect(s.holder.installersVerifying).toBe(0);
    expect(settled.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
    expect(settled.latest(null, "preview", "win-x64")!.manifest.version).toBe("1.2.0");
    const get = async (lane: string, file: string, channels: string[]) => s.site.request("GET", `/updates/${lane}/${file}`, { token: await s.token(channels) });
    expect((await get(wrong.lane, wrong.installer, ["stable"])).status).toBe(404);

    const other = new Uint8Array(size).fill(6);
    writeFileSync(swapped.installerPath, other);
    await s.holder.rescan();
    expect(s.holder.installersVerifying).toBe(1);
    const after = await s.holder.verified();
    expect(after.latest(null, "preview", "win-x64")?.manifest.version).not.toBe("1.2.0");
    const res = await get(swapped.lane, swapped.installer, ["preview"]);
    expect(res.status).toBe(404);
    expect((await bytesOf(res)).includes(Buffer.from(other.subarray(0, 64)))).toBe(false);
  });

  test("an index snapshot serves no release whose installer is not among the verified identities (cache deleted, or written by a keyturn that did not verify)", async () => {
    const t = new ReleaseTree("gamma");
    cleanup.push(() => t.remove());
    t.add({ version: "1.0.0" });
    const cache = join(t.dir, "release-installers.cache");
    const snapshot = join(t.dir, "release-index.snapshot");
    const first = await holderOf(t, InstallerVerifier.open(cache), snapshot);
    await first.holder.start();
    first.holder.close();

    const kept = await holderOf(t, InstallerVerifier.open(cache), snapshot);
    const scanned = kept.holder.start();
    expect(kept.holder.current!.latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
    await scanned;

    rmSync(cache);
    const forgotten = await holderOf(t, InstallerVerifier.open(cache), snapshot);
    const rescanned = forgotten.holder.start();
    expect(forgotten.holder.current!.size).toBe(1);
    expect(forgotten.holder.current!.latest(null, "stable", "win-x64")).toBeUndefined();
    // The scan that follows hashes it again (small: during the scan) and serves it.
    expect((await rescanned).latest(null, "stable", "win-x64")!.manifest.version).toBe("1.0.0");
  });
});
