/**
 * What each request shape leaves in the old generation (issue 33 item 10): composes a site
 * in-process on a small tree, as `keyturn serve` does, drives one shape at a time through
 * `app.handle` with a young collection every 250 requests (as `serve` paces them,
 * src/cli/collection-pacing.ts) and prints how much the heap grew a request across 10,000. What a
 * young collection finds alive (requests in flight, what they keep) stays until a whole collection,
 * which JavaScriptCore makes only once the heap has grown by about its own live size again.
 *   bun bench/promotion-probe.ts [concurrency (1)]
 */
import { edenGC, heapSize } from "bun:jsc";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REQUESTS_PER_YOUNG_COLLECTION } from "../src/cli/collection-pacing";
import { inProcessSite, writeSignedTree } from "./lib/in-process-site";

const concurrency = Number(process.argv[2] ?? 1);
const REQUESTS = 10_000;
const dir = mkdtempSync(join(tmpdir(), "keyturn-promotion-"));
try {
  await writeSignedTree(dir, 8);
  const { app, store, activateRequest, bearer } = await inProcessSite({ dir, seats: 10_000_000 });
  const auth = await bearer();
  const manifest = "http://localhost/api/v1/updates/alpha/stable/win-x64/alpha-update.json";
  const shapes: Record<string, () => Request> = {
    manifest: () => new Request(manifest, { headers: auth }),
    signature: () => new Request(`${manifest}.sig`, { headers: auth }),
    current: () => new Request("http://localhost/api/v1/entitlements/current", { headers: auth }),
    releases: () => new Request("http://localhost/api/v1/releases?product=alpha", { headers: auth }),
    activate: activateRequest,
  };
  const drive = async (make: () => Request, count: number) => {
    for (let sent = 0; sent < count; sent += concurrency) {
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          const r = await app.handle(make());
          if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
          await r.arrayBuffer();
        }),
      );
      // The young collection after the turn that served the 250th request, as serve schedules it.
      if (Math.floor((sent + concurrency) / REQUESTS_PER_YOUNG_COLLECTION) > Math.floor(sent / REQUESTS_PER_YOUNG_COLLECTION))
        await new Promise<void>((resolve) => setImmediate(() => (edenGC(), resolve())));
    }
  };
  for (const [name, make] of Object.entries(shapes)) {
    await drive(make, 3_000);
    Bun.gc(true);
    edenGC();
    const before = heapSize();
    await drive(make, REQUESTS);
    edenGC();
    const grown = heapSize() - before;
    console.log(`${name}, ${concurrency} at a time: the old generation grew ${Math.round(grown / REQUESTS)} bytes a request`);
  }
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
