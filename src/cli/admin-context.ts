import type { ParseArgsOptionsConfig } from "node:util";
import { readSettings, toConfig, type Config } from "../config/config";
import { RecordSeal } from "../domain/record-seal";
import { ConfigError } from "../config/parse";
import { Admin } from "../domain/admin/operator";
import type { AdminDeps } from "../domain/admin/deps";
import { Audit } from "../domain/audit";
import { systemClock } from "../domain/clock";
import type { Store } from "../store/types";
import { openStore } from "../compose";
import { UsageError } from "./io";

export interface AdminContext {
  readonly config: Config;
  readonly store: Store;
  readonly admin: Admin;
  /** What the admin services (src/domain/admin/) take, for the command line as caller. */
  readonly deps: AdminDeps;
  readonly flags: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  /** The settings as read (flag, environment, file). */
  readonly settings: Readonly<Record<string, string | undefined>>;
}

/** Reads an admin command's arguments (settings like serve's, plus its own flags) and opens the records. */
export async function openAdmin(
  usage: string,
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  extra: ParseArgsOptionsConfig,
): Promise<AdminContext> {
  let read;
  try {
    read = readSettings(args, env, extra);
  } catch (e) {
    if (e instanceof ConfigError && e.setting === "arguments") throw new UsageError(usage, e.message);
    throw e;
  }
  const config = toConfig(read.settings, "admin", read.tables);
  const store = await openStore(config);
  const admin = new Admin(config.variant, store, systemClock, new Audit(store, systemClock), config.tokenTtlSeconds);
  const deps: AdminDeps = {
    variant: config.variant,
    store,
    clock: systemClock,
    tokenTtlSeconds: config.tokenTtlSeconds,
    webhookDestinations: { allowHosts: config.webhookAllowHosts },
    seal: new RecordSeal(config.keysDir, store),
    plans: config.plans,
  };
  return { config, store, admin, deps, flags: read.flags, positionals: read.positionals, settings: read.settings };
}
