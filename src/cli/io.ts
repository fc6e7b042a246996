import type { parseArgs, ParseArgsConfig } from "node:util";
import { parseArguments } from "../config/arguments";
import { ConfigError } from "../config/parse";
import { escapeControl, escapeJsonControl } from "../config/text";
import { KeyturnError } from "../domain/errors";
import { ReleaseTreeUnreadable } from "../domain/releases/scan";

/** A wrong invocation: printed with the command's usage line, exit code 2. */
export class UsageError extends Error {
  constructor(
    readonly usage: string,
    message: string,
  ) {
    super(message);
  }
}

/** A command's flags read by parseArguments (config/arguments.ts); what it refuses (an unknown flag, a missing value) is a UsageError of its first line. */
export function parseFlags<T extends ParseArgsConfig>(usage: string, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArguments(config);
  } catch (e) {
    throw new UsageError(usage, (e as Error).message.split("\n")[0]!);
  }
}

/**
 * One line for people on stdout. Its control characters are escaped (escapeControl): device names,
 * versions and release folders come from outside. Print several lines with several calls.
 */
export function out(line = ""): void {
  process.stdout.write(escapeControl(line) + "\n");
}

/** One line for people on stderr, escaped like out(). */
export function err(line: string): void {
  process.stderr.write(escapeControl(line) + "\n");
}

/** One JSON value on stdout: still JSON, with the characters JSON.stringify leaves raw escaped too. */
export function printJson(value: unknown): void {
  process.stdout.write(escapeJsonControl(JSON.stringify(value, null, 2)) + "\n");
}

/**
 * Runs a command body and turns its failures into one clear line and an exit code:
 * 2 for bad settings or arguments, 1 for a refused operation or a release tree that cannot be
 * read. Never a stack trace for those.
 */
export async function runCommand(body: () => Promise<number | void>): Promise<number> {
  try {
    return (await body()) ?? 0;
  } catch (e) {
    if (e instanceof ConfigError) {
      err(`keyturn: --${e.setting}: ${e.message}`);
      return 2;
    }
    if (e instanceof UsageError) {
      err(`keyturn: ${e.message}`);
      for (const line of `usage: ${e.usage}`.split("\n")) err(line);
      return 2;
    }
    if (e instanceof KeyturnError) {
      err(`keyturn: ${e.message} (${e.code})`);
      return 1;
    }
    if (e instanceof ReleaseTreeUnreadable) {
      err(`keyturn: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

/** ISO 8601 input from a flag, as milliseconds; a UsageError when it is not a date. */
export function parseIsoFlag(usage: string, flag: string, text: string | undefined): number | null {
  if (text === undefined) return null;
  const ms = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(ms)) throw new UsageError(usage, `--${flag}: not an ISO 8601 date: "${text}"`);
  return ms;
}
