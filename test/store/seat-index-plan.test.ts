import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openPostgresStore } from "../../src/store/postgres";
import { openSqliteStore } from "../../src/store/sqlite";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { tempDir } from "../helpers";

// Migration 23: each index that begins with an activation's licence costs every activation a random
// page for the checkpoint to sync (on a million licences, 5a's tail and rate; bench/README.md,
// "4a and 5a, seventh round"). One index serves a licence's activations, its held seats, and the
// reclaim's oldest lapsed seat, each searched, never a scan of activations.

const plan = (store: ReturnType<typeof openSqliteStore>, sql: string) =>
  (store.db.query(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join(" | ");

test("SQLite: one index begins with the licence besides the one-seat-per-installation rule, and the seat queries search it", async () => {
  const dir = tempDir();
  const store = openSqliteStore(dir);
  try {
    const byLicense = (store.db.query("PRAGMA index_list(activations)").all() as { name: string }[])
      .map((i) => i.name)
      .filter((name) => (store.db.query(`PRAGMA index_info(${name})`).all() as { name: string }[])[0]?.name === "license_id")
      .sort();
    expect(byLicense).toEqual(["activations_by_license_state", "activations_one_active_seat"]);
    // The reclaim's search (sqlite.ts, lapsedSeat): the licence's held seats in order of last sighting, no sort.
    const lapsed = plan(store, "SELECT * FROM activations WHERE license_id = 'lic_x' AND deactivated IS NULL AND last_seen < 5 ORDER BY last_seen LIMIT 1");
    expect(lapsed).toContain("USING INDEX activations_by_license_state (license_id=? AND deactivated=? AND last_seen<?)");
    expect(lapsed).not.toContain("TEMP B-TREE");
    // A licence's whole history (listActivations) and its held seats (activeHolders).
    expect(plan(store, "SELECT * FROM activations WHERE license_id = 'lic_x' ORDER BY created, id")).toMatch(
      /^SEARCH activations USING INDEX activations_by_license_state \(license_id=\?\)/,
    );
    expect(plan(store, "SELECT * FROM activations WHERE license_id = 'lic_x' AND deactivated IS NULL ORDER BY created, id")).toMatch(
      /^SEARCH activations USING INDEX activations_by_license_state \(license_id=\? AND deactivated=\?\)/,
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

if (!PG_URL) announceSkip("test/store/seat-index-plan.test.ts (PostgreSQL)", "KEYTURN_TEST_POSTGRES_URL");
test.skipIf(!PG_URL)(
  "PostgreSQL: the reclaim's search (postgres.ts) reads the licence's lapsed seats in the index's order, no sort of all of them",
  async () => {
    const schema = await freshSchema();
    const store = await openPostgresStore(schema.url, { max: 1 });
    try {
      // 200 licences of 100 activations each, two thirds of them deactivated long ago.
      await store.sql.unsafe(`INSERT INTO licenses (id, kind, key_hash, licensee, organization, plan, plan_title, channels, seats, issued, expires, revoked, email, metadata)
      SELECT 'lic_' || n, 'license', 'h' || n, 'L', 'O', 'p', 'P', '["stable"]', 100000, 0, NULL, NULL, NULL, '{}' FROM generate_series(1, 200) n`);
      await store.sql.unsafe(`INSERT INTO activations (id, license_id, kind, installation, device_hash, product, name, platform, version, created, last_seen, deactivated)
      SELECT 'act_' || n, 'lic_' || (1 + n % 200), 'license', 'i' || n, 'd' || n, 'alpha', 'n', 'win-x64', '1', n, n, CASE WHEN n % 3 = 0 THEN NULL ELSE n END
      FROM generate_series(1, 20000) n`);
      await store.sql.unsafe("ANALYZE activations");
      const rows = (await store.sql.unsafe(`EXPLAIN SELECT id FROM activations WHERE license_id = 'lic_7' AND deactivated IS NULL
      AND last_seen < 15000 ORDER BY deactivated, last_seen, id LIMIT 1`)) as { "QUERY PLAN": string }[];
      const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(plan).toContain("Index Scan using activations_by_license_state");
      expect(plan).toContain("Presorted Key: deactivated, last_seen");
      // The seat it finds is the one seen longest ago.
      const [oldest] = (await store.sql.unsafe(`SELECT id FROM activations WHERE license_id = 'lic_7' AND deactivated IS NULL
      AND last_seen < 15000 ORDER BY deactivated, last_seen, id LIMIT 1`)) as { id: string }[];
      expect(oldest!.id).toBe("act_6");
    } finally {
      await store.close();
      await schema.drop();
    }
  },
);
