/**
 * `bun build.ts` compiles keyturn into one self-contained executable (dist/keyturn) and builds the
 * client kit (dist/client: one ESM file for Node >= 20, Bun and Electron, plus type declarations).
 * The version comes from package.json, bundled with the code (`keyturn --version`).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
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

/**
 * The client kit as vendors import it (`keyturn/client`): src/client bundled into one ESM file
 * (so Node needs no extension-resolution rules), jose left as an import, and one .d.ts per module.
 */
export async function buildClient(outdir = join(import.meta.dir, "dist", "client")): Promise<string> {
  rmSync(outdir, { recursive: true, force: true });
  const src = join(import.meta.dir, "src", "client");
  const result = await Bun.build({
    entrypoints: [join(src, "index.ts")],
    outdir,
    target: "node",
    format: "esm",
    external: ["jose"],
  });
  if (!result.success) throw new AggregateError(result.logs, "client build failed");
  execFileSync(join(import.meta.dir, "node_modules", ".bin", "tsc"), [
    "--ignoreConfig", "--declaration", "--emitDeclarationOnly", "--outDir", outdir, "--rootDir", src,
    "--target", "esnext", "--module", "preserve", "--moduleResolution", "bundler", "--strict",
    "--skipLibCheck", "--lib", "esnext,dom", "--types", "node", join(src, "index.ts"),
  ], { stdio: ["ignore", "inherit", "inherit"] });
  return join(outdir, "index.js");
}

if (import.meta.main) {
  const outfile = await buildExecutable(process.argv[2]);
  console.log(`built ${outfile} (keyturn ${pkg.version})`);
  console.log(`built ${await buildClient()} (keyturn/client)`);
}
