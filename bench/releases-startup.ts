/**
 * Release tree with 10,000 release folders: how long a scan takes with and without the signature
 * cache, and how long a `keyturn serve` process takes to listen and to have its index built.
 * `bun bench/releases-startup.ts [folders]`. Targets (issue 6): start to a healthy answer < 200 ms.
 */
import { copyFileSync, mkdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { VARIANTS } from "../src/config/variants";
import { generateKeyFiles, loadKeyRing } from "../src/domain/keys";
import { scanReleaseTree } from "../src/domain/releases/scan";
import { releaseKeysOf } from "../src/domain/releases/signature";
import { writeSmallReleases } from "./lib/fixture";
import { SignatureCache } from "../src/domain/releases/signature-cache";
import { loadSnapshot, saveSnapshot } from "../src/domain/releases/index-snapshot";

const N = Number(process.argv[2] ?? 10_000);
const variant = VARIANTS.alpha;
const dir = join(tmpdir(), `keyturn-bench-${process.pid}`);
const root = join(dir, "releases");
const keys = join(dir, "keys");
const kid = "alpha-release-2026-11";
generateKeyFiles(join(dir, "signing"), kid);
mkdirSync(keys, { recursive: true });
copyFileSync(join(dir, "signing", `${kid}.pub.pem`), join(keys, `${kid}.pub.pem`));
const privateKey = createPrivateKey(readFileSync(join(dir, "signing", `${kid}.pem`), "utf8"));

let t = performance.now();
writeSmallReleases(root, N, { kid, privateKey });
console.log(`wrote ${N} release folders in ${(performance.now() - t).toFixed(0)} ms`);

const releaseKeys = releaseKeysOf(await loadKeyRing(keys, variant));
const cacheFile = join(dir, "release-signatures.cache");
const cold = SignatureCache.open(cacheFile);
const a = await scanReleaseTree(root, { variant, releaseKeys, signatures: cold });
cold.finishScan();
console.log(`scan, no signature cache:   ${a.stats.ms.toFixed(0)} ms (${a.index.size} live, ${a.stats.verified} signatures verified)`);
const b = await scanReleaseTree(root, { variant, releaseKeys, signatures: SignatureCache.open(cacheFile) });
console.log(`scan, signature cache file: ${b.stats.ms.toFixed(0)} ms (${b.stats.cached} from cache, ${b.stats.verified} verified)`);
const c = await scanReleaseTree(root, { variant, releaseKeys: new Map() });
console.log(`scan, no release keys:      ${c.stats.ms.toFixed(0)} ms`);
const snapshot = { file: join(dir, "release-index.snapshot"), root, variant, releaseKeys };
t = performance.now();
saveSnapshot(snapshot, b, null);
console.log(`index snapshot written:     ${(performance.now() - t).toFixed(0)} ms (${(statSync(snapshot.file).size / 1e6).toFixed(1)} MB)`);
t = performance.now();
const loaded = loadSnapshot(snapshot);
console.log(
  `index snapshot loaded:      ${(performance.now() - t).toFixed(0)} ms (${loaded?.index.size} releases; each is checked by stat when first answered)`,
);

async function startServe(label: string) {
  const started = performance.now();
  const proc = Bun.spawn(
    [process.execPath, resolve(import.meta.dir, "../src/main.ts"), "serve", "--demo", "--data", dir, "--keys", keys, "--releases", root, "--port", "0"],
    { stdout: "ignore", stderr: "pipe" },
  );
  const marks: Record<string, number> = {};
  let buffered = "";
  for await (const chunk of proc.stderr) {
    buffered += new TextDecoder().decode(chunk);
    for (const line of buffered.split("\n").slice(0, -1)) {
      const msg = JSON.parse(line).msg as string;
      marks[msg] ??= performance.now() - started;
    }
    buffered = buffered.slice(buffered.lastIndexOf("\n") + 1);
    if (marks["keyturn listening"] !== undefined && marks["release index built"] !== undefined) break;
  }
  proc.kill();
  await proc.exited;
  const fromSnapshot = marks["release index loaded from the snapshot"];
  console.log(
    `serve (${label}): listening after ${marks["keyturn listening"]!.toFixed(0)} ms, ` +
      (fromSnapshot !== undefined ? `index from the snapshot after ${fromSnapshot.toFixed(0)} ms, ` : "") +
      `release index built after ${marks["release index built"]!.toFixed(0)} ms`,
  );
}
rmSync(cacheFile, { force: true });
rmSync(snapshot.file, { force: true });
await startServe("first start, no signature cache or snapshot");
await startServe("restart, signature cache and snapshot in --data");
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
else console.log(dir);
