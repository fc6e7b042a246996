/**
 * Run by release-table.test.ts in a process of its own, whose stack holds nothing of the suite's
 * (the collector scans the stack conservatively, so a stale word there could keep what a test
 * made): prints the objects 10,000 releases cost the heap, packed in an index and kept as read.
 */
import { heapStats } from "bun:jsc";
import type { ReleaseFiles } from "../../src/domain/releases/files";
import type { Manifest } from "../../src/domain/releases/manifest";
import { releaseIn, ReleaseIndex, ServedTreeRelease, type Release } from "../../src/domain/releases/release-index";

const COUNT = 10_000;

function manifest(n: number): Manifest {
  const version = `3.${Math.floor(n / 100)}.${n % 100}`;
  return Object.freeze({
    product: "alpha",
    channel: "stable",
    platform: "win-x64",
    version,
    released: 100 + n,
    installer: `alpha-${version}.exe`,
    size: 1000 + n,
    sha256: n.toString(16).padStart(64, "0"),
    rollout: null,
    feeds: null,
  });
}

const files = (n: number) => Array.from({ length: 15 }, (_, i) => n * 100 + i + 0.5) as unknown as ReleaseFiles;

/** The releases as a scan reads them: each lane's newest with its bytes, the rest without. */
function asRead(): { releases: Release[]; filesOf: Map<Release, ReleaseFiles> } {
  const releases: Release[] = Array.from({ length: COUNT }, (_, n) => {
    const m = manifest(n);
    const tree = releaseIn("/srv/releases", `alpha/stable/win-x64/${m.version}`, m);
    return n === COUNT - 1 ? new ServedTreeRelease(tree, new Uint8Array([1]), '"m"', new Uint8Array([2]), '"s"') : tree;
  });
  return { releases, filesOf: new Map(releases.map((r, n) => [r, files(n)])) };
}

function objects(): number {
  Bun.gc(true);
  return heapStats().objectCount;
}

const keep: unknown[] = [];
async function perRelease(make: () => unknown): Promise<number> {
  const before = objects();
  keep.push(make());
  await Bun.sleep(1);
  const after = objects();
  keep.length = 0;
  await Bun.sleep(1);
  return (after - before) / COUNT;
}

const packed = await perRelease(() => {
  const { releases, filesOf } = asRead();
  return ReleaseIndex.of(releases, null, null, (r) => filesOf.get(r));
});
const read = await perRelease(() => asRead());
console.log(JSON.stringify({ packed, read }));
