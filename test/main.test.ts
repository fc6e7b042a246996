import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { basename, join } from "node:path";
import { EXECUTABLE_ENTRYPOINTS } from "../build";
import { tempDir } from "./helpers";

const out = tempDir("keyturn-entries-");
afterAll(() => rmSync(out, { recursive: true, force: true }));

// `serve` executes itself again at start (src/cli/engine-options.ts): the image it replaces should
// have read main.ts and its engine check only, never the whole program.
test("main.ts is bundled alone; the program is an entry point of its own, imported at run time", async () => {
  const root = join(import.meta.dir, "..");
  const result = await Bun.build({ entrypoints: EXECUTABLE_ENTRYPOINTS.map((file) => join(root, file)), outdir: out, minify: true, target: "bun" });
  expect(result.success).toBe(true);
  const size = (name: string) => result.outputs.find((o) => basename(o.path) === name)!.size;
  expect(size("main.js")).toBeLessThan(4_096);
  expect(size("program.js")).toBeGreaterThan(500_000);
  expect(await Bun.file(join(out, "main.js")).text()).toContain("./program.js");
});
