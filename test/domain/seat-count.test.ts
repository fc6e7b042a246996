import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/migrations";
import { openSqliteStore, SQLITE_FILE } from "../../src/store/sqlite";
import { createLicense, device, tempDir, testSite, type TestSite } from "../helpers";

// The seat count is kept by the database (migration 2) instead of counted per request; these tests
// hold it equal to a count of the active activations through every way a seat is taken or freed.
const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});

function counts(s: TestSite, licenseId: string) {
  const db = (s.composed.store as unknown as { db: Database }).db;
  const kept = (db.query("SELECT active_seats AS n FROM licenses WHERE id = ?").get(licenseId) as { n: number }).n;
  const counted = (db.query("SELECT count(*) AS n FROM activations WHERE license_id = ? AND deactivated IS NULL").get(licenseId) as { n: number }).n;
  return { kept, counted };
}

test("the kept seat count follows activate, reuse, deactivate (API and operator), seat_limit and re-activation", async () => {
  const s = await testSite("alpha");
  sites.push(s);
  const { key, license } = await createLicense(s, { seats: 2 });
  const activate = async (d: ReturnType<typeof device>) => (await s.request("POST", "/licenses/activate", { body: { key, device: d } })).json() as Promise<any>;
  const a = device("alpha");
  const b = device("alpha");
  const first = await activate(a);
  expect(counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  expect(first.entitlement.seats).toEqual({ used: 1, total: 2 });
  await activate(a); // the same installation reuses its seat
  expect(counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  const second = await activate(b);
  expect(second.entitlement.seats).toEqual({ used: 2, total: 2 });
  expect((await activate(device("alpha"))).error).toBe("seat_limit");
  expect(counts(s, license.id)).toEqual({ kept: 2, counted: 2 });

  expect((await s.request("POST", "/entitlements/deactivate", { token: first.token })).status).toBe(200);
  expect(counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  await s.admin.deactivate(second.entitlement.id);
  expect(counts(s, license.id)).toEqual({ kept: 0, counted: 0 });
  const again = await activate(a);
  expect(again.entitlement.seats).toEqual({ used: 1, total: 2 });
  expect(counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  const current = (await (await s.request("GET", "/entitlements/current", { token: again.token })).json()) as any;
  expect(current.entitlement.seats).toEqual({ used: 1, total: 2 });
});

test("migrating a file made before the kept count fills it in from the activations", () => {
  const dir = tempDir();
  const db = new Database(join(dir, SQLITE_FILE), { create: true, strict: true });
  db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)");
  db.exec(MIGRATIONS[0]!.sqlite);
  db.run("INSERT INTO schema_migrations VALUES (1, 0)");
  db.run(`INSERT INTO licenses VALUES ('lic_a','license','h1','A','O','p','P','["stable"]',5,0,NULL,NULL),
                                       ('lic_b','license','h2','B','O','p','P','["stable"]',5,0,NULL,NULL)`);
  const act = db.prepare(`INSERT INTO activations (id, license_id, kind, installation, device_hash, name, platform, version, created, last_seen, deactivated)
    VALUES (?, ?, 'license', ?, 'h', 'PC', 'win-x64', '1', 0, 0, ?)`);
  act.run("act_1", "lic_a", "i1", null);
  act.run("act_2", "lic_a", "i2", null);
  act.run("act_3", "lic_a", "i3", 5);
  act.run("act_4", "lic_b", "i4", 5);
  db.close();

  const store = openSqliteStore(dir);
  const rows = store.db.query("SELECT id, active_seats FROM licenses ORDER BY id").all();
  expect(rows).toEqual([
    { id: "lic_a", active_seats: 2 },
    { id: "lic_b", active_seats: 0 },
  ]);
  store.db.run("DELETE FROM activations WHERE id = 'act_1'");
  expect(store.db.query("SELECT active_seats AS n FROM licenses WHERE id = 'lic_a'").get()).toEqual({ n: 1 });
  store.db.close();
});
