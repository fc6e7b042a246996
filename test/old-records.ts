/** Records as an older keyturn left them: the migrations up to a version applied, the later ones pending. */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS } from "../src/store/migrations";
import { SQLITE_FILE } from "../src/store/sqlite";

export function sqliteRecordsAt(dataDir: string, version: number): void {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, SQLITE_FILE), { create: true });
  db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)");
  for (const m of MIGRATIONS.filter((m) => m.version <= version)) {
    db.exec(m.sqlite);
    db.query("INSERT INTO schema_migrations (version, applied) VALUES (?, 0)").run(m.version);
  }
  db.close();
}

/** `url` names the schema (test/databases.ts freshSchema). */
export async function postgresRecordsAt(url: string, version: number): Promise<void> {
  const sql = new SQL(url, { max: 1 });
  try {
    await sql`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)`;
    for (const m of MIGRATIONS.filter((m) => m.version <= version)) {
      await sql.unsafe(m.postgres);
      await sql`INSERT INTO schema_migrations (version, applied) VALUES (${m.version}, 0)`;
    }
  } finally {
    await sql.close();
  }
}
