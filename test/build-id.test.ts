import { afterAll, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildId } from "../build";
import pkg from "../package.json" with { type: "json" };
import { executable } from "./executable";
import { tempDir } from "./helpers";

const dir = tempDir("keyturn-build-id-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { cwd, encoding: "utf8" }).trim();

function sources(root: string) {
  mkdirSync(join(root, "src"), { recursive: true });
  writeFileSync(join(root, "src", "main.ts"), "console.log(1);\n");
  writeFileSync(join(root, "package.json"), "{}\n");
}

test("in a git checkout the build id is the commit's short hash, with .dirty once the work tree changes", () => {
  const root = join(dir, "checkout");
  sources(root);
  git(root, "init", "-q");
  git(root, "add", ".");
  git(root, "commit", "-qm", "first");
  const commit = git(root, "rev-parse", "HEAD");
  expect(buildId(root)).toBe(commit.slice(0, 12));
  writeFileSync(join(root, "src", "main.ts"), "console.log(2);\n");
  expect(buildId(root)).toBe(`${commit.slice(0, 12)}.dirty`);
  git(root, "commit", "-qam", "second");
  expect(buildId(root)).toBe(git(root, "rev-parse", "HEAD").slice(0, 12));
});

test("without git (a source tarball) the build id is a hash of the sources: one changed byte gives another id", () => {
  const root = join(dir, "tarball");
  sources(root);
  const first = buildId(root);
  expect(first).toMatch(/^content\.[0-9a-f]{12}$/);
  expect(buildId(root)).toBe(first);
  writeFileSync(join(root, "src", "main.ts"), "console.log(3);\n");
  expect(buildId(root)).not.toBe(first);
  expect(buildId(root)).toMatch(/^content\.[0-9a-f]{12}$/);
});

test("the executable build.ts makes says its version with this checkout's build id", async () => {
  const exe = await executable();
  const p = Bun.spawnSync([exe, "--version"]);
  const id = buildId();
  expect(p.stdout.toString()).toBe(`keyturn ${pkg.version}+${id}\n`);
  // The id names the commit git reports for this checkout (when it is one).
  const head = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: join(import.meta.dir, "..") });
  if (head.exitCode === 0) expect(id.split(".")[0]).toBe(head.stdout.toString().trim());
});

test("build.ts answers --help with its usage, and refuses a flag rather than writing an executable named after it", () => {
  const run = (...args: string[]) => Bun.spawnSync([process.execPath, join(import.meta.dir, "..", "build.ts"), ...args], { cwd: dir });
  const help = run("--help");
  expect(help.exitCode).toBe(0);
  expect(help.stdout.toString()).toStartWith("usage: bun build.ts [OUTFILE]");
  const flag = run("--out", "x");
  expect(flag.exitCode).toBe(2);
  expect(flag.stderr.toString()).toContain('unexpected argument "--out"');
  expect(Bun.spawnSync(["ls", dir]).stdout.toString()).not.toContain("--");
});
