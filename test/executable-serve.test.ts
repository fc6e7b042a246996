import { afterAll, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildId } from "../build";
import pkg from "../package.json" with { type: "json" };
import { generateKeyFiles } from "../src/domain/keys";
import { executable } from "./executable";
import { tempDir } from "./helpers";

const dir = tempDir("keyturn-exe-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The minified executable must behave like `bun src/main.ts`: Elysia reads hook sources to compile
// its handlers, and minified method shorthand once made it print a warning at every start.
test("the compiled executable serves, logs only JSON lines, and stops on SIGTERM with exit 0", async () => {
  const exe = await executable();
  mkdirSync(join(dir, "releases"));
  generateKeyFiles(join(dir, "keys"), "gamma-license-2026-09");
  const proc = Bun.spawn(
    [
      exe,
      "serve",
      "--variant",
      "gamma",
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
      "--metrics-listen",
      "127.0.0.1:0",
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const reader = proc.stderr.getReader();
  let err = "";
  while (!err.includes('"keyturn listening"')) {
    const { value, done } = await reader.read();
    if (done) break;
    err += new TextDecoder().decode(value);
  }
  const started = JSON.parse(err.split("\n").find((l) => l.includes('"keyturn listening"'))!) as { url: string; version: string };
  const url = started.url;
  const health = await fetch(`${url}/api/v1/health`);
  expect(await health.json()).toEqual({ ok: true, status: "ok", rateLimits: "per-process", licensing: "on" });

  // The build this is, in each place an operator looks after an upgrade.
  const version = `${pkg.version}+${buildId()}`;
  expect(started.version).toBe(version);
  expect(((await (await fetch(`${url}/api/v1/meta`)).json()) as { version: string }).version).toBe(version);
  const metricsUrl = JSON.parse(err.split("\n").find((l) => l.includes('"metrics listening"'))!).url as string;
  expect(await (await fetch(metricsUrl)).text()).toContain(`keyturn_build_info{version="${version}"} 1\n`);
  proc.kill("SIGTERM");
  expect(await proc.exited).toBe(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    err += new TextDecoder().decode(value);
  }
  for (const line of err.trim().split("\n")) expect(() => JSON.parse(line)).not.toThrow();
  expect(await new Response(proc.stdout).text()).toBe("");
});
