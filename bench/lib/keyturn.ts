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
}

export function serveArgs(o: ServeOptions): string[] {
  return [
    o.exe, "serve", "--variant", "alpha", "--base-url", "https://licenses.example.com",
    "--data", o.data, "--keys", o.keys, "--releases", o.releases, "--host", "127.0.0.1", "--port", String(o.port),
    // The rate limits are lifted on purpose: the bench measures throughput from one address.
    "--rate-limit-api", "100000000/1s", "--rate-limit-signin", "100000000/1s",
    ...(o.extra ?? []),
  ];
}

export interface Running {
  readonly url: string;
  readonly pid: number;
  /** Log lines (stderr) seen so far. */
  readonly lines: string[];
  rssBytes(): number;
  stop(): Promise<void>;
}

export async function startKeyturn(o: ServeOptions): Promise<Running> {
  const proc = Bun.spawn(pinned(CPUS.server, serveArgs(o)), { stdout: "ignore", stderr: "pipe" });
  const lines: string[] = [];
  let listening = () => {};
  const ready = new Promise<void>((resolve) => (listening = resolve));
  void (async () => {
    let buffered = "";
    for await (const chunk of proc.stderr) {
      buffered += new TextDecoder().decode(chunk);
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        if (line.includes('"msg":"release index built"')) listening();
      }
    }
  })();
  const timeout = setTimeout(() => proc.kill(), 60_000);
  await Promise.race([ready, proc.exited]);
  clearTimeout(timeout);
  if (proc.exitCode !== null) throw new Error(`keyturn exited (${proc.exitCode}):\n${lines.join("\n")}`);
  return {
    url: `http://127.0.0.1:${o.port}`,
    pid: proc.pid,
    lines,
    rssBytes: () => rssOf(proc.pid),
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
