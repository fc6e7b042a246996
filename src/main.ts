#!/usr/bin/env bun
// First: `serve` may execute itself again, with its engine option, before the program is read.
import "./cli/serve-engine";

// An entry point of its own in the executable (build.ts), not bundled into this one: the specifier
// is not a literal, so the bundler leaves the import to run time, and the image that execve
// replaces has parsed none of the program. Run from the sources, bun resolves it to program.ts.
const PROGRAM = "./program.js";
await import(PROGRAM);
