/**
 * Drives one request shape through `app.handle` in a loop, in-process, so the runtime's profiler
 * sees only request work (a profile of the server under wrk is mostly the event loop waiting).
 * `bun --cpu-prof-md bench/profile-handle.ts manifest|current|activate|activate-leased|releases [seconds]`
 * `activate-leased`: a full license of 16 seats with a 1 minute lease, the clock moved past the
 * lease before each group of 16, so every activation reclaims a lapsed seat (the costliest way in).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import { inProcessSite } from "./lib/in-process-site";
import { makeSmallTree } from "./lib/small-tree";

const what = process.argv[2] ?? "manifest";
const seconds = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), "keyturn-profile-"));
generateKeyFiles(join(dir, "keys"), VARIANTS.alpha.defaultLicenseKid);
makeSmallTree(join(dir, "releases"));
const leased = what === "activate-leased";
let offset = 0;
const { app, store, activateRequest, bearer } = await inProcessSite({
  dir,
  seats: leased ? 16 : 1_000_000,
  ...(leased ? { seatLease: "1m" } : {}),
  clock: () => Date.now() + offset,
});
const auth = await bearer();
const make: Record<string, () => Request> = {
  manifest: () => new Request("http://localhost/api/v1/updates/alpha/stable/win-x64/alpha-update.json", { headers: auth }),
  current: () => new Request("http://localhost/api/v1/entitlements/current", { headers: auth }),
  releases: () => new Request("http://localhost/api/v1/releases?product=alpha", { headers: auth }),
  activate: activateRequest,
  "activate-leased": activateRequest,
};
const request = make[what]!;
let count = 0;
const cpuStart = process.cpuUsage();
const end = performance.now() + seconds * 1000;
// Requests go in groups of 16 at once, as from 16 connections: the writes of a group share one commit.
const once = async () => {
  const r = await app.handle(request());
  if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
  await r.arrayBuffer();
};
while (performance.now() < end) {
  for (let i = 0; i < 10; i++) {
    if (leased) offset += 61_000;
    await Promise.all(Array.from({ length: 16 }, once));
  }
  count += 160;
}
// CPU time per request as well: on a shared machine the wall-clock rate moves with the neighbours' load.
const cpu = process.cpuUsage(cpuStart);
console.log(
  `${what}: ${(count / seconds).toFixed(0)} handled/s in-process (${((seconds * 1e6) / count).toFixed(1)} µs each, ${((cpu.user + cpu.system) / count).toFixed(1)} µs CPU each)`,
);
await store.close();
rmSync(dir, { recursive: true, force: true });
