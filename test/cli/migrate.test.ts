import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/migrations";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { tempDir } from "../helpers";
import { postgresRecordsAt, sqliteRecordsAt } from "../old-records";
import { runCli } from "../processes";

if (!PG_URL) announceSkip("test/cli/migrate.test.ts", "KEYTURN_TEST_POSTGRES_URL");

const dir = tempDir("keyturn-migrate-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Records as a keyturn of migration 6 left them: the later migrations are pending. */
const PENDING = MIGRATIONS.filter((m) => m.version > 6);
const LATEST = MIGRATIONS.at(-1)!.version;

/** Migrates twice: the first run names each migration applied with its purpose, the second finds nothing to apply. */
async function expectMigrations(records: string[], kind: string) {
  const first = await runCli(["migrate", "--variant", "alpha", ...records]);
  expect(first.stderr).toBe("");
  expect(first.code).toBe(0);
  const lines = first.stdout.trim().split("\n");
  expect(lines[0]).toBe(`applied migrations ${PENDING.map((m) => m.version).join(", ")} to the records (${kind}); they are at migration ${LATEST}:`);
  expect(lines.slice(1)).toEqual(PENDING.map((m) => `  ${m.version}: ${m.name}`));
  // Each line is the migration's purpose, not only its number.
  expect(first.stdout).toContain("  8: a license's own token lifetime (null: the site's --token-ttl)\n");

  const again = await runCli(["migrate", "--variant", "alpha", ...records]);
  expect(again.code).toBe(0);
  expect(again.stdout).toBe(`nothing to apply: the records (${kind}) are at migration ${LATEST}\n`);
}

test("migrate on SQLite records of migration 6 names what it applied, then says nothing was to apply", async () => {
  const data = join(dir, "sqlite");
  sqliteRecordsAt(data, 6);
  await expectMigrations(["--data", data], "sqlite");
}, 60_000);

describe.skipIf(!PG_URL)("PostgreSQL", () => {
  test("migrate --database on a schema of migration 6 names what it applied, then says nothing was to apply", async () => {
    const schema = await freshSchema();
    try {
      await postgresRecordsAt(schema.url, 6);
      await expectMigrations(["--database", schema.url], "postgres");
    } finally {
      await schema.drop();
    }
  }, 60_000);
});
