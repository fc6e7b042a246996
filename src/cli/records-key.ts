import { join } from "node:path";
import { RECORDS_KEY_FILE } from "../domain/record-seal";
import { openAdmin } from "./admin-context";
import { out } from "./io";

const USAGE = "keyturn keys rotate-records-key --variant V [--keys DIR] [--data DIR | --database URL]";

/**
 * `keyturn keys rotate-records-key`: a new records.key, every value sealed with the old one
 * re-sealed in one transaction (src/domain/record-seal.ts); the old file is kept beside it.
 */
export async function rotateRecordsKeyCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, {});
  try {
    const { resealed, backup } = await ctx.deps.seal!.rotate(Date.now());
    const file = join(ctx.config.keysDir, RECORDS_KEY_FILE);
    out(`re-sealed ${resealed} ${resealed === 1 ? "value" : "values"} in the records (${ctx.store.kind}) with a new ${file}`);
    if (backup) out(`the old key is kept as ${backup}: it opens only backups of the records taken before now`);
    out(`copy ${file} to the keys directory of every other process serving these records: until then they refuse to seal or open secrets`);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
