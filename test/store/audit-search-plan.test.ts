import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { auditSearch as postgresSearch, openPostgresStore, type PostgresStore } from "../../src/store/postgres";
import { auditSearch as sqliteSearch, openSqliteStore } from "../../src/store/sqlite";
import type { AuditFilter } from "../../src/store/types";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "../databases";
import { tempDir } from "../helpers";

// Issue 34: an audit search matching nothing scanned the whole table (95 ms over 300,000 lines).
// Each filter the audit search offers (admin API, console, `keyturn audit`) must be answered from
// an index, read here from each database's own plan of the store's statement.

/** Lines enough for the planners to prefer an index where one fits: refusals of two kinds and many ok lines. */
const LINES = 20_000;
const T0 = Date.parse("2026-11-01T00:00:00Z");

/** Every filter of the search, alone and with the time bound and the page cursor, matching nothing. */
const FILTERS: readonly [string, AuditFilter][] = [
  ["error", { error: "nothing_like_this", limit: 101 }],
  ["error since", { error: "nothing_like_this", since: T0, limit: 101 }],
  ["error after a page", { error: "rate_limited", after: { time: T0 + 10_000_000, ref: "ref_x" }, limit: 101 }],
  ["license", { licenseId: "lic_nobody", limit: 101 }],
  ["license and error", { licenseId: "lic_nobody", error: "nothing_like_this", limit: 101 }],
  ["activation", { activationId: "act_nobody", limit: 101 }],
  ["ref", { ref: "ref_nobody", limit: 2 }],
  ["since", { since: T0 + (LINES + 1) * 1000, limit: 101 }],
];

/** The SQL that fills the audit table: `LINES` lines, one a second, every tenth a refusal. */
const FILL = (series: string) => `INSERT INTO audit (ref, time, address, action, activation_id, license_id, outcome, error)
  SELECT 'ref_' || n, ${T0} + n * 1000, '203.0.113.7', 'activate', 'act_' || (n % 500), 'lic_' || (n % 100),
    CASE WHEN n % 10 = 0 THEN 'refused' ELSE 'ok' END,
    CASE WHEN n % 20 = 0 THEN 'rate_limited' WHEN n % 10 = 0 THEN 'license_unknown' END
  FROM ${series}`;

describe("the audit search uses an index for every filter", () => {
  test("SQLite: EXPLAIN QUERY PLAN searches an index, never scans the table", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir);
    try {
      store.db.run(FILL(`(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${LINES}) SELECT n FROM s)`));
      store.db.run("ANALYZE");
      for (const [name, filter] of FILTERS) {
        const { sql, params } = sqliteSearch(filter);
        const plan = (store.db.query(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail).join(" | ");
        expect(plan, name).toMatch(/SEARCH audit USING (COVERING )?INDEX /);
        expect(plan, name).not.toMatch(/SCAN audit/);
        expect(await store.listAudit(filter), name).toEqual(name === "error after a page" ? expect.any(Array) : []);
      }
      const { sql, params } = sqliteSearch({ error: "nothing_like_this", limit: 101 });
      expect((store.db.query(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[])[0]!.detail).toContain("audit_by_error");
      // The error index gives the lines in the search's own order: no sort of what it finds.
      expect((store.db.query(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail).join()).not.toContain("TEMP B-TREE");
      const page = await store.listAudit({ error: "rate_limited", limit: 3 });
      expect(page.map((l) => l.ref)).toEqual([`ref_${LINES}`, `ref_${LINES - 20}`, `ref_${LINES - 40}`]);
      // A licence's lines (migration 25): granted seats' through its activations, the rest by the licence.
      const byLicense = sqliteSearch({ licenseId: "lic_7", limit: 101 });
      const licensePlan = (store.db.query(`EXPLAIN QUERY PLAN ${byLicense.sql}`).all(byLicense.params) as { detail: string }[])
        .map((r) => r.detail)
        .join(" | ");
      expect(licensePlan).toContain("SEARCH audit USING INDEX audit_by_license_but_seats (license_id=?)");
      expect(licensePlan).toContain("SEARCH audit USING INDEX audit_by_activation (activation_id=?)");
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  if (!PG_URL) announceSkip("test/store/audit-search-plan.test.ts (PostgreSQL)", "KEYTURN_TEST_POSTGRES_URL");
  describe.skipIf(!PG_URL)("PostgreSQL", () => {
    let schema: TestSchema;
    let store: PostgresStore;
    afterAll(async () => {
      await store?.close();
      await schema?.drop();
    });

    test("EXPLAIN answers each filter from an index, never a sequential scan of audit", async () => {
      schema = await freshSchema();
      store = await openPostgresStore(schema.url, { max: 1 });
      await store.sql.unsafe(FILL(`generate_series(1, ${LINES}) AS n`));
      await store.sql.unsafe("ANALYZE audit");
      for (const [name, filter] of FILTERS) {
        const { text, params } = postgresSearch(filter);
        const plan = ((await store.sql.unsafe(`EXPLAIN ${text}`, params)) as { "QUERY PLAN": string }[]).map((r) => r["QUERY PLAN"]).join("\n");
        expect(plan, name).toMatch(/Index (Only )?Scan|Bitmap Index Scan/);
        expect(plan, name).not.toMatch(/Seq Scan on audit/);
      }
      const { text, params } = postgresSearch({ error: "nothing_like_this", limit: 101 });
      expect(((await store.sql.unsafe(`EXPLAIN ${text}`, params)) as { "QUERY PLAN": string }[]).map((r) => r["QUERY PLAN"]).join("\n")).toContain(
        "audit_by_error",
      );
      const page = await store.listAudit({ error: "rate_limited", limit: 3 });
      expect(page.map((l) => l.ref)).toEqual([`ref_${LINES}`, `ref_${LINES - 20}`, `ref_${LINES - 40}`]);
    });
  });
});
