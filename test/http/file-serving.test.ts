import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { loadKeyRing } from "../../src/domain/keys";
import { HANDLE_IDLE_MS, InstallerHandles } from "../../src/domain/releases/installer-handles";
import { InstallerVerifier } from "../../src/domain/releases/installer-verification";
import { scanReleaseTree } from "../../src/domain/releases/scan";
import { releaseKeysOf } from "../../src/domain/releases/signature";
import type { Every } from "../../src/domain/releases/tree-watch";
import { matchesIfNoneMatch, parseRange, parseRanges, serveFile } from "../../src/http/file-serving";
import { ReleaseTree } from "../release-tree";

const cleanup: (() => void)[] = [];
afterEach(() => cleanup.splice(0).forEach((f) => f()));

describe("Range header (RFC 9110 14.1.2), for a body of 1000 bytes", () => {
  test.each([
    ["bytes=0-99", { start: 0, end: 99 }],
    ["bytes=500-", { start: 500, end: 999 }],
    ["bytes=-100", { start: 900, end: 999 }],
    ["bytes=-5000", { start: 0, end: 999 }],
    ["bytes=990-5000", { start: 990, end: 999 }],
    ["bytes=999-999", { start: 999, end: 999 }],
    ["BYTES = 10 - 19", { start: 10, end: 19 }],
    ["bytes=1000-", "unsatisfiable"],
    ["bytes=1000-2000", "unsatisfiable"],
    ["bytes=99999999999999999999999-", "unsatisfiable"],
    ["bytes=-0", "unsatisfiable"],
    ["bytes=0-1,5-9", null],
    ["bytes=0-1, -5", null],
    ["bytes=20-10", null],
    ["bytes=-", null],
    ["bytes=abc", null],
    ["items=0-10", null],
    ["", null],
  ])("%p → %p", (header, expected) => {
    expect(parseRange(header, 1000)).toEqual(expected as never);
  });

  test("an empty body satisfies no range", () => {
    expect(parseRange("bytes=0-", 0)).toBe("unsatisfiable");
    expect(parseRange("bytes=-1", 0)).toBe("unsatisfiable");
    expect(parseRange(null, 0)).toBeNull();
  });
});

describe("Range with several ranges (the electron feed's installers: parseRanges)", () => {
  test.each([
    [
      "bytes=0-1, 5-9",
      [
        { start: 0, end: 1 },
        { start: 5, end: 9 },
      ],
    ],
    [
      "bytes=5-9,0-1",
      [
        { start: 5, end: 9 },
        { start: 0, end: 1 },
      ],
    ],
    [
      "bytes = 0-1 ,  -5",
      [
        { start: 0, end: 1 },
        { start: 995, end: 999 },
      ],
    ],
    [
      "bytes=990-2000, 0-0",
      [
        { start: 990, end: 999 },
        { start: 0, end: 0 },
      ],
    ],
    ["bytes=0-9", [{ start: 0, end: 9 }]],
    ["bytes=0-9, 9-12", null],
    ["bytes=0-9, -991", null],
    ["bytes=0-9, 20-10", null],
    ["bytes=0-9,", null],
    ["items=0-1, 5-9", null],
    ["bytes=0-9, 1000-1001", "unsatisfiable"],
    ["bytes=0-9, -0", "unsatisfiable"],
  ])("%p → %p", (header, expected) => {
    expect(parseRanges(header, 1000)).toEqual(expected as never);
  });

  test("at most 1000 ranges; one more and the whole file is sent", () => {
    const list = (n: number) => `bytes=${Array.from({ length: n }, (_, i) => `${i}-${i}`).join(",")}`;
    expect((parseRanges(list(1000), 1000) as unknown[]).length).toBe(1000);
    expect(parseRanges(list(1001), 2000)).toBeNull();
  });
});

describe("If-None-Match", () => {
  const req = (value: string) => new Request("http://localhost/", { headers: { "if-none-match": value } });
  test("matches a listed tag, a weak form of it, or *", () => {
    expect(matchesIfNoneMatch(req('"abc"'), '"abc"')).toBe(true);
    expect(matchesIfNoneMatch(req('"x", W/"abc"'), '"abc"')).toBe(true);
    expect(matchesIfNoneMatch(req("*"), '"abc"')).toBe(true);
    expect(matchesIfNoneMatch(req('"abcd"'), '"abc"')).toBe(false);
    expect(matchesIfNoneMatch(new Request("http://localhost/"), '"abc"')).toBe(false);
  });
});

describe("installer bytes are read through the descriptor whose identity was verified", () => {
  async function opened() {
    const t = new ReleaseTree("gamma");
    cleanup.push(() => t.remove());
    const r = t.add({ version: "1.0.0" });
    const installers = InstallerVerifier.open(null);
    const index = (
      await scanReleaseTree(t.root, { variant: VARIANTS.gamma, releaseKeys: releaseKeysOf(await loadKeyRing(t.keysDir, VARIANTS.gamma)), installers })
    ).index;
    let now = 1_000_000;
    const sweeps: (() => void)[] = [];
    const every: Every = (_ms, run) => {
      sweeps.push(run);
      return () => {};
    };
    const handles = new InstallerHandles(installers, () => now, every);
    cleanup.push(() => handles.close());
    const release = index.installersNamed(null, "stable", "win-x64", r.installer).next().value!;
    return { t, r, release, handles, sweeps, advance: (ms: number) => (now += ms) };
  }

  test("a folder swapped for a symbolic link after the check: the response still sends the verified bytes, never the outside ones", async () => {
    const { t, r, release, handles } = await opened();
    const path = handles.open(release)!;
    expect(path).toMatch(/^\/(proc\/self|dev)\/fd\/\d+$/);
    const outside = join(t.dir, "outside");
    mkdirSync(outside);
    writeFileSync(
      join(outside, r.installer),
      Buffer.from(r.installerBytes).map((x) => x ^ 0xff),
    );
    renameSync(r.dir, join(t.dir, "moved"));
    symlinkSync(outside, r.dir);
    const etag = `"${release.manifest.sha256}"`;
    const whole = serveFile(new Request("http://x/"), path, release.manifest.size, etag, r.installer);
    expect(Buffer.from(await whole.arrayBuffer()).equals(Buffer.from(r.installerBytes))).toBe(true);
    const part = serveFile(new Request("http://x/", { headers: { range: "bytes=10-19" } }), path, release.manifest.size, etag, r.installer);
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(Buffer.from(r.installerBytes.subarray(10, 20)))).toBe(true);
    // Opened again now, the path leads outside: refused.
    expect(handles.open(release)).toBeNull();
  });

  test("one descriptor per verified file, closed once idle", async () => {
    const { release, handles, sweeps, advance } = await opened();
    const a = handles.open(release);
    expect(handles.open(release)).toBe(a);
    expect(handles.size).toBe(1);
    advance(HANDLE_IDLE_MS - 1);
    sweeps.forEach((s) => s());
    expect(handles.size).toBe(1);
    advance(1);
    sweeps.forEach((s) => s());
    expect(handles.size).toBe(0);
  });
});
