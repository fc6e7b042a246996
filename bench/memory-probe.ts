/**
 * Where keyturn's memory goes (issue 33 item 10): composes a site in-process on a tree of FOLDERS
 * release folders, as `keyturn serve` does, drives the 4a mix through `app.handle` (65 % manifest,
 * 10 % signature, 20 % current, 4 % activation, 1 % releases list) and prints the RSS, the JS heap
 * and its largest object types at start, once ready, and after the load.
 *   bun bench/memory-probe.ts [folders (10000)] [requests (50000)]
 */
import { heapStats } from "bun:jsc";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inProcessSite, writeSignedTree } from "./lib/in-process-site";

const [nFolders = "10000", nRequests = "50000"] = process.argv.slice(2);
const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MB`;
const show = (when: string) => {
  Bun.gc(true);
  const m = process.memoryUsage();
  const h = heapStats();
  const top = Object.entries(h.objectTypeCounts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 12)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  const status = readFileSync("/proc/self/status", "utf8");
  const kb = (field: string) => mb(Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024);
  console.log(
    `${when}: rss ${mb(m.rss)} (anonymous ${kb("RssAnon")}, file-backed ${kb("RssFile")}), heap ${mb(h.heapSize)} (capacity ${mb(h.heapCapacity)}), extra ${mb(h.extraMemorySize)}, objects ${h.objectCount}\n  ${top}`,
  );
};
show("start");
const dir = mkdtempSync(join(tmpdir(), "keyturn-memory-"));
try {
  await writeSignedTree(dir, Number(nFolders));
  const { app, store, activateRequest: activate, bearer } = await inProcessSite({ dir, seats: 10_000_000 });
  show("composed, tree read, a licence made");
  // Freed memory the allocators may still hold: given a moment to return it.
  await Bun.sleep(2000);
  show("two seconds later");
  const auth = await bearer();
  const manifest = "http://localhost/api/v1/updates/alpha/stable/win-x64/alpha-update.json";
  const make = (slot: number) =>
    slot < 65
      ? new Request(manifest, { headers: auth })
      : slot < 75
        ? new Request(`${manifest}.sig`, { headers: auth })
        : slot < 95
          ? new Request("http://localhost/api/v1/entitlements/current", { headers: auth })
          : slot < 96
            ? new Request(process.env.PROBE_NO_LIST ? manifest : "http://localhost/api/v1/releases?product=alpha", { headers: auth })
            : activate();
  let peak = 0;
  for (let i = 0; i < Number(nRequests); i += 64) {
    await Promise.all(
      Array.from({ length: 64 }, async (_, j) => {
        const r = await app.handle(make((i + j) % 100));
        if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
        await r.arrayBuffer();
      }),
    );
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  console.log(`peak rss under the mix: ${mb(peak)}`);
  show("after the mix");
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
