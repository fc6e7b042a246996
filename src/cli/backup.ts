import { readSettings, toConfig } from "../config/config";
import { ConfigError } from "../config/parse";
import { BackupError, backupSqlite } from "../store/sqlite-backup";
import { err, out, printJson, UsageError } from "./io";

export const USAGE = "keyturn backup --to FILE [--data DIR] --variant V [--json]";

/** `keyturn backup --to FILE`: an online, consistent copy of the SQLite records, safe while serve runs. */
export async function backupCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  let read;
  try {
    read = readSettings(args, env, { to: { type: "string" }, json: { type: "boolean" } });
  } catch (e) {
    if (e instanceof ConfigError && e.setting === "arguments") throw new UsageError(USAGE, e.message);
    throw e;
  }
  const to = read.flags.to;
  if (typeof to !== "string" || !to.trim() || read.positionals.length > 0) throw new UsageError(USAGE, "backup needs --to FILE");
  const config = toConfig(read.settings, "admin");
  if (config.databaseUrl) throw new UsageError(USAGE, "backup copies SQLite records; back PostgreSQL up with pg_dump");
  try {
    const summary = backupSqlite(config.dataDir, to);
    if (read.flags.json === true) printJson({ file: to, ...summary });
    else out(`backed up to ${to}: ${summary.licenses} licenses, ${summary.activations} activations, ${summary.audit} audit lines (integrity ok)`);
    return 0;
  } catch (e) {
    if (!(e instanceof BackupError)) throw e;
    err(`keyturn: ${e.message}`);
    return 1;
  }
}
