#!/usr/bin/env bun
import { activationCommand } from "./cli/activation";
import { adminTokenCommand } from "./cli/admin-token";
import { auditCommand } from "./cli/audit";
import { backupCommand } from "./cli/backup";
import { copyCommand } from "./cli/copy";
import { runCommand, UsageError } from "./cli/io";
import { keysCommand } from "./cli/keys";
import { licenseCommand } from "./cli/license";
import { migrateCommand } from "./cli/migrate";
import { mirrorCommand } from "./cli/mirror";
import { releaseCommand } from "./cli/release";
import { serveCommand } from "./cli/serve";
import { webhookCommand } from "./cli/webhook";
import { statsCommand } from "./cli/stats";
import { VERSION } from "./version";

type Command = (args: string[], env: Record<string, string | undefined>) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  keys: keysCommand,
  license: licenseCommand,
  activation: activationCommand,
  migrate: migrateCommand,
  release: releaseCommand,
  audit: auditCommand,
  backup: backupCommand,
  copy: copyCommand,
  mirror: mirrorCommand,
  "admin-token": adminTokenCommand,
  webhook: webhookCommand,
  stats: statsCommand,
};

const USAGE = `keyturn ${Object.keys(COMMANDS).join("|")} ... (keyturn --version, keyturn serve --help)`;

const [name, ...args] = process.argv.slice(2);
const code = await runCommand(async () => {
  if (name === "--version" || name === "version") {
    process.stdout.write(`keyturn ${VERSION}\n`);
    return 0;
  }
  const command = name ? COMMANDS[name] : undefined;
  if (!command) throw new UsageError(USAGE, name ? `unknown command "${name}"` : "missing command");
  return command(args, process.env);
});
process.exit(code);
