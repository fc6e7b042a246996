/**
 * What verifying installers against their manifest's sha256 costs (issue 13, item 2), on the bench
 * tree of 10,000 release folders plus `--gib` GiB of large installers:
 * - a scan without verification, with it and nothing remembered (each small installer hashed inline),
 *   and with the verified identities read back from the data directory (a restart);
 * - the time to hash the large installers in the background, in GiB/s;
 * - a `keyturn serve` process from spawn to a 200 from /health: first start (no caches in --data)
 *   and restart (caches there), median of `--runs`, for this checkout's src/main.ts and each
 *   `--against DIR/src/main.ts` (another keyturn, e.g. one without verification), runs interleaved
 *   so a busy machine weighs on each alike.
 * `bun bench/installer-verification.ts [--folders 10000] [--gib 4] [--runs 5] [--against DIR/src/main.ts]`.
 * The large installers were just written, so they are hashed from the page cache: a start on a cold
 * disk reads them at the disk's speed instead.
 */
import { copyFileSync, createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash, createPrivateKey, randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createLogger } from "../src/config/log";
import { VARIANTS } from "../src/config/variants";
import { generateKeyFiles, loadKeyRing } from "../src/domain/keys";
import { ReleaseHolder } from "../src/domain/releases/holder";
import { InstallerVerifier } from "../src/domain/releases/installer-verification";
import { scanReleaseTree } from "../src/domain/releases/scan";
import { releaseKeysOf, signManifest } from "../src/domain/releases/signature";
import { SignatureCache } from "../src/domain/releases/signature-cache";
import { writeSmallReleases } from "./lib/fixture";

const { values: flags } = parseArgs({
  options: {
    folders: { type: "string", default: "10000" },
    gib: { type: "string", default: "4" },
    runs: { type: "string", default: "5" },
    against: { type: "string", multiple: true, default: [] },
  },
});
const FOLDERS = Number(flags.folders);
const GIB = Number(flags.gib);
const RUNS = Number(flags.runs);
const MAINS = [join(import.meta.dir, "../src/main.ts"), ...flags.against!].map((p) => resolve(p));
const variant = VARIANTS.alpha;
const dir = join(tmpdir(), `keyturn-bench-verify-${process.pid}`);
const root = join(dir, "releases");
const keys = join(dir, "keys");
const kid = "alpha-release-2026-11";
generateKeyFiles(join(dir, "signing"), kid);
mkdirSync(keys, { recursive: true });
copyFileSync(join(dir, "signing", `${kid}.pub.pem`), join(keys, `${kid}.pub.pem`));
const privateKey = createPrivateKey(readFileSync(join(dir, "signing", `${kid}.pem`), "utf8"));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;

writeSmallReleases(root, FOLDERS, { kid, privateKey });
const releaseKeys = releaseKeysOf(await loadKeyRing(keys, variant));
const signatures = SignatureCache.open(null);
await scanReleaseTree(root, { variant, releaseKeys, signatures }); // warm: the signature cache and the page cache

/** Median wall time and CPU time (user + system: what a busy machine disturbs least) of a scan. */
const scanMs = async (installers: () => InstallerVerifier | undefined) => {
  const runs: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const v = installers();
    const before = process.cpuUsage();
    const r = await scanReleaseTree(root, { variant, releaseKeys, signatures, installers: v });
    const used = process.cpuUsage(before);
    if (r.index.size !== FOLDERS) throw new Error(`${r.index.size} live of ${FOLDERS}`);
    v?.finishScan();
    runs.push(r.stats.ms);
    cpu.push((used.user + used.system) / 1000);
  }
  return `${ms(median(runs))} wall, ${ms(median(cpu))} CPU`;
};
const cacheFile = join(dir, "bench-installers.cache");
const without = await scanMs(() => undefined);
const cold = await scanMs(() => InstallerVerifier.open(null));
await scanMs(() => InstallerVerifier.open(cacheFile));
const cached = await scanMs(() => InstallerVerifier.open(cacheFile));
console.log(`scan of ${FOLDERS} folders (signatures cached), median of ${RUNS}:`);
console.log(`  without installer verification:          ${without}`);
console.log(`  verification, nothing remembered:        ${cold} (each small installer hashed during the scan)`);
console.log(`  verification, identities read back:      ${cached}`);

// Large installers, each its lane's newest release, hashed in the background (the lanes serve their
// newest verified release meanwhile).
const big: string[] = [];
for (let i = 0; i < GIB; i++) {
  const version = `9.${i}.0`;
  const product = variant.products[i % 2]!;
  const folder = join(root, product, "stable", "win-x64", version);
  mkdirSync(folder, { recursive: true });
  const name = `${product}-${version}.bin`;
  const hash = createHash("sha256");
  const out = createWriteStream(join(folder, name));
  const chunk = randomBytes(16 << 20);
  for (let written = 0; written < 1 << 30; written += chunk.length) {
    hash.update(chunk);
    if (!out.write(chunk)) await new Promise((r) => out.once("drain", r));
  }
  await new Promise((r, j) => out.end((e: unknown) => (e ? j(e) : r(null))));
  const manifest = Buffer.from(
    JSON.stringify({
      product,
      channel: "stable",
      platform: "win-x64",
      version,
      released: `2026-11-2${i}T10:00:00+00:00`,
      installer: name,
      size: 1 << 30,
      sha256: hash.digest("hex"),
    }),
  );
  writeFileSync(join(folder, variant.manifestFile), manifest);
  writeFileSync(join(folder, `${variant.manifestFile}.sig`), signManifest(manifest, { kid, privateKey }, variant));
  big.push(name);
}
if (GIB > 0) {
  const log = createLogger("json", "error", () => {});
  const verifierFile = join(dir, "holder-installers.cache");
  const holder = new ReleaseHolder({ root, variant, releaseKeys, signatures, log, installers: InstallerVerifier.open(verifierFile) });
  let t = performance.now();
  const first = await holder.rescan();
  const firstMs = performance.now() - t;
  const waiting = holder.installersVerifying;
  const all = await holder.verified();
  const hashMs = performance.now() - t;
  holder.close();
  console.log(`${GIB} GiB in ${GIB} installers beside the ${FOLDERS} folders:`);
  console.log(`  first scan: ${ms(firstMs)}, ${first.size} live, ${waiting} installers left to the background`);
  console.log(`  all verified and live after ${ms(hashMs)} (${all.size} live): ${(GIB / (hashMs / 1000)).toFixed(2)} GiB/s`);
  const again = new ReleaseHolder({ root, variant, releaseKeys, signatures, log, installers: InstallerVerifier.open(verifierFile) });
  t = performance.now();
  const restarted = await again.rescan();
  console.log(`  restart with the identities read back: scan ${ms(performance.now() - t)}, ${restarted.size} live, ${again.installersVerifying} to hash`);
  again.close();
}

/** Spawn to a 200 from /health for one `keyturn serve`; with `settle`, it then runs until every installer is verified and the index built with them. */
async function startOnce(main: string, data: string, settle = false) {
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, main, "serve", "--demo", "--data", data, "--keys", keys, "--releases", root, "--port", "0"], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const lines: { msg: string; url?: string; installersVerifying?: number }[] = [];
  void (async () => {
    let buffered = "";
    for await (const chunk of proc.stderr) {
      buffered += new TextDecoder().decode(chunk);
      for (const line of buffered.split("\n").slice(0, -1)) lines.push(JSON.parse(line));
      buffered = buffered.slice(buffered.lastIndexOf("\n") + 1);
    }
  })();
  let url: string | undefined;
  while (!(url = lines.find((l) => l.msg === "keyturn listening")?.url)) await Bun.sleep(1);
  let healthy = 0;
  for (;;) {
    const r = await fetch(`${url}/api/v1/health`).catch(() => null);
    if (r?.status === 200) {
      healthy = performance.now() - started;
      break;
    }
    await Bun.sleep(1);
  }
  // The background hashing is done once a scan reports nothing left to verify (a keyturn that does not verify reports no count).
  while (settle && !lines.some((l) => l.msg === "release index built" && !l.installersVerifying)) await Bun.sleep(20);
  proc.kill();
  await proc.exited;
  return healthy;
}
const caches = ["release-signatures.cache", "release-index.snapshot", "release-installers.cache"];
const results = MAINS.map(() => ({ first: [] as number[], restart: [] as number[] }));
for (let i = 0; i < RUNS; i++)
  for (const [m, main] of MAINS.entries()) {
    const data = join(dir, `data-${m}`);
    for (const c of caches) rmSync(join(data, "demo-alpha", c), { force: true });
    results[m]!.first.push(await startOnce(main, data, true));
    results[m]!.restart.push(await startOnce(main, data));
  }
for (const [m, main] of MAINS.entries()) {
  const r = results[m]!;
  const verifies = existsSync(join(dir, `data-${m}`, "demo-alpha", "release-installers.cache"));
  console.log(`keyturn serve (${main}${verifies ? "" : ", no installer verification"}), spawn to a 200 from /health, median of ${RUNS}:`);
  console.log(`  first start, no caches in --data:     ${ms(median(r.first))} (${r.first.map((x) => x.toFixed(0)).join(", ")})`);
  console.log(`  restart, caches in --data:            ${ms(median(r.restart))} (${r.restart.map((x) => x.toFixed(0)).join(", ")})`);
}
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
else console.log(dir);
