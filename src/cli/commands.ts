import { activationCommand, USAGE as ACTIVATION } from "./activation";
import { adminTokenCommand, USAGE as ADMIN_TOKEN } from "./admin-token";
import { auditCommand, USAGE as AUDIT } from "./audit";
import { backupCommand, USAGE as BACKUP } from "./backup";
import { bridgeCommand, USAGE as BRIDGE } from "./bridge";
import { consoleSessionsCommand, USAGE as CONSOLE_SESSIONS } from "./console-sessions";
import { copyCommand, USAGE as COPY } from "./copy";
import { keysCommand, USAGE as KEYS } from "./keys";
import { licenseCommand, USAGE as LICENSE } from "./license";
import { mailCommand, USAGE as MAIL } from "./mail";
import { migrateCommand, USAGE as MIGRATE } from "./migrate";
import { mirrorCommand, USAGE as MIRROR } from "./mirror";
import { releaseCommand, USAGE as RELEASE } from "./release";
import { serveCommand, SERVE_USAGE } from "./serve";
import { statsCommand, USAGE as STATS } from "./stats";
import { webhookCommand, USAGE as WEBHOOK } from "./webhook";

export interface Command {
  run(args: string[], env: Record<string, string | undefined>): Promise<number>;
  /** Its usage lines, one per subcommand (`keyturn license create ...`), as its UsageError prints them. */
  readonly usage: string;
}

/** Every command of `keyturn`, by name: program.ts dispatches on it, `--help` answers from it. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  serve: { run: serveCommand, usage: SERVE_USAGE },
  keys: { run: keysCommand, usage: KEYS },
  license: { run: licenseCommand, usage: LICENSE },
  activation: { run: activationCommand, usage: ACTIVATION },
  migrate: { run: migrateCommand, usage: MIGRATE },
  release: { run: releaseCommand, usage: RELEASE },
  audit: { run: auditCommand, usage: AUDIT },
  backup: { run: backupCommand, usage: BACKUP },
  copy: { run: copyCommand, usage: COPY },
  mirror: { run: mirrorCommand, usage: MIRROR },
  "admin-token": { run: adminTokenCommand, usage: ADMIN_TOKEN },
  "console-sessions": { run: consoleSessionsCommand, usage: CONSOLE_SESSIONS },
  webhook: { run: webhookCommand, usage: WEBHOOK },
  mail: { run: mailCommand, usage: MAIL },
  bridge: { run: bridgeCommand, usage: BRIDGE },
  stats: { run: statsCommand, usage: STATS },
};

/** Whether the arguments ask for help (`--help` or `-h` before a `--`). */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/** The subcommands a usage names: the word after `keyturn NAME` on each line (`halt|resume` counts as each). */
export function subcommandsOf(name: string, usage: string): string[] {
  const words = usage.split("\n").map((line) => new RegExp(`^\\s*keyturn ${name} ([a-z][a-z|-]*)(?:\\s|$)`).exec(line)?.[1]);
  return words.flatMap((w) => (w === undefined ? [] : w.split("|")));
}

/**
 * `keyturn NAME [SUB] --help`: the usage lines of that subcommand (all of the command's when SUB
 * names none), for stdout and exit 0. `serve --help` is serve's own (every setting).
 */
export function helpOf(name: string, args: readonly string[]): string {
  const usage = COMMANDS[name]!.usage;
  const sub = args.find((a) => !a.startsWith("-"));
  const lines = usage.split("\n").map((line) => line.trim());
  // A line that does not start with `keyturn` continues the one above it (a subcommand with many flags).
  let mine = false;
  const own =
    sub !== undefined && subcommandsOf(name, usage).includes(sub)
      ? lines.filter((line) => (mine = line.startsWith("keyturn ") ? subcommandsOf(name, line).includes(sub) : mine))
      : lines;
  return `usage: ${own.join("\n       ")}\n`;
}
