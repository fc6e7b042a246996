import { ConfigError } from "../config/parse";
import { KeyturnError } from "../domain/errors";

/** A wrong invocation: printed with the command's usage line, exit code 2. */
export class UsageError extends Error {
  constructor(
    readonly usage: string,
    message: string,
  ) {
    super(message);
  }
}

/** Shows control characters (other than newline and tab) as \\xNN, so records cannot drive the terminal. */
export function escapeControl(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

export function out(line = ""): void {
  process.stdout.write(escapeControl(line) + "\n");
}

export function printJson(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

/**
 * Runs a command body and turns its failures into one clear line and an exit code:
 * 2 for bad settings or arguments, 1 for a refused operation. Never a stack trace for those.
 */
export async function runCommand(body: () => Promise<number | void>): Promise<number> {
  try {
    return (await body()) ?? 0;
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`keyturn: --${e.setting}: ${e.message}\n`);
      return 2;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`keyturn: ${e.message}\nusage: ${e.usage}\n`);
      return 2;
    }
    if (e instanceof KeyturnError) {
      process.stderr.write(`keyturn: ${e.message} (${e.code})\n`);
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
