import { readFileSync } from "node:fs";

/**
 * The JavaScriptCore option `keyturn serve` runs with: its top compiler tier (FTL) off. Serving a
 * paced mix of update checks, the tier cost 4-10 MB of the process's peak resident memory (the
 * compiler's own code and working memory); without it a manifest GET may take 5-40 % more CPU
 * (bench/README.md, "4a and 5a, fourteenth round").
 */
export const TOP_TIER_OPTION = "BUN_JSC_useFTLJIT";

/** An execve(2) of the same program with the same arguments and more environment. */
export interface Reexecution {
  readonly file: string;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/**
 * What `serve` must execute again so that the engine runs with TOP_TIER_OPTION set, or null. The
 * engine reads its options once, from the environment, before any JavaScript runs: no call made by
 * the program can set them. So the process executes itself again, in place: execve keeps the
 * process id a service manager watches, and the file descriptors it was given. An environment that
 * sets the option already, to either value, is the operator's choice and is left as it is; so is a
 * process whose own command line cannot be read (no /proc).
 *
 * `command` is keyturn's command (process.argv[2], whether compiled or run from the sources),
 * `commandLine` the process's argv as it was executed (/proc/self/cmdline), `execPath` the
 * absolute path of the file that runs it (the executable, or bun running the sources).
 */
export function servingReexecution(
  command: string | undefined,
  commandLine: readonly string[] | null,
  execPath: string,
  env: Readonly<Record<string, string | undefined>>,
): Reexecution | null {
  if (command !== "serve" || commandLine === null || env[TOP_TIER_OPTION] !== undefined) return null;
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) kept[name] = value;
  return { file: execPath, argv: commandLine, env: { ...kept, [TOP_TIER_OPTION]: "0" } };
}

/** This process's argv as executed, or null where /proc is not there to read it. */
export function ownCommandLine(): string[] | null {
  try {
    const raw = readFileSync("/proc/self/cmdline", "utf8");
    return raw.endsWith("\0") ? raw.slice(0, -1).split("\0") : raw.split("\0");
  } catch {
    return null;
  }
}

type Execve = (file: string, args: string[], env: Record<string, string>) => never;

/**
 * Executes `again` in place of this process; returns false, and the process runs on as it is, when
 * there is nothing to execute or it cannot be executed (a service user not allowed to run the file
 * it was started from, say). Bun warns that execve is experimental: on success the image is gone
 * before the warning is written, on failure it would be a line outside the log's format, so it is
 * not given.
 */
export function executeAgain(again: Reexecution | null, execve: Execve | undefined = process.execve as Execve | undefined): boolean {
  if (!again || !execve) return false;
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    execve.call(process, again.file, [...again.argv], again.env as Record<string, string>);
  } catch {
    return false;
  } finally {
    process.emitWarning = emitWarning;
  }
  return true;
}
