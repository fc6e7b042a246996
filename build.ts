/**
 * Compiles keyturn into one self-contained executable: `bun build.ts` → dist/keyturn.
 * The version comes from package.json, bundled with the code (`keyturn --version`).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pkg from "./package.json" with { type: "json" };

export async function buildExecutable(outfile = join(import.meta.dir, "dist", "keyturn")): Promise<string> {
  mkdirSync(join(outfile, ".."), { recursive: true });
  const result = await Bun.build({
    entrypoints: [join(import.meta.dir, "src", "main.ts")],
    compile: { outfile },
    minify: true,
    sourcemap: "linked",
  });
  if (!result.success) throw new AggregateError(result.logs, "build failed");
  return outfile;
}

if (import.meta.main) {
  const outfile = await buildExecutable(process.argv[2]);
  console.log(`built ${outfile} (keyturn ${pkg.version})`);
}
