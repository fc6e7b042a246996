import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * A Bun macro (imported `with { type: "macro" }`): runs when keyturn is bundled, or transpiled to
 * run from source, and inlines releases.example (the signed example trees and the public keys
 * that signed them) as { "relative/path": base64 }, so the compiled executable's demo has them
 * wherever it runs. About 400 KiB of installers stand-ins; read only when the demo is served.
 */
export function exampleTreeFiles(): Record<string, string> {
  const root = join(import.meta.dir, "..", "..", "releases.example");
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files[relative(root, path).split("\\").join("/")] = readFileSync(path).toString("base64");
    }
  };
  walk(root);
  return files;
}
