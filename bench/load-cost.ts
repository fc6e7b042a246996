/**
 * What loading a module costs a compiled executable before it does anything: for each module
 * given, an executable that only imports it (`bun build --compile --minify`, as keyturn is built)
 * is run once, and at its exit, after a whole collection, its resident memory and JS heap are read
 * (bench/README.md, "4a and 5a, twelfth round"). The first row is an executable that imports
 * nothing: what the runtime itself costs.
 *
 *   bun bench/load-cost.ts ./src/cli/commands ./src/http/app elysia node:crypto ...
 *
 * Paths are relative to the repository's root; package names and node: modules as they are.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const repo = join(import.meta.dir, "..");
const work = mkdtempSync(join(tmpdir(), "keyturn-load-cost-"));

/** Preloaded into each executable: at exit, a whole collection, then /proc/self/status and the heap. */
const REPORT = `
import { readFileSync } from "node:fs";
import { heapStats } from "bun:jsc";
process.on("exit", () => {
  Bun.gc(true);
  const status = readFileSync("/proc/self/status", "utf8");
  const kib = (field) => Number(new RegExp(field + ":\\\\s+(\\\\d+) kB").exec(status)[1]);
  const heap = heapStats();
  process.stderr.write("LOAD_COST " + JSON.stringify({ anon: kib("RssAnon"), file: kib("RssFile"), heap: heap.heapSize, objects: heap.objectCount }) + "\\n");
});
`;

interface Cost {
  readonly anon: number;
  readonly file: number;
  readonly heap: number;
  readonly objects: number;
}

async function costOf(module: string | null): Promise<Cost> {
  // The entry lives in the repository so that packages resolve from its node_modules; it is removed at once.
  const entry = join(repo, `.load-cost-${process.pid}.ts`);
  const specifier = module?.startsWith("./") ? join(repo, module) : module;
  writeFileSync(
    entry,
    specifier ? `import * as loaded from ${JSON.stringify(specifier)};\nif (process.argv[2] === "print") console.log(loaded);\n` : "export {};\n",
  );
  const exe = join(work, "entry");
  try {
    const built = Bun.spawnSync(["bun", "build", "--compile", "--minify", entry, "--outfile", exe], { stdout: "pipe", stderr: "pipe" });
    if (built.exitCode !== 0) throw new Error(`${module}: build failed: ${built.stderr.toString()}`);
  } finally {
    rmSync(entry, { force: true });
  }
  const hook = join(work, "report.js");
  writeFileSync(hook, REPORT);
  const ran = Bun.spawnSync([exe], { stdout: "ignore", stderr: "pipe", env: { ...process.env, BUN_OPTIONS: `--preload ${hook}` } });
  const line = ran.stderr
    .toString()
    .split("\n")
    .find((l) => l.startsWith("LOAD_COST "));
  if (!line) throw new Error(`${module}: no report: ${ran.stderr.toString()}`);
  return JSON.parse(line.slice("LOAD_COST ".length));
}

const mb = (kib: number) => ((kib * 1024) / 1e6).toFixed(1);
try {
  const base = await costOf(null);
  console.log("| module | RssAnon (MB) | RssFile (MB) | JS heap (MB) | objects |");
  console.log("|---|---|---|---|---|");
  const line = (name: string, c: Cost, over: string) =>
    console.log(
      `| ${name} | ${mb(c.anon)}${over && ` (${over}${mb(c.anon - base.anon)})`} | ${mb(c.file)}${over && ` (${over}${mb(c.file - base.file)})`} | ${(c.heap / 1e6).toFixed(1)} | ${c.objects} |`,
    );
  line("(nothing)", base, "");
  for (const module of process.argv.slice(2)) line(module, await costOf(module), "+");
} finally {
  rmSync(work, { recursive: true, force: true });
}
