import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openSqliteStore } from "../../src/store/sqlite";
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
