import { openAdmin } from "./admin-context";
import { out } from "./io";

export const USAGE = "keyturn migrate [--data DIR | --database URL] --variant V";

/** `keyturn migrate`: opening the records applies every pending migration. */
export async function migrateCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, {});
  await ctx.store.close();
  out(`records are up to date (${ctx.store.kind})`);
  return 0;
}
