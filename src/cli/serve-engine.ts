import { ownCommandLine, servingReexecution } from "./engine-options";

// Imported first by main.ts, so that `serve` executes itself again with its engine option before
// the rest of the program is evaluated (engine-options.ts says why). execve does not return.
const again = servingReexecution(process.argv[2], ownCommandLine(), process.execPath, process.env);
if (again) process.execve?.(again.file, [...again.argv], again.env);
