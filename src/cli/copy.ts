import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseUrl } from "../config/parse";
import { KeyturnError } from "../domain/errors";
import { copySqliteToPostgres, TargetNotEmptyError, type RowCounts } from "../store/copy";
import { openPostgresStore } from "../store/postgres";
import { openSqliteStore, SQLITE_FILE } from "../store/sqlite";
import { out, printJson, parseFlags, UsageError } from "./io";

export const USAGE = "keyturn copy --from DATA_DIR --to postgres://... [--merge] [--json]";

const describe = (c: RowCounts) =>
  `${c.licenses} licenses, ${c.activations} activations, ${c.challenges} challenges, ${c.audit} audit lines, ` +
  `${c.admin_tokens} admin tokens, ${c.webhook_endpoints} webhook endpoints, ${c.events} events, ${c.webhook_deliveries} webhook deliveries, ` +
  `${c.license_meters} meters, ${c.trials} trials`;

/**
 * `keyturn copy`: moves a vendor's SQLite records into PostgreSQL. Refuses a target that already
 * holds records unless --merge (rows present are overwritten with the source's values).
 */
export async function copyCommand(args: string[]): Promise<number> {
  const { values } = parseFlags(USAGE, {
    args,
    options: { from: { type: "string" }, to: { type: "string" }, merge: { type: "boolean" }, json: { type: "boolean" } },
    strict: true,
  });
  if (!values.from) throw new UsageError(USAGE, "--from DATA_DIR is required");
  if (!values.to) throw new UsageError(USAGE, "--to postgres://... is required");
  try {
    parseUrl("to", values.to, ["postgres:", "postgresql:"]);
  } catch (e) {
    throw new UsageError(USAGE, `--to: ${(e as Error).message}`);
  }
  if (!existsSync(join(values.from, SQLITE_FILE))) throw new UsageError(USAGE, `--from: no keyturn records (${SQLITE_FILE}) in ${values.from}`);

  const source = openSqliteStore(values.from);
  try {
    const target = await openPostgresStore(values.to).catch((e: Error) => {
      throw new KeyturnError("unavailable", `cannot open the records in PostgreSQL: ${e.message}`);
    });
    try {
      const copied = await copySqliteToPostgres(source.db, target.sql, { merge: values.merge === true });
      if (values.json) printJson({ ok: true, copied });
      else out(`copied ${describe(copied)} from ${values.from} to PostgreSQL`);
      return 0;
    } catch (e) {
      if (e instanceof TargetNotEmptyError)
        throw new KeyturnError(
          "invalid_request",
          `the target already holds ${describe(e.counts)}; nothing copied (--merge overwrites rows present with the source's)`,
        );
      throw e;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
