import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/migrations";
import { SQLITE_FILE } from "../../src/store/sqlite";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { tempDir } from "../helpers";
import { runCli } from "../processes";

if (!PG_URL) announceSkip("test/cli/migrate.test.ts", "KEYTURN_TEST_POSTGRES_URL");

const dir = tempDir("keyturn-migrate-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Records as a keyturn of migration 6 left them: the later migrations are pending. */
const OLD = MIGRATIONS.filter((m) => m.version <= 6);
const PENDING = MIGRATIONS.filter((m) => m.version > 6);
const LATEST = MIGRATIONS.at(-1)!.version;

function expectApplied(stdout: string, kind: string) {
  const lines = stdout.trim().split("\n");
  expect(lines[0]).toBe(`applied migrations ${PENDING.map((m) => m.version).join(", ")} to the records (${kind}); they are at migration ${LATEST}:`);
  expect(lines.slice(1)).toEqual(PENDING.map((m) => `  ${m.version}: ${m.name}`));
  // Each line is the migration's purpose, not only its number.
  expect(stdout).toContain("  8: a license's own token lifetime (null: the site's --token-ttl)\n");
}

test("migrate on SQLite records of migration 6 names what it applied, then says nothing was to apply", async () => {
  const data = join(dir, "sqlite");
  mkdirSync(data);
  const db = new Database(join(data, SQLITE_FILE), { create: true });
  db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)");
  for (const m of OLD) {
    db.exec(m.sqlite);
    db.query("INSERT INTO schema_migrations (version, applied) VALUES (?, 0)").run(m.version);
  }
  db.close();

  const first = await runCli(["migrate", "--variant", "alpha", "--data", data]);
  expect(first.stderr).toBe("");
  expect(first.code).toBe(0);
  expectApplied(first.stdout, "sqlite");

  const again = await runCli(["migrate", "--variant", "alpha", "--data", data]);
  expect(again.code).toBe(0);
  expect(again.stdout).toBe(`nothing to apply: the records (sqlite) are at migration ${LATEST}\n`);
});

describe.skipIf(!PG_URL)("PostgreSQL", () => {
  test("migrate --database on a schema of migration 6 names what it applied, then says nothing was to apply", async () => {
    const schema = await freshSchema();
    const sql = new SQL(schema.url, { max: 1 });
    try {
      await sql`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)`;
      for (const m of OLD) {
        await sql.unsafe(m.postgres);
        await sql`INSERT INTO schema_migrations (version, applied) VALUES (${m.version}, 0)`;
      }
      const first = await runCli(["migrate", "--variant", "alpha", "--database", schema.url]);
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      expectApplied(first.stdout, "postgres");

      const again = await runCli(["migrate", "--variant", "alpha", "--database", schema.url]);
      expect(again.code).toBe(0);
      expect(again.stdout).toBe(`nothing to apply: the records (postgres) are at migration ${LATEST}\n`);
    } finally {
      await sql.close();
      await schema.drop();
    }
  });
});
