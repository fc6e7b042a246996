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
import { silentLogger } from "../src/config/log";
import { toConfig } from "../src/config/config";
import { VARIANTS } from "../src/config/variants";
import { compose } from "../src/compose";
import { Admin } from "../src/domain/admin/operator";
import { generateKeyFiles } from "../src/domain/keys";
import { createApp } from "../src/http/app";
import { makeSmallTree } from "./lib/small-tree";

const what = process.argv[2] ?? "manifest";
const seconds = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), "keyturn-profile-"));
generateKeyFiles(join(dir, "keys"), VARIANTS.alpha.defaultLicenseKid);
makeSmallTree(join(dir, "releases"));
const config = toConfig(
  {
    variant: "alpha",
    "base-url": "https://licenses.example.com",
    data: dir,
    keys: join(dir, "keys"),
    releases: join(dir, "releases"),
    // All the load comes from one address: lift the rate limits, as bench/run.ts does.
    "rate-limit-api": "100000000/1s",
    "rate-limit-signin": "100000000/1s",
  },
  "admin",
);
const leased = what === "activate-leased";
let offset = 0;
const { services, store } = await compose(config, { log: silentLogger, peerAddress: () => "127.0.0.1", clock: () => Date.now() + offset });
const app = createApp(services);
await services.releases.ready();
const admin = new Admin(config.variant, store, services.clock, services.audit);
const { key } = await admin.createLicense({
  licensee: "Bench",
  organization: "Bench",
  plan: "p",
  planTitle: "P",
  seats: leased ? 16 : 1_000_000,
  channels: ["stable", "preview"],
  expires: null,
  ...(leased ? { seatLease: "1m" } : {}),
});
let n = 0;
const newDevice = () => ({ hash: `D${String(++n).padStart(42, "0")}`, name: "Bench PC", platform: "win-x64", version: "1.0.0", product: "alpha" });
const activateRequest = () =>
  new Request("http://localhost/api/v1/licenses/activate", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key, device: newDevice() }),
  });
const token = ((await (await app.handle(activateRequest())).json()) as { token: string }).token;
const auth = { authorization: `Bearer ${token}` };
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
