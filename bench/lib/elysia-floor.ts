/**
 * Compiles and starts 4a's floor (bench/lib/elysia-floor-server.ts) as keyturn is built (one
 * minified executable), pinned to the server core, answering with the bytes keyturn answered.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rssOf, type Running } from "./keyturn";
import { startPinnedServer } from "./tools";

/** The answers the floor gives, fetched from a running keyturn with a token of its. */
export async function recordAnswers(url: string, token: string, manifestPath: string, dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const paths = {
    manifest: manifestPath,
    signature: `${manifestPath}.sig`,
    current: "/api/v1/entitlements/current",
    releases: "/api/v1/releases?product=alpha",
  };
  for (const [name, path] of Object.entries(paths)) {
    const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
    if (response.status !== 200) throw new Error(`${path}: status ${response.status}, the floor needs keyturn's answer`);
    writeFileSync(join(dir, name), new Uint8Array(await response.arrayBuffer()));
  }
  return dir;
}

export async function startElysiaFloor(dir: string, answers: string, port: number): Promise<Pick<Running, "url" | "pid" | "rssBytes" | "stop">> {
  mkdirSync(dir, { recursive: true });
  const exe = join(dir, "keyturn-floor");
  const built = await Bun.build({ entrypoints: [join(import.meta.dir, "elysia-floor-server.ts")], compile: { outfile: exe }, minify: true });
  if (!built.success) throw new AggregateError(built.logs, "the Elysia floor did not build");
  const floor = await startPinnedServer("the Elysia floor", [exe, String(port), answers, join(dir, "floor.sqlite"), join(dir, "floor.log")], port);
  return { ...floor, rssBytes: () => rssOf(floor.pid) };
}
