/** Real keyturn processes for end-to-end tests: `bun src/main.ts ...`, with a clean environment. */
import { afterAll } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { generateKeyFiles } from "../src/domain/keys";
import { VARIANTS, type VariantName } from "../src/config/variants";
import { BASE_URL, tempDir } from "./helpers";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");

/** Only what a process needs; no KEYTURN_* from the developer's shell leaks in. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...extra };
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { env: cleanEnv(env), stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/**
 * keyturn's commands run to their end in a fresh folder of their own (its ./data, ./keys …), on
 * variant alpha: `keyturn` gives the exit code and output, `json` the `--json` output parsed (a
 * non-zero exit throws). The folder is removed after the test file.
 */
export function cliFolder(prefix: string) {
  const cwd = tempDir(prefix);
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));
  const env = { PATH: process.env.PATH ?? "", KEYTURN_VARIANT: "alpha" };
  const keyturn = (...args: string[]) => {
    const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd, env });
    return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
  };
  const json = (...args: string[]) => {
    const r = keyturn(...args, "--json");
    if (r.code !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  return { cwd, keyturn, json };
}

/** A site directory laid out as `serve` wants it: data, keys (with the variant's signing key) and releases. */
export function siteDirs(root: string, variant: VariantName) {
  const dirs = { data: join(root, "data"), keys: join(root, "keys"), releases: join(root, "releases") };
  mkdirSync(dirs.data, { recursive: true });
  mkdirSync(dirs.releases, { recursive: true });
  generateKeyFiles(dirs.keys, VARIANTS[variant].defaultLicenseKid);
  return dirs;
}

export function siteArgs(variant: VariantName, dirs: ReturnType<typeof siteDirs>): string[] {
  return ["--variant", variant, "--base-url", BASE_URL, "--data", dirs.data, "--keys", dirs.keys, "--releases", dirs.releases];
}

/** The flags of a site whose records are in PostgreSQL at `databaseUrl`, its keys (with the variant's signing key) and releases under `root`. */
export function postgresSiteArgs(root: string, variant: VariantName, databaseUrl: string): string[] {
  const keys = join(root, "keys");
  const releases = join(root, "releases");
  generateKeyFiles(keys, VARIANTS[variant].defaultLicenseKid);
  mkdirSync(releases, { recursive: true });
  return ["--variant", variant, "--base-url", BASE_URL, "--database", databaseUrl, "--keys", keys, "--releases", releases];
}

/** A JSON POST to a serving process's API (`/api/v1` + path), with the bearer `token` if given: its status and JSON body. */
export async function postJson(url: string, path: string, body: unknown, token?: string): Promise<{ status: number; body: Record<string, any> }> {
  const r = await fetch(`${url}/api/v1${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
}

export interface ServeProcess {
  readonly url: string;
  readonly proc: ReturnType<typeof Bun.spawn>;
  stderr(): string;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number>;
  /** SIGKILL: no chance to clean up. */
  kill(): Promise<void>;
}

/** A port free on the loopback address now (for a process that must be told its port, or its --base-url, before it listens). */
export async function freePort(): Promise<number> {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  return port;
}

/**
 * `keyturn serve` on a free loopback port, ready when it answers. Rate limits are lifted: these
 * tests send hundreds of activations from one address on purpose.
 */
export async function startServe(args: string[]): Promise<ServeProcess> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const proc = Bun.spawn(
      [
        process.execPath,
        MAIN,
        "serve",
        ...args,
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--rate-limit-signin",
        "1000000/60s",
        "--rate-limit-api",
        "1000000/60s",
        "--log-level",
        "warn",
      ],
      { env: cleanEnv(), stdout: "ignore", stderr: "pipe", stdin: "ignore" },
    );
    let errText = "";
    void (async () => {
      for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) errText += new TextDecoder().decode(chunk);
    })();
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && proc.exitCode === null) {
      try {
        await fetch(`${url}/api/v1/entitlements/current`);
        return {
          url,
          proc,
          stderr: () => errText,
          async stop() {
            proc.kill("SIGTERM");
            return proc.exited;
          },
          async kill() {
            proc.kill("SIGKILL");
            await proc.exited;
          },
        };
      } catch {
        await Bun.sleep(50);
      }
    }
    proc.kill("SIGKILL");
    await proc.exited;
    // Another process may have taken the port between the probe and the start: try another.
    if (attempt < 2 && /EADDRINUSE|address.*in use/i.test(errText)) continue;
    throw new Error(`keyturn serve did not start: ${errText}`);
  }
}
