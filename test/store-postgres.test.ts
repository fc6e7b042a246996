import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { migratePostgres, openPostgresStore } from "../src/store/postgres";
import { MIGRATIONS } from "../src/store/migrations";
import { announceSkip, freshSchema, PG_URL } from "./databases";
import { adminStoreSuite } from "./store/store-admin.suite";
import { storeSuite } from "./store/store.suite";

if (!PG_URL) announceSkip("test/store-postgres.test.ts", "KEYTURN_TEST_POSTGRES_URL");

describe.skipIf(!PG_URL)("PostgreSQL store", () => {
  const backend = {
    async fresh() {
      const schema = await freshSchema();
      return { open: () => openPostgresStore(schema.url, { max: 4, controlsPollMs: 50 }), drop: () => schema.drop() };
    },
  };
  storeSuite("PostgreSQL", backend);
  adminStoreSuite("PostgreSQL", backend);

  test("a re-activation racing a deactivation of one installation, across processes: no deadlock, never a revoked seat", async () => {
    const schema = await freshSchema();
    const [one, two] = await Promise.all([openPostgresStore(schema.url), openPostgresStore(schema.url)]);
    try {
      const now = Date.now();
      await one.createLicense({
        id: "lic_race",
        kind: "license",
        keyHash: "h",
        licensee: "a",
        organization: "o",
        plan: "p",
        planTitle: "P",
        channels: ["stable"],
        seats: 1,
        issued: now,
        expires: null,
        revoked: null,
      });
      const input = (newId: string) => ({
        licenseId: "lic_race",
        kind: "license" as const,
        installation: "dev1",
        deviceHash: "dev1",
        product: null,
        name: "n",
        platform: "win-x64",
        version: "1",
        newId,
        now,
      });
      let current = "act_0";
      expect((await one.activate(input(current))).outcome).toBe("created");
      for (let round = 1; round <= 25; round++) {
        // process one deactivates the seat (the admin's command) while process two re-activates it
        const [deactivated, result] = await Promise.all([one.deactivate(current, now + round), two.activate(input(`act_${round}`))]);
        if (result.outcome === "seat_limit") throw new Error("one installation, one seat: never seat_limit");
        expect(result.activation.deactivated).toBeNull();
        expect(deactivated).toBe(true);
        if (result.outcome === "reused") {
          // the activation came first; the deactivation then revoked it: take it again
          expect((await one.activationStatus(current))!.deactivated).not.toBeNull();
          const again = await two.activate(input(`act_${round}`));
          expect(again.outcome).toBe("created");
          current = `act_${round}`;
        } else current = result.activation.id;
        expect(await one.countActiveSeats("lic_race")).toBe(1);
        expect((await one.activationStatus(current))!.deactivated).toBeNull();
      }
    } finally {
      await Promise.all([one.close(), two.close()]);
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
      expect(tables.map((r: { table_name: string }) => r.table_name)).toEqual([
        "activations",
        "admin_tokens",
        "audit",
        "challenges",
        "console_sessions",
        "events",
        "feed_epoch",
        "idempotency",
        "install_reports",
        "known_releases",
        "known_releases_baseline",
        "licenses",
        "mirror_license_expiry",
        "mirror_release_controls",
        "mirror_revocations",
        "mirror_snapshot_expiries",
        "mirror_snapshot_revocations",
        "mirror_sync",
        "mirror_vendor_keys",
        "record_key_check",
        "records_variant",
        "release_controls",
        "release_controls_generation",
        "rollout_buckets",
        "rollout_releases",
        "schema_migrations",
        "webhook_attempts",
        "webhook_deliveries",
        "webhook_endpoints",
        "webhook_fanout",
      ]);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await schema.drop();
    }
  });
});
