// Bundled into the executable by `bun build --compile`, so the binary carries its own version.
import pkg from "../package.json" with { type: "json" };

// build.ts defines it as the build id (git commit, or a hash of the sources); `bun src/main.ts` has none.
declare const KEYTURN_BUILD: string | undefined;

/** Which build this is: the id build.ts gave the executable, or `source` when run from the sources. */
export const BUILD: string = typeof KEYTURN_BUILD === "string" ? KEYTURN_BUILD : "source";

/** package.json's version with the build as semver build metadata: `0.1.0+<build>`. */
export const VERSION: string = `${pkg.version}+${BUILD}`;
