import { MIGRATIONS } from "../store/migrations";
import { openAdmin } from "./admin-context";
import { out } from "./io";

export const USAGE = "keyturn migrate [--data DIR | --database URL] --variant V";

/** `keyturn migrate`: opening the records applies every pending migration; it says which, each with its purpose. */
export async function migrateCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, {});
  await ctx.store.close();
  for (const line of migrationReport(ctx.store.kind, ctx.store.migrationsApplied)) out(line);
  return 0;
}

/** What opening the records applied: the versions on one line, then each with its one-line purpose. */
export function migrationReport(kind: string, applied: readonly number[]): string[] {
  const latest = MIGRATIONS.at(-1)!.version;
  if (applied.length === 0) return [`nothing to apply: the records (${kind}) are at migration ${latest}`];
  const names = new Map(MIGRATIONS.map((m) => [m.version, m.name]));
  return [
    `applied migrations ${applied.join(", ")} to the records (${kind}); they are at migration ${latest}:`,
    ...applied.map((version) => `  ${version}: ${names.get(version)}`),
  ];
}
