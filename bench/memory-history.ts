/**
 * What grew: scenario 4a's mix against keyturn as built at several commits, on one tree and one set
 * of records, alternated on the same machine (bench/README.md, "4a and 5a, twelfth round").
 *
 *   bun bench/run.ts --only 4a --keep           # at the oldest commit to compare, in a checkout of it
 *   bun bench/memory-history.ts KEPT_DIR COMMIT... [--tree releases-newest] [--repeat 2] [--runs 3] [--scan]
 *
 * `--scan`: each measured start makes a whole scan, its snapshot removed (as 4a's restarted rows do)
 * instead of starting from it.
 *
 * Each measurement also reads what the heap keeps after the mix: a preloaded hook
 * (BUN_OPTIONS=--preload, which the executable honours) makes two whole collections when signalled
 * and writes JavaScriptCore's counts; the mix's peak is taken before, so the hook does not touch it.
 *
 * KEPT_DIR is that run's kept directory: its records are the oldest commit's, which every later
 * commit migrates forward. Each commit is built as `bun build --compile --minify` from a worktree
 * of its own (the same command for all, whatever its build.ts did), started twice on its own copy
 * of the records so that its snapshot and caches are its own, then measured on fresh copies of both
 * the records and the executable (a copy run before has more of its pages cached: bench/README.md,
 * "A measurement trap"), the commits alternated `--repeat` times.
 */
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { activate, mixedLoad, type MixResult } from "./lib/mixed-load";
import { startKeyturn, type ServeOptions } from "./lib/keyturn";
import { ensureTools, freePort } from "./lib/tools";

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    tree: { type: "string", default: "releases" },
    repeat: { type: "string", default: "2" },
    runs: { type: "string", default: "3" },
    seconds: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    scan: { type: "boolean", default: false },
  },
});
const [kept, ...commits] = positionals;
if (!kept || commits.length === 0) {
  console.error("usage: bun bench/memory-history.ts KEPT_DIR COMMIT... [--tree releases|releases-newest] [--repeat N] [--runs N]");
  process.exit(2);
}
const rounds = { runs: Number(flags.runs), seconds: Number(flags.seconds), warmupSeconds: Number(flags.warmup) };
const repo = join(import.meta.dir, "..");
const work = mkdtempSync(join(tmpdir(), "keyturn-history-"));
const log = (msg: string) => console.error(`[history ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** On SIGUSR2: two whole collections, then the heap's size, extra memory and objects into KEPT_HEAP_OUT. */
const HEAP_HOOK = `
const { heapStats } = require("bun:jsc");
process.on("SIGUSR2", () => {
  Bun.gc(true);
  Bun.gc(true);
  const h = heapStats();
  require("node:fs").writeFileSync(process.env.KEPT_HEAP_OUT, JSON.stringify({ heap: h.heapSize, extra: h.extraMemorySize, objects: h.objectCount }));
});
`;
const hook = join(work, "heap-hook.js");
writeFileSync(hook, HEAP_HOOK);

interface Kept {
  /** The heap after the mix and two whole collections: bytes, of which extra memory, and objects. */
  readonly heap: number;
  readonly extra: number;
  readonly objects: number;
}

function run(cmd: string[], cwd: string): string {
  const r = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

interface Built {
  readonly commit: string;
  readonly subject: string;
  readonly exe: string;
  /** The records and caches this build made for itself on the kept tree. */
  readonly data: string;
}

async function build(commit: string): Promise<Built> {
  const id = run(["git", "rev-parse", "--short=9", commit], repo);
  const subject = run(["git", "log", "-1", "--format=%s", id], repo).slice(0, 60);
  const tree = join(work, `src-${id}`);
  run(["git", "worktree", "add", "--detach", tree, id], repo);
  try {
    run(["bun", "install", "--frozen-lockfile"], tree);
    const exe = join(work, `keyturn-${id}`);
    // Since 2026-12-06 the program is an entry point of its own beside main.ts (build.ts).
    const entries = ["main.ts", "program.ts"].map((file) => join(tree, "src", file)).filter((file) => existsSync(file));
    run(["bun", "build", "--compile", "--minify", "--sourcemap=linked", ...entries, "--outfile", exe], tree);
    const data = join(work, `data-${id}`);
    cpSync(join(kept!, "data"), data, { recursive: true });
    // Another tree's snapshot would be read and refused: garbage that a start on its own has not.
    if (flags.tree !== "releases") rmSync(join(data, "release-index.snapshot"), { force: true });
    for (let start = 0; start < 2; start++) await settle(exe, data);
    return { commit: id, subject, exe, data };
  } finally {
    run(["git", "worktree", "remove", "--force", tree], repo);
  }
}

function serveOptions(exe: string, data: string, env?: Record<string, string>): ServeOptions {
  return { exe, data, keys: join(kept!, "keys"), releases: join(kept!, flags.tree!), port: freePort(), env };
}

/** One start until its first whole scan has written the snapshot (migrations, caches), then a stop. */
async function settle(exe: string, data: string): Promise<void> {
  const startedAt = Date.now();
  const server = await startKeyturn(serveOptions(exe, data));
  const snapshot = join(data, "release-index.snapshot");
  while (Date.now() - startedAt < 30_000 && !(existsSync(snapshot) && statSync(snapshot).mtimeMs >= startedAt)) await Bun.sleep(100);
  // The tree watch starts after the snapshot; a moment more lets the caches be written as well.
  await Bun.sleep(2_000);
  await server.stop();
}

async function measure(built: Built): Promise<MixResult & { readonly kept: Kept }> {
  const data = join(work, "measured-data");
  const exe = join(work, "measured-keyturn");
  const heapOut = join(work, "heap.json");
  rmSync(data, { recursive: true, force: true });
  rmSync(heapOut, { force: true });
  cpSync(built.data, data, { recursive: true });
  if (flags.scan) rmSync(join(data, "release-index.snapshot"), { force: true });
  copyFileSync(built.exe, exe);
  const server = await startKeyturn(serveOptions(exe, data, { BUN_OPTIONS: `--preload ${hook}`, KEPT_HEAP_OUT: heapOut }));
  try {
    const token = await activate(server.url, (await Bun.file(join(kept!, "site-key.txt")).text()).trim());
    const result = await mixedLoad(server, token, join(kept!, "site-key.txt"), built.commit, rounds);
    process.kill(server.pid, "SIGUSR2");
    for (let waited = 0; !existsSync(heapOut) && waited < 10_000; waited += 100) await Bun.sleep(100);
    await Bun.sleep(100);
    return { ...result, kept: JSON.parse(readFileSync(heapOut, "utf8")) as Kept };
  } finally {
    await server.stop();
    rmSync(exe, { force: true });
  }
}

ensureTools();
try {
  const builds: Built[] = [];
  for (const commit of commits) {
    log(`building ${commit}`);
    builds.push(await build(commit));
  }
  const results = new Map<string, (MixResult & { readonly kept: Kept })[]>(builds.map((b) => [b.commit, []]));
  for (let round = 0; round < Number(flags.repeat); round++)
    for (const built of builds) {
      log(`measuring ${built.commit}, round ${round + 1}`);
      const result = await measure(built);
      results.get(built.commit)!.push(result);
      console.error(result.note);
    }
  console.log(
    `4a's mix on ${join(kept, flags.tree!)}${flags.scan ? " after a whole scan" : ""}, ${rounds.runs} runs of ${rounds.seconds} s after ${rounds.warmupSeconds} s, alternated ${flags.repeat} times\n`,
  );
  console.log("| commit | subject | each run's peak (MB) | median req/s of each round | heap kept after the mix: MB (extra), objects |");
  console.log("|---|---|---|---|---|");
  for (const built of builds) {
    const measured = results.get(built.commit)!;
    const peaks = measured.flatMap((m) => m.runs.map((p) => p.toFixed(1))).join(", ");
    const heaps = measured.map((m) => `${(m.kept.heap / 1e6).toFixed(1)} (${(m.kept.extra / 1e6).toFixed(1)}), ${m.kept.objects}`).join("; ");
    console.log(`| ${built.commit} | ${built.subject.replaceAll("|", "\\|")} | ${peaks} | ${measured.map((m) => m.rps.toFixed(0)).join(", ")} | ${heaps} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
  run(["git", "worktree", "prune"], repo);
}
