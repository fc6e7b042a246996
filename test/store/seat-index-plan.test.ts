import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openPostgresStore } from "../../src/store/postgres";
import { licenseActivations, openSqliteStore } from "../../src/store/sqlite";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { tempDir } from "../helpers";

// Each index that begins with an activation's licence costs every new seat a random page for the
// checkpoint to sync (on a million licences, 5a's tail and rate; bench/README.md, "4a and 5a, seventh
// round" and "sixteenth round"). On SQLite a held seat is in one such index (the unique one), an
// ended one in another (migration 24); a licence's activations are one search of each, never a scan.

const plan = (store: ReturnType<typeof openSqliteStore>, sql: string) =>
  (store.db.query(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join(" | ");

test("SQLite: a held seat is in one index that begins with the licence, an ended one in another, and no index holds last_seen", async () => {
  const dir = tempDir();
  const store = openSqliteStore(dir);
  try {
    const indexes = (store.db.query("PRAGMA index_list(activations)").all() as { name: string; partial: number }[]).map((i) => ({
      ...i,
      columns: (store.db.query(`PRAGMA index_info(${i.name})`).all() as { name: string }[]).map((c) => c.name),
    }));
    const byLicense = indexes.filter((i) => i.columns[0] === "license_id");
    expect(byLicense.map((i) => i.name).sort()).toEqual(["activations_by_license_ended", "activations_one_active_seat"]);
    // Both partial: held (deactivated IS NULL) and ended (IS NOT NULL), so a row is in exactly one.
    expect(byLicense.every((i) => i.partial === 1)).toBe(true);
    const ended = store.db.query("SELECT sql FROM sqlite_master WHERE name = 'activations_by_license_ended'").get() as { sql: string };
    expect(ended.sql).toContain("WHERE deactivated IS NOT NULL");
    // A sighting (last_seen, every entitlements/current) rewrites no index entry.
    expect(indexes.filter((i) => i.columns.includes("last_seen"))).toEqual([]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("SQLite: a licence's whole history, its held seats and the reclaim's search each search an index, never scan activations", async () => {
  const dir = tempDir();
  const store = openSqliteStore(dir);
  try {
    const history = plan(store, `SELECT * FROM ${licenseActivations("'lic_x'")} ORDER BY created, id`);
    expect(history).toContain("SEARCH activations USING INDEX activations_one_active_seat (license_id=?)");
    expect(history).toContain("SEARCH activations USING INDEX activations_by_license_ended (license_id=?)");
    expect(history).not.toContain("SCAN activations");
    // A correlated use (the feed snapshot's sections) searches both too.
    const correlated = plan(store, `SELECT l.id, (SELECT max(a.token_exp) FROM ${licenseActivations("l.id")} a) FROM licenses l`);
    expect(correlated).toContain("activations_by_license_ended (license_id=?)");
    expect(correlated).not.toContain("SCAN activations");
    const held = plan(store, "SELECT * FROM activations WHERE license_id = 'lic_x' AND deactivated IS NULL ORDER BY created, id");
    expect(held).toMatch(/^SEARCH activations USING INDEX activations_one_active_seat \(license_id=\?\)/);
    const lapsed = plan(store, "SELECT * FROM activations WHERE license_id = 'lic_x' AND deactivated IS NULL AND last_seen < 5 ORDER BY last_seen LIMIT 1");
    expect(lapsed).toMatch(/^SEARCH activations USING INDEX activations_one_active_seat \(license_id=\?\)/);
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
