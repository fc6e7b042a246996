import { executeAgain, ownCommandLine, servingReexecution } from "./engine-options";

// Imported first by main.ts, so that `serve` executes itself again with its engine option before
// the program is read (engine-options.ts says why). When that cannot be done, serve runs as it is.
executeAgain(servingReexecution(process.argv[2], ownCommandLine(), process.execPath, process.env));
