import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HOW_TO_RUN_BROWSER_TESTS } from "./harness";

// A fresh machine without Chromium: the README's `npm test` passes, the browser tests skipped with
// one line saying how to run them; in CI (CI=true) they are required and fail. Chromium is hidden
// by a PATH that holds only bun (the harness looks for it on PATH).
const ROOT = join(import.meta.dir, "..", "..");
let bare = "";

beforeAll(() => {
  bare = mkdtempSync(join(tmpdir(), "keyturn-path-"));
  symlinkSync(process.execPath, join(bare, "bun"));
});
afterAll(() => rmSync(bare, { recursive: true, force: true }));

/** The lines that are the skip notice itself (bun also quotes the harness's source when a test fails). */
const notices = (output: string) => output.split("\n").filter((line) => line === HOW_TO_RUN_BROWSER_TESTS).length;

function runBrowserTests(ci: boolean): { code: number; output: string } {
  const env: Record<string, string> = { HOME: process.env.HOME ?? "/tmp", PATH: bare };
  if (ci) env.CI = "true";
  const run = Bun.spawnSync([process.execPath, "test", "test/browser/portal.test.ts", "test/browser/console.test.ts"], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() };
}

test("outside CI, without Chromium on PATH, the browser tests are skipped with one line saying how to run them", () => {
  const { code, output } = runBrowserTests(false);
  expect(code).toBe(0);
  expect(notices(output)).toBe(1);
  expect(output).toMatch(/\b0 pass\b/);
  expect(output).toMatch(/\b0 fail\b/);
  expect(output).toMatch(/\b[1-9]\d* skip\b/);
}, 60_000);

test("with CI=true, a missing Chromium fails the browser tests", () => {
  const { code, output } = runBrowserTests(true);
  expect(code).not.toBe(0);
  expect(output).toContain("Chromium is required with CI=true");
  expect(notices(output)).toBe(0);
}, 60_000);

test(".ci/run installs Chromium (and nginx) and runs the tests with CI=true", () => {
  const script = readFileSync(join(ROOT, ".ci", "run"), "utf8");
  expect(script).toMatch(/command -v chromium[^\n]*apt-get install -y -qq chromium/);
  expect(script).toMatch(/apt-get install -y -qq nginx/);
  const ci = script.indexOf("export CI=true");
  expect(ci).toBeGreaterThan(-1);
  expect(ci).toBeLessThan(script.lastIndexOf("bun run test"));
});
