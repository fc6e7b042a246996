/**
 * A/B of two checkouts in one process: each checkout's createApp on its own site, the same request
 * shape alternated in short rounds, so a shared machine's load falls on both alike.
 * `bun bench/ab-handle.ts /path/base /path/branch manifest|current|health|activate [rounds] [ms]`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const roots = process.argv.slice(2, 4);
const what = process.argv[4] ?? "manifest";
const rounds = Number(process.argv[5] ?? 30);
const ms = Number(process.argv[6] ?? 300);
const dirs: string[] = [];
// Not bench/lib/in-process-site.ts: each checkout is composed from its own src/, imported by path.
async function setup(root: string) {
  const { silentLogger } = await import(`${root}/src/config/log`);
  const { toConfig } = await import(`${root}/src/config/config`);
  const { VARIANTS } = await import(`${root}/src/config/variants`);
  const { compose } = await import(`${root}/src/compose`);
  // The operator's facade moved into domain/admin/; a checkout from before has it as domain/admin.ts.
  const { Admin } = await import(`${root}/src/domain/admin/operator`).catch(() => import(`${root}/src/domain/admin`));
  const { generateKeyFiles } = await import(`${root}/src/domain/keys`);
  const { createApp } = await import(`${root}/src/http/app`);
  const { makeSmallTree } = await import(`${root}/bench/lib/small-tree`);
  const dir = mkdtempSync(join(tmpdir(), "keyturn-ab-"));
  dirs.push(dir);
  generateKeyFiles(join(dir, "keys"), VARIANTS.alpha.defaultLicenseKid);
  makeSmallTree(join(dir, "releases"));
  const config = toConfig(
    {
      variant: "alpha",
      "base-url": "https://licenses.example.com",
      data: dir,
      keys: join(dir, "keys"),
      releases: join(dir, "releases"),
      "rate-limit-api": "100000000/1s",
      "rate-limit-signin": "100000000/1s",
    },
    "admin",
  );
  const { services, store } = await compose(config, { log: silentLogger, peerAddress: () => "127.0.0.1" });
  const app = createApp(services);
  await services.releases.ready();
  const admin = new Admin(config.variant, store, services.clock, services.audit);
  const { key } = await admin.createLicense({
    licensee: "Bench",
    organization: "Bench",
    plan: "p",
    planTitle: "P",
    seats: 1_000_000,
    channels: ["stable", "preview"],
    expires: null,
  });
  let n = 0;
  const activateRequest = () =>
    new Request("http://localhost/api/v1/licenses/activate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        key,
        device: { hash: `D${String(++n).padStart(42, "0")}`, name: "Bench PC", platform: "win-x64", version: "1.0.0", product: "alpha" },
      }),
    });
  const token = ((await (await app.handle(activateRequest())).json()) as { token: string }).token;
  const auth = { authorization: `Bearer ${token}` };
  const make: Record<string, () => Request> = {
    manifest: () => new Request("http://localhost/api/v1/updates/alpha/stable/win-x64/alpha-update.json", { headers: auth }),
    current: () => new Request("http://localhost/api/v1/entitlements/current", { headers: auth }),
    health: () => new Request("http://localhost/api/v1/health"),
    activate: activateRequest,
  };
  const request = make[what]!;
  const once = async () => {
    const r = await app.handle(request());
    if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  };
  return async (duration: number) => {
    let count = 0;
    const end = performance.now() + duration;
    const t0 = performance.now();
    while (performance.now() < end) {
      await Promise.all(Array.from({ length: 16 }, once));
      count += 16;
    }
    return ((performance.now() - t0) * 1000) / count;
  };
}
const runs = [] as ((d: number) => Promise<number>)[];
for (const r of roots) runs.push(await setup(r));
for (const run of runs) await run(1000); // warm
const results: number[][] = roots.map(() => []);
for (let i = 0; i < rounds; i++)
  for (let j = 0; j < runs.length; j++) {
    const k = i % 2 === 0 ? j : runs.length - 1 - j;
    results[k]!.push(await runs[k]!(ms));
  }
const q = (a: number[], p: number) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(p * (s.length - 1))]!;
};
for (let j = 0; j < roots.length; j++)
  console.log(
    `${what} ${roots[j]}: median ${q(results[j]!, 0.5).toFixed(2)} µs, p25 ${q(results[j]!, 0.25).toFixed(2)}, p75 ${q(results[j]!, 0.75).toFixed(2)}, min ${q(results[j]!, 0).toFixed(2)}`,
  );
const diffs = results[0]!.map((b, i) => results[1]![i]! - b);
console.log(
  `${what} paired difference (branch − base): median ${q(diffs, 0.5).toFixed(2)} µs, p25 ${q(diffs, 0.25).toFixed(2)}, p75 ${q(diffs, 0.75).toFixed(2)}`,
);
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
process.exit(0);
