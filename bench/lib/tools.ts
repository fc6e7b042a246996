/** wrk and nginx come from Debian packages; a fresh machine gets them through apt-get. */
import { existsSync } from "node:fs";
import type { BunFile } from "bun";

const TOOLS = [
  { bin: "/usr/bin/wrk", pkg: "wrk" },
  { bin: "/usr/sbin/nginx", pkg: "nginx" },
  { bin: "/usr/bin/taskset", pkg: "util-linux" },
] as const;

export function ensureTools(): void {
  const missing = TOOLS.filter((t) => !existsSync(t.bin)).map((t) => t.pkg);
  if (missing.length === 0) return;
  const sudo = process.getuid?.() === 0 ? [] : ["sudo"];
  console.log(`installing ${missing.join(", ")} with apt-get`);
  for (const cmd of [
    [...sudo, "apt-get", "update"],
    [...sudo, "apt-get", "install", "-y", "--no-install-recommends", ...missing],
  ]) {
    const r = Bun.spawnSync(cmd, { stdout: "inherit", stderr: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
    if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed (${r.exitCode})`);
  }
}

/** The two cores of the machine split: the server under test on one, the load generator on the other. */
export const CPUS = (() => {
  const n = navigator.hardwareConcurrency;
  return n >= 2 ? { server: "0", client: String(n - 1) } : { server: "0", client: "0" };
})();

export function pinned(cpu: string, cmd: string[]): string[] {
  return ["taskset", "-c", cpu, ...cmd];
}

/** A port free right now (other programs share this machine's loopback). */
export function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = server.port!;
  server.stop(true);
  return port;
}

/**
 * Starts a server the bench measures against, pinned to the server core as keyturn is, and waits
 * for the "ready" line it prints once it listens on `port`.
 */
export async function startPinnedServer(name: string, cmd: string[], port: number, stderr: BunFile | "inherit" = "inherit") {
  const proc = Bun.spawn(pinned(CPUS.server, cmd), { stdout: "pipe", stderr });
  const reader = proc.stdout.getReader();
  const first = await reader.read();
  if (!new TextDecoder().decode(first.value).includes("ready")) throw new Error(`${name} did not start`);
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    stop: async () => {
      proc.kill();
      await proc.exited;
    },
  };
}
