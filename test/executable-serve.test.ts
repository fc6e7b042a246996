import { afterAll, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildExecutable } from "../build";
import { generateKeyFiles } from "../src/domain/keys";
import { tempDir } from "./helpers";

const dir = tempDir("keyturn-exe-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The minified executable must behave like `bun src/main.ts`: Elysia reads hook sources to compile
// its handlers, and minified method shorthand once made it print a warning at every start.
test("the compiled executable serves, logs only JSON lines, and stops on SIGTERM with exit 0", async () => {
  const exe = await buildExecutable(join(dir, "keyturn"));
  mkdirSync(join(dir, "releases"));
  generateKeyFiles(join(dir, "keys"), "gamma-license-2026-09");
  const proc = Bun.spawn(
    [exe, "serve", "--variant", "gamma", "--base-url", "https://licenses.example.com", "--data", join(dir, "data"),
      "--keys", join(dir, "keys"), "--releases", join(dir, "releases"), "--port", "0"],
    { stdout: "pipe", stderr: "pipe" },
  );
  const reader = proc.stderr.getReader();
  let err = "";
  while (!err.includes('"keyturn listening"')) {
    const { value, done } = await reader.read();
    if (done) break;
    err += new TextDecoder().decode(value);
  }
  const url = JSON.parse(err.split("\n").find((l) => l.includes('"keyturn listening"'))!).url as string;
  const health = await fetch(`${url}/api/v1/health`);
  expect(await health.json()).toEqual({ ok: true, status: "ok", rateLimits: "per-process", licensing: "on" });
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
