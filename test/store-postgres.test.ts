import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { migratePostgres, openPostgresStore } from "../src/store/postgres";
import { MIGRATIONS } from "../src/store/migrations";
import { announceSkip, freshSchema, PG_URL } from "./databases";
import { storeSuite } from "./store.suite";

if (!PG_URL) announceSkip("test/store-postgres.test.ts", "KEYTURN_TEST_POSTGRES_URL");

describe.skipIf(!PG_URL)("PostgreSQL store", () => {
  storeSuite("PostgreSQL", {
    async fresh() {
      const schema = await freshSchema();
      return { open: () => openPostgresStore(schema.url, { max: 4 }), drop: () => schema.drop() };
    },
  });

  test("ping throws once the database cannot be reached", async () => {
    const schema = await freshSchema();
    const store = await openPostgresStore(schema.url);
    try {
      await store.ping();
      await store.close();
      await expect(store.ping()).rejects.toThrow();
    } finally {
      await schema.drop();
    }
  });

  test("several processes migrating a fresh schema at once: each version applied once, all succeed", async () => {
    const schema = await freshSchema();
    const clients = Array.from({ length: 6 }, () => new SQL(schema.url, { max: 1 }));
    try {
      await Promise.all(clients.map((c) => migratePostgres(c)));
      const rows = await clients[0]!`SELECT version FROM schema_migrations ORDER BY version`;
      expect(rows.map((r: { version: number }) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      const tables = await clients[0]!`SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema.name} ORDER BY table_name`;
      expect(tables.map((r: { table_name: string }) => r.table_name)).toEqual(["activations", "audit", "challenges", "licenses", "schema_migrations"]);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await schema.drop();
    }
  });
});
