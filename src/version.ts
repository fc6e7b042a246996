// Bundled into the executable by `bun build --compile`, so the binary carries its own version.
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
