/** The compiled keyturn, started as an operator would (default log settings), pinned to the server core. */
import { readFileSync } from "node:fs";
import { CPUS, pinned } from "./tools";

export interface ServeOptions {
  readonly exe: string;
  readonly data: string;
  readonly keys: string;
  readonly releases: string;
  readonly port: number;
  readonly extra?: readonly string[];
  /** Added to the environment it starts with (a probe's BUN_OPTIONS, say). */
  readonly env?: Readonly<Record<string, string>>;
}

export function serveArgs(o: ServeOptions): string[] {
  return [
    o.exe,
    "serve",
    "--variant",
    "alpha",
    "--base-url",
    "https://licenses.example.com",
    "--data",
    o.data,
    "--keys",
    o.keys,
    "--releases",
    o.releases,
    "--host",
    "127.0.0.1",
    "--port",
    String(o.port),
    // The rate limits are lifted on purpose: the bench measures throughput from one address.
    "--rate-limit-api",
    "100000000/1s",
    "--rate-limit-signin",
    "100000000/1s",
    ...(o.extra ?? []),
  ];
}

export interface Running {
  readonly url: string;
  readonly pid: number;
  /** Where its log lines (stderr) go. */
  readonly logFile: string;
  rssBytes(): number;
  /** CPU time (user + system) the process has used so far, in µs (10 ms resolution). */
  cpuMicros(): number;
  stop(): Promise<void>;
}

/**
 * Starts keyturn with its log in a file beside --data (as an operator's journal would take it: the
 * bench must not spend its own CPU reading one line per request) and waits until GET /health is
 * 200, which it answers once the first release index is there.
 */
export async function startKeyturn(o: ServeOptions): Promise<Running> {
  const logFile = `${o.data}.keyturn.log`;
  const proc = Bun.spawn(pinned(CPUS.server, serveArgs(o)), { stdout: "ignore", stderr: Bun.file(logFile), env: { ...process.env, ...o.env } });
  const url = `http://127.0.0.1:${o.port}`;
  const until = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`keyturn exited (${proc.exitCode}):\n${readFileSync(logFile, "utf8")}`);
    if (Date.now() > until) {
      proc.kill();
      throw new Error(`keyturn was not healthy within 60 s:\n${readFileSync(logFile, "utf8")}`);
    }
    const status = await fetch(`${url}/api/v1/health`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    await Bun.sleep(20);
  }
  return {
    url,
    pid: proc.pid,
    logFile,
    rssBytes: () => rssOf(proc.pid),
    cpuMicros: () => cpuOf(proc.pid),
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

/** utime + stime of /proc/PID/stat (fields 14 and 15, after the command name in parentheses). */
export function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / CLOCK_TICKS;
}

const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;
