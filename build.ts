/**
 * `bun build.ts` compiles keyturn into one self-contained executable (dist/keyturn) and builds the
 * client kit as a package vendors install: dist/client (staged) packed into
 * dist/keyturn-client-<version>.tgz. The version comes from package.json, bundled with the code
 * and given to the kit; the executable also carries its build id (`keyturn --version` says
 * `0.1.0+<build id>`), so two builds of one version can be told apart.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import pkg from "./package.json" with { type: "json" };

const ROOT = import.meta.dir;
export const KIT_NAME = "keyturn-client";

/**
 * main.ts, which a serve executes again at once (src/cli/engine-options.ts), and the program it
 * imports, embedded beside it rather than bundled into it, so that the first image parses only
 * main.ts.
 */
export const EXECUTABLE_ENTRYPOINTS = ["src/main.ts", "src/program.ts"] as const;

export async function buildExecutable(outfile = join(ROOT, "dist", "keyturn")): Promise<string> {
  mkdirSync(join(outfile, ".."), { recursive: true });
  const result = await Bun.build({
    entrypoints: EXECUTABLE_ENTRYPOINTS.map((file) => join(ROOT, file)),
    compile: { outfile },
    minify: true,
    sourcemap: "linked",
    // src/version.ts reads it; run from source, it is not defined.
    define: { KEYTURN_BUILD: JSON.stringify(buildId()) },
  });
  if (!result.success) throw new AggregateError(result.logs, "build failed");
  return outfile;
}

/** What goes into the executable when there is no git to name it: the sources and what pins their dependencies. */
const BUILD_INPUTS = ["src", "package.json", "bun.lock", "build.ts"];

/**
 * The build id: the git commit's short hash (12 hex digits), with `.dirty` when the work tree has
 * changes (tracked or new files: `git status`); a checkout without git (a source tarball) gets
 * `content.` and 12 hex digits of a SHA-256 over BUILD_INPUTS' paths and bytes instead. Both are
 * semver build metadata (`0.1.0+<id>`).
 */
export function buildId(root = ROOT): string {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    // Only root's own repository: a tarball unpacked inside another checkout is not that checkout's commit.
    if (realpathSync(git("rev-parse", "--show-toplevel")) === realpathSync(root))
      return `${git("rev-parse", "--short=12", "HEAD")}${git("status", "--porcelain") ? ".dirty" : ""}`;
  } catch {
    // No git, not a repository, or no commit yet.
  }
  const hash = createHash("sha256");
  for (const file of BUILD_INPUTS.flatMap((input) => filesUnder(join(root, input)))) {
    hash.update(`${relative(root, file)}\0`);
    hash.update(readFileSync(file));
  }
  return `content.${hash.digest("hex").slice(0, 12)}`;
}

/** The files at `path` (itself, or under it), in a stable order. */
function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

/**
 * The client kit's files, staged as its package: src/client bundled into one ES module (index.js)
 * and one CommonJS module (index.cjs), one .d.ts per module, package.json, README.md and the
 * notice of the code bundled in. jose is bundled rather than a dependency: the kit uses only its
 * base64url (a few hundred bytes), and a package with no dependencies installs from its tarball
 * alone, on a build machine without a registry or with an empty npm cache.
 */
export async function buildClient(outdir = join(ROOT, "dist", "client")): Promise<string> {
  rmSync(outdir, { recursive: true, force: true });
  const src = join(ROOT, "src", "client");
  for (const format of ["esm", "cjs"] as const) {
    const result = await Bun.build({
      entrypoints: [join(src, "index.ts")],
      outdir,
      target: "node",
      format,
      naming: format === "esm" ? "index.js" : "index.cjs",
    });
    if (!result.success) throw new AggregateError(result.logs, "client build failed");
  }
  execFileSync(
    join(ROOT, "node_modules", ".bin", "tsc"),
    [
      "--ignoreConfig",
      "--declaration",
      "--emitDeclarationOnly",
      "--outDir",
      outdir,
      "--rootDir",
      src,
      "--target",
      "esnext",
      "--module",
      "preserve",
      "--moduleResolution",
      "bundler",
      "--strict",
      "--skipLibCheck",
      "--lib",
      "esnext,dom",
      "--types",
      "node",
      join(src, "index.ts"),
    ],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  writeFileSync(join(outdir, "package.json"), `${JSON.stringify(kitManifest(), null, 2)}\n`);
  copyFileSync(join(src, "README.md"), join(outdir, "README.md"));
  writeFileSync(
    join(outdir, "THIRD-PARTY-NOTICES.md"),
    `# Code bundled into ${KIT_NAME}\n\n## jose ${joseVersion()} (https://github.com/panva/jose)\n\n` +
      readFileSync(join(ROOT, "node_modules", "jose", "LICENSE.md"), "utf8"),
  );
  return join(outdir, "index.js");
}

function joseVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, "node_modules", "jose", "package.json"), "utf8")) as { version: string }).version;
}

/** keyturn itself declares no licence yet; the kit carries the same, and says so (UNLICENSED) until it does. */
function kitManifest(): Record<string, unknown> {
  return {
    name: KIT_NAME,
    version: pkg.version,
    description: "Client kit for a keyturn site: device hash, activation, offline token checks, signed updates, resumable downloads",
    license: (pkg as { license?: string }).license ?? "UNLICENSED",
    type: "module",
    main: "./index.cjs",
    types: "./index.d.ts",
    exports: {
      ".": {
        types: "./index.d.ts",
        import: "./index.js",
        require: "./index.cjs",
      },
      "./package.json": "./package.json",
    },
    files: ["*.js", "*.cjs", "*.d.ts", "README.md", "THIRD-PARTY-NOTICES.md"],
    engines: { node: ">=20" },
    sideEffects: false,
  };
}

/** Packs the staged kit into `<destination>/keyturn-client-<version>.tgz` (npm's layout: files under package/). */
export function packClient(staged: string, destination = join(ROOT, "dist")): string {
  execFileSync(process.execPath, ["pm", "pack", "--quiet", "--ignore-scripts", "--destination", destination], {
    cwd: staged,
    stdio: ["ignore", "ignore", "inherit"],
  });
  return join(destination, `${KIT_NAME}-${pkg.version}.tgz`);
}

const USAGE = "usage: bun build.ts [OUTFILE]   (default dist/keyturn; the client kit goes to dist/ beside it)";

if (import.meta.main) {
  const [first, ...rest] = process.argv.slice(2);
  if (first === "--help" || first === "-h") {
    console.log(USAGE);
    process.exit(0);
  }
  // An output path is all it takes: a flag or a second argument is a mistake, not a file to write.
  if (first?.startsWith("-") || rest.length > 0) {
    console.error(`build.ts: unexpected argument ${JSON.stringify(first?.startsWith("-") ? first : rest[0])}\n${USAGE}`);
    process.exit(2);
  }
  const outfile = await buildExecutable(first);
  console.log(`built ${outfile} (keyturn ${pkg.version}+${buildId()})`);
  const kit = await buildClient();
  console.log(`built ${kit} and ${packClient(join(kit, ".."))} (${KIT_NAME} ${pkg.version})`);
}
