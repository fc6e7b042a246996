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

  test("an installation re-activating while another process deactivates it gets a new seat, never the revoked one", async () => {
    const schema = await freshSchema();
    const store = await openPostgresStore(schema.url);
    const other = new SQL(schema.url, { max: 2 });
    try {
      const now = Date.now();
      await store.createLicense({ id: "lic_race", kind: "license", keyHash: "h", licensee: "a", organization: "o", plan: "p", planTitle: "P", channels: ["stable"], seats: 1, issued: now, expires: null, revoked: null });
      const input = (newId: string) => ({ licenseId: "lic_race", kind: "license" as const, installation: "dev1", deviceHash: "dev1", product: null, name: "n", platform: "win-x64", version: "1", newId, now });
      expect((await store.activate(input("act_first"))).outcome).toBe("created");
      // Another process (the admin's `activation deactivate`) holds the activation's row…
      const tx = await other.reserve();
      await tx`BEGIN`;
      await tx`SELECT 1 FROM activations WHERE id = 'act_first' FOR UPDATE`;
      const racing = store.activate(input("act_second"));
      // …until the re-activation is waiting for it, then deactivates and commits.
      for (let i = 0; i < 200 && Number((await other`SELECT count(*) AS n FROM pg_locks WHERE NOT granted`)[0].n) === 0; i++) await Bun.sleep(5);
      await tx`UPDATE activations SET deactivated = ${Date.now()} WHERE id = 'act_first'`;
      await tx`COMMIT`;
      tx.release();
      const result = await racing;
      expect(result.outcome).toBe("created");
      if (result.outcome === "seat_limit") throw new Error("unreachable");
      expect(result.activation.id).toBe("act_second");
      expect(result.activation.deactivated).toBeNull();
      expect(await store.countActiveSeats("lic_race")).toBe(1);
    } finally {
      await other.close();
      await store.close();
      await schema.drop();
    }
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
