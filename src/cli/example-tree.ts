import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { exampleTreeFiles } from "./example-tree.macro" with { type: "macro" };

/**
 * Writes the example release tree built into keyturn (releases.example at build time) under
 * `dest`, once: the demo of an executable run outside a checkout serves it instead of nothing.
 */
export function extractExampleTree(dest: string): string {
  if (existsSync(join(dest, "keys"))) return dest;
  const files = exampleTreeFiles();
  const staging = `${dest}.${process.pid}.tmp`;
  for (const [path, base64] of Object.entries(files)) {
    const target = join(staging, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, Buffer.from(base64, "base64"));
  }
  // Whole or not at all: a demo stopped half-way through extracting starts over next time.
  mkdirSync(dirname(dest), { recursive: true });
  renameSync(staging, dest);
  return dest;
}
