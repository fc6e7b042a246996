import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS, type VariantName } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import { tempDir } from "./helpers";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");

export interface ServeProcess {
  readonly proc: Bun.Subprocess<"ignore", "ignore", "pipe">;
  readonly url: string;
  readonly dir: string;
  /** Every stderr line so far (JSON log lines). */
  readonly lines: string[];
  /** Resolves with the first log line whose msg is `msg` (already seen or still to come). */
  waitFor(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  cleanup(): Promise<void>;
}

/** `bun src/main.ts serve` in a temp site (keys, releases, data), on a free loopback port. */
export async function startServe(
  variant: VariantName,
  args: string[] = [],
  dir = tempDir("keyturn-serve-"),
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  mkdirSync(join(dir, "releases"), { recursive: true });
  try {
    generateKeyFiles(join(dir, "keys"), VARIANTS[variant].defaultLicenseKid);
  } catch {
    // already there (a restart in the same site)
  }
  const proc = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "serve",
      "--variant",
      variant,
      "--base-url",
      "https://licenses.example.com",
      "--data",
      join(dir, "data"),
      "--keys",
      join(dir, "keys"),
      "--releases",
      join(dir, "releases"),
      "--port",
      "0",
      "--log-format",
      "json",
      ...args,
    ],
    { stdin: "ignore", stdout: "ignore", stderr: "pipe", env: { ...process.env, ...env } },
  );
  const lines: string[] = [];
  const waiters: { msg: string; resolve: (l: Record<string, unknown>) => void }[] = [];
  const parsed = (line: string) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      return { msg: line };
    }
  };
  void (async () => {
    let buf = "";
    for await (const chunk of proc.stderr) {
      buf += new TextDecoder().decode(chunk);
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines.push(line);
        const p = parsed(line);
        for (const w of waiters.splice(0))
          if (p.msg === w.msg) w.resolve(p);
          else waiters.push(w);
      }
    }
  })();
  const waitFor = (msg: string, timeoutMs = 10_000) => {
    const seen = lines.map(parsed).find((p) => p.msg === msg);
    if (seen) return Promise.resolve(seen);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "${msg}" log line; got:\n${lines.join("\n")}`)), timeoutMs);
      waiters.push({ msg, resolve: (l) => (clearTimeout(timer), resolve(l)) });
    });
  };
  const listening = await waitFor("keyturn listening", 15_000);
  return {
    proc,
    url: String(listening.url),
    dir,
    lines,
    waitFor,
    async cleanup() {
      if (proc.exitCode === null) proc.kill("SIGKILL");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A self-signed P-256 certificate for localhost and 127.0.0.1, made by the openssl CLI. */
export function makeCertificate(dir: string, name: string, cn = name): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "2",
      "-subj",
      `/CN=${cn}`,
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  return { cert, key };
}
