/** Runs wrk (one thread, pinned to the client core) and reads the JSON line of bench/lua/report.lua. */
import { join } from "node:path";
import { CPUS, pinned } from "./tools";

export const LUA_DIR = join(import.meta.dir, "..", "lua");

export interface WrkResult {
  readonly requests: number;
  readonly durationUs: number;
  readonly bytes: number;
  /** status: answers above 399 (wrk's own count); not200: any answer but a 200, counted by the scripts that call expect_200() (bench/lua/report.lua). */
  readonly errors: { connect: number; read: number; write: number; status: number; timeout: number; not200: number };
  readonly latencyUs: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Derived: requests and bytes per second. */
  readonly rps: number;
  readonly bytesPerSec: number;
}

export interface WrkRun {
  readonly url: string;
  readonly script: string;
  readonly args?: readonly string[];
  readonly connections: number;
  readonly seconds: number;
}

/** Runs wrk once; throws when any request failed or was answered with anything but a 200 (see WrkResult.errors). */
export async function wrk(run: WrkRun): Promise<WrkResult> {
  const cmd = pinned(CPUS.client, [
    "wrk",
    "-t1",
    `-c${run.connections}`,
    `-d${run.seconds}s`,
    "--timeout",
    "10s",
    "-s",
    join(LUA_DIR, run.script),
    run.url,
    ...(run.args?.length ? ["--", ...run.args] : []),
  ]);
  const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe", env: { ...process.env, BENCH_LUA_DIR: LUA_DIR } });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const line = out.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (code !== 0 || !line) throw new Error(`wrk failed (${code}): ${err || out}`);
  const r = JSON.parse(line.slice("BENCH_JSON ".length));
  const secs = r.durationUs / 1e6;
  const result: WrkResult = { ...r, rps: r.requests / secs, bytesPerSec: r.bytes / secs };
  if (errorCount(result) > 0)
    throw new Error(
      `${run.script} ${run.url}: ${errorCount(result)} of ${result.requests} requests failed or were not answered 200: ${JSON.stringify(result.errors)}`,
    );
  return result;
}

export function errorCount(r: WrkResult): number {
  const e = r.errors;
  return e.connect + e.read + e.write + e.status + e.timeout + e.not200;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * A warm-up, then `runs` measured runs; the run whose `pick` is the median is returned with all of
 * them. With `cpuMicros` (the server's CPU clock), also the server's median CPU time per request:
 * a figure that other programs on a shared machine disturb far less than a rate.
 */
export async function measure(run: WrkRun, opts: { runs: number; warmupSeconds: number; cpuMicros?: () => number }, pick: (r: WrkResult) => number) {
  await wrk({ ...run, seconds: opts.warmupSeconds });
  const results: WrkResult[] = [];
  const cpuPerRequest: number[] = [];
  for (let i = 0; i < opts.runs; i++) {
    const before = opts.cpuMicros?.();
    const r = await wrk(run);
    results.push(r);
    if (before !== undefined) cpuPerRequest.push((opts.cpuMicros!() - before) / r.requests);
  }
  const values = results.map(pick);
  return { value: median(values), values, results, cpuUsPerRequest: cpuPerRequest.length ? median(cpuPerRequest) : null };
}
