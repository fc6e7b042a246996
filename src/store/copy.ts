import type { SQL } from "bun";
import type { Database } from "bun:sqlite";

/**
 * The tables `keyturn copy` moves, parents first, each in an order that replays its history. Not
 * moved: admin tokens and webhook endpoints (made again on the new records: their secrets are shown
 * once), and the outbox with its deliveries (deliver or drain them before moving).
 */
const TABLES = [
  {
    name: "licenses",
    key: "id",
    order: "issued, id",
    columns: ["id", "kind", "key_hash", "licensee", "organization", "plan", "plan_title", "channels", "seats", "issued", "expires", "revoked", "email", "metadata", "seat_lease"],
  },
  {
    name: "activations",
    key: "id",
    order: "created, id",
    columns: ["id", "license_id", "kind", "installation", "device_hash", "product", "name", "platform", "version", "created", "last_seen", "deactivated", "lane"],
  },
  { name: "challenges", key: "nonce_hash", order: "created, nonce_hash", columns: ["nonce_hash", "installation", "created", "expires", "used"] },
  {
    name: "audit",
    key: "ref",
    order: "time, ref",
    columns: ["ref", "time", "address", "action", "activation_id", "license_id", "outcome", "error", "actor"],
  },
  { name: "release_controls", key: "lane, version", order: "lane, version", columns: ["lane", "version", "halted", "halted_ms", "withdrawn", "updated"] },
  { name: "known_releases", key: "lane, version", order: "lane, version", columns: ["lane", "version", "first_seen"] },
] as const;

export type TableName = (typeof TABLES)[number]["name"];
export type RowCounts = Record<TableName, number>;

const BATCH = 500;

/** The target already holds records and merging was not asked for; nothing was written. */
export class TargetNotEmptyError extends Error {
  constructor(readonly counts: RowCounts) {
    super("the target database already holds records");
  }
}

/**
 * Copies every row of the SQLite records into the (migrated) PostgreSQL schema. The source is read
 * in one read transaction, a consistent snapshot even while keyturn keeps serving from it; the target
 * is written in one transaction, so a failed copy leaves it as it was. With `merge`, rows already in
 * the target are overwritten with the source's values (a second pass after a write pause converges).
 */
export async function copySqliteToPostgres(source: Database, target: SQL, opts: { merge: boolean }): Promise<RowCounts> {
  source.exec("BEGIN");
  try {
    return await target.begin(async (tx) => {
      if (!opts.merge) {
        const present = await countRows(tx);
        if (Object.values(present).some((n) => n > 0)) throw new TargetNotEmptyError(present);
      }
      const copied = {} as RowCounts;
      for (const table of TABLES) {
        copied[table.name] = 0;
        const rows = source.query(`SELECT ${table.columns.join(", ")} FROM ${table.name} ORDER BY ${table.order}`).iterate() as IterableIterator<Record<string, unknown>>;
        let batch: Record<string, unknown>[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          await insertBatch(tx, table, batch, opts.merge);
          copied[table.name] += batch.length;
          batch = [];
        };
        for (const row of rows) {
          batch.push(row);
          if (batch.length === BATCH) await flush();
        }
        await flush();
      }
      return copied;
    });
  } finally {
    source.exec("COMMIT");
  }
}

/** Rows per table, as `keyturn copy` reports them. */
export async function countRows(sql: SQL): Promise<RowCounts> {
  const counts = {} as RowCounts;
  for (const t of TABLES) counts[t.name] = Number((await sql.unsafe(`SELECT count(*) AS n FROM ${t.name}`))[0].n);
  return counts;
}

async function insertBatch(tx: SQL, table: (typeof TABLES)[number], rows: Record<string, unknown>[], merge: boolean): Promise<void> {
  const cols = table.columns;
  const params: unknown[] = [];
  const tuples = rows.map((row) => `(${cols.map((c) => (params.push(row[c] ?? null), `$${params.length}`)).join(", ")})`);
  const conflict = merge
    ? ` ON CONFLICT (${table.key}) DO UPDATE SET ${cols.filter((c) => c !== table.key).map((c) => `${c} = excluded.${c}`).join(", ")}`
    : "";
  await tx.unsafe(`INSERT INTO ${table.name} (${cols.join(", ")}) VALUES ${tuples.join(", ")}${conflict}`, params);
}
