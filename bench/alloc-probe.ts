/**
 * Native allocations per request (issue 33 item 10): mimalloc's own counters (the allocator under
 * Bun, SQLite and JSC's heap alike) printed before and after 16,000 requests of one shape driven
 * through `app.handle` in groups of 16, in-process. The `total` row's second column is every byte
 * allocated so far, its last the number of allocations: the difference over 16,000 is a request's.
 *   bun bench/alloc-probe.ts manifest|current|activate|store-activate 2>&1 | grep -E "MARK|^ +total "
 * `store-activate` calls the store's activation alone (the seat, its audit line, one group commit
 * per 16), with the input a real activation gave it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { newId } from "../src/domain/ids";
import { generateKeyFiles } from "../src/domain/keys";
import type { ActivateInput } from "../src/store/types";
import { inProcessSite } from "./lib/in-process-site";
import { makeSmallTree } from "./lib/small-tree";

const what = process.argv[2] ?? "activate";
const dir = mkdtempSync(join(tmpdir(), "keyturn-alloc-"));
generateKeyFiles(join(dir, "keys"), VARIANTS.alpha.defaultLicenseKid);
makeSmallTree(join(dir, "releases"));
const { app, store, activateRequest, bearer } = await inProcessSite({ dir, seats: 1_000_000 });
const auth = await bearer();
const handled = (request: () => Request) => async () => {
  const response = await app.handle(request());
  if (response.status !== 200) throw new Error(`${response.status} ${await response.text()}`);
  await response.arrayBuffer();
};

let captured: ActivateInput | undefined;
const activate = store.activate.bind(store);
store.activate = async (input) => ((captured ??= input), activate(input));
await handled(activateRequest)();
let count = 0;
const storeActivate = async () => {
  const now = Date.now();
  const unique = `${++count}`.padStart(43, "x");
  const input = captured!;
  const audit = input.audit && { ...input.audit, ref: newId("ref", now) };
  await activate({ ...input, newId: newId("act", now), installation: unique, deviceHash: unique, now, audit });
};

const shapes: Record<string, () => Promise<unknown>> = {
  manifest: handled(() => new Request("http://localhost/api/v1/updates/alpha/stable/win-x64/alpha-update.json", { headers: auth })),
  current: handled(() => new Request("http://localhost/api/v1/entitlements/current", { headers: auth })),
  activate: handled(activateRequest),
  "store-activate": storeActivate,
};
const once = shapes[what];
if (!once) throw new Error(`usage: bun bench/alloc-probe.ts ${Object.keys(shapes).join("|")}`);
const groups = async (n: number) => {
  for (let i = 0; i < n; i++) await Promise.all(Array.from({ length: 16 }, once));
};
await groups(200); // warm: compiled code, caches, the page cache filled
console.error(`MARK ${what}: before`);
Bun.unsafe.mimallocDump();
await groups(1000);
console.error(`MARK ${what}: after 16,000`);
Bun.unsafe.mimallocDump();
await store.close();
rmSync(dir, { recursive: true, force: true });
