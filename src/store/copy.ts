import type { SQL } from "bun";
import type { Database } from "bun:sqlite";

interface Table {
  readonly name: string;
  readonly key: string;
  readonly order: string;
  readonly columns: readonly string[];
  /** Columns that are 0/1 in SQLite and BOOLEAN in PostgreSQL. */
  readonly booleans?: readonly string[];
  /** A column PostgreSQL numbers itself (GENERATED ALWAYS AS IDENTITY): copied as it is, the numbering moved past it. */
  readonly identity?: string;
  /** A table a migration or the first start seeds with its rows: always overwritten, and not counted as records held. */
  readonly seeded?: boolean;
}

/**
 * The tables `keyturn copy` moves, parents first, each in an order that replays its history. The
 * admin tokens (their hashes: the tokens keep working), the webhook endpoints and the outbox (the
 * events with their numbers, where the fan-out stands, the deliveries and their attempts) move too,
 * so no change made before the move goes unannounced after it. Leases are not moved: a delivery
 * leased by the old process is due again at once. Idempotency answers are not moved either: they
 * hold licence keys and live 24 hours. The feed's epoch is not moved: the target keeps the one its migration made, so
 * a mirror of the old records reads a snapshot rather than trusting a seq. Console and portal sessions are not moved: their people sign in again.
 * Stored rollout buckets (rollout_releases, rollout_buckets) are not moved: the next stats count stores them again.
 */
const TABLES = [
  {
    name: "licenses",
    key: "id",
    order: "issued, id",
    columns: [
      "id",
      "kind",
      "key_hash",
      "licensee",
      "organization",
      "plan",
      "plan_title",
      "channels",
      "seats",
      "issued",
      "expires",
      "revoked",
      "email",
      "metadata",
      "token_ttl",
      "seat_lease",
      "updates_until",
      "features",
    ],
  },
  {
    name: "activations",
    key: "id",
    order: "created, id",
    columns: [
      "id",
      "license_id",
      "kind",
      "installation",
      "device_hash",
      "product",
      "name",
      "platform",
      "version",
      "created",
      "last_seen",
      "deactivated",
      "lane",
      "token_exp",
    ],
  },
  { name: "challenges", key: "nonce_hash", order: "created, nonce_hash", columns: ["nonce_hash", "installation", "created", "expires", "used"] },
  {
    name: "audit",
    key: "ref",
    order: "time, ref",
    columns: ["ref", "time", "address", "action", "activation_id", "license_id", "outcome", "error", "actor"],
  },
  {
    name: "release_controls",
    key: "lane, version",
    order: "lane, version",
    columns: ["lane", "version", "halted", "halted_ms", "withdrawn", "updated", "halt_rule"],
  },
  {
    name: "install_reports",
    key: "lane, version, activation_id",
    order: "lane, version, activation_id",
    columns: ["lane", "version", "activation_id", "device_hash", "from_version", "outcome", "code", "reported"],
  },
  { name: "known_releases", key: "lane, version", order: "lane, version", columns: ["lane", "version", "first_seen"] },
  { name: "known_releases_baseline", key: "id", order: "id", columns: ["id", "taken"] },
  { name: "record_key_check", key: "id", order: "id", columns: ["id", "value"] },
  // `keyturn migrate` on the empty target notes its variant there: the source's note replaces it.
  { name: "records_variant", key: "id", order: "id", columns: ["id", "variant", "noted"], seeded: true },
  { name: "admin_tokens", key: "id", order: "created, id", columns: ["id", "name", "secret_hash", "scopes", "created", "expires", "revoked", "last_used"] },
  { name: "events", key: "seq", order: "seq", columns: ["seq", "id", "type", "time", "data"], identity: "seq" },
  {
    name: "webhook_endpoints",
    key: "id",
    order: "created, id",
    columns: ["id", "url", "types", "secret", "enabled", "disabled_reason", "created", "after_seq"],
    booleans: ["enabled"],
  },
  { name: "webhook_fanout", key: "name", order: "name", columns: ["name", "seq"], seeded: true },
  {
    name: "webhook_deliveries",
    key: "id",
    order: "created, id",
    columns: ["id", "endpoint_id", "event_seq", "event_id", "status", "attempts", "next_attempt", "created", "last_attempt"],
  },
  {
    name: "webhook_attempts",
    key: "delivery_id, attempt",
    order: "delivery_id, attempt",
    columns: ["delivery_id", "attempt", "time", "duration_ms", "status_code", "error"],
  },
] as const satisfies readonly Table[];

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
        if (TABLES.some((t) => !("seeded" in t) && present[t.name] > 0)) throw new TargetNotEmptyError(present);
      }
      const copied = {} as RowCounts;
      for (const table of TABLES) {
        copied[table.name] = 0;
        const rows = source.query(`SELECT ${table.columns.join(", ")} FROM ${table.name} ORDER BY ${table.order}`).iterate() as IterableIterator<
          Record<string, unknown>
        >;
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
        if ("identity" in table)
          await tx.unsafe(
            `SELECT setval(pg_get_serial_sequence('${table.name}', '${table.identity}'), GREATEST(max(${table.identity}), 1), count(*) > 0) FROM ${table.name}`,
          );
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

async function insertBatch(tx: SQL, table: Table, rows: Record<string, unknown>[], merge: boolean): Promise<void> {
  const cols = table.columns;
  const keys = table.key.split(", ");
  const params: unknown[] = [];
  const value = (row: Record<string, unknown>, c: string) => (table.booleans?.includes(c) ? row[c] === 1 : (row[c] ?? null));
  const tuples = rows.map((row) => `(${cols.map((c) => (params.push(value(row, c)), `$${params.length}`)).join(", ")})`);
  const conflict =
    merge || table.seeded
      ? ` ON CONFLICT (${table.key}) DO UPDATE SET ${cols
          .filter((c) => !keys.includes(c))
          .map((c) => `${c} = excluded.${c}`)
          .join(", ")}`
      : "";
  const overriding = table.identity ? " OVERRIDING SYSTEM VALUE" : "";
  await tx.unsafe(`INSERT INTO ${table.name} (${cols.join(", ")})${overriding} VALUES ${tuples.join(", ")}${conflict}`, params);
}
