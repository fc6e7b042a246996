import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/store/migrations";
import { openSqliteStore, SQLITE_FILE } from "../../src/store/sqlite";
import { createLicense, device, tempDir, testSite, type TestSite } from "../helpers";

// The seats a licence holds, as the store reports them (on SQLite counted from the index of held
// seats, migration 25; on PostgreSQL kept by a trigger, migration 2), held equal to a count of the
// active activations through every way a seat is taken or freed.
const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});

async function counts(s: TestSite, licenseId: string) {
  const db = (s.composed.store as unknown as { db: Database }).db;
  const kept = await s.composed.store.countActiveSeats(licenseId);
  const counted = (db.query("SELECT count(*) AS n FROM activations WHERE license_id = ? AND deactivated IS NULL").get(licenseId) as { n: number }).n;
  return { kept, counted };
}

test("the seats a licence holds follow activate, reuse, deactivate (API and operator), seat_limit and re-activation", async () => {
  const s = await testSite("alpha");
  sites.push(s);
  const { key, license } = await createLicense(s, { seats: 2 });
  const activate = async (d: ReturnType<typeof device>) => (await s.request("POST", "/licenses/activate", { body: { key, device: d } })).json() as Promise<any>;
  const a = device("alpha");
  const b = device("alpha");
  const first = await activate(a);
  expect(await counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  expect(first.entitlement.seats).toEqual({ used: 1, total: 2 });
  await activate(a); // the same installation reuses its seat
  expect(await counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  const second = await activate(b);
  expect(second.entitlement.seats).toEqual({ used: 2, total: 2 });
  expect((await activate(device("alpha"))).error).toBe("seat_limit");
  expect(await counts(s, license.id)).toEqual({ kept: 2, counted: 2 });

  expect((await s.request("POST", "/entitlements/deactivate", { token: first.token })).status).toBe(200);
  expect(await counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  await s.admin.deactivate(second.entitlement.id);
  expect(await counts(s, license.id)).toEqual({ kept: 0, counted: 0 });
  const again = await activate(a);
  expect(again.entitlement.seats).toEqual({ used: 1, total: 2 });
  expect(await counts(s, license.id)).toEqual({ kept: 1, counted: 1 });
  const current = (await (await s.request("GET", "/entitlements/current", { token: again.token })).json()) as any;
  expect(current.entitlement.seats).toEqual({ used: 1, total: 2 });
});

test("migrating a file made with the kept count (migrations 2 to 24) drops it and its triggers; the held seats are counted", async () => {
  const dir = tempDir();
  const db = new Database(join(dir, SQLITE_FILE), { create: true, strict: true });
  db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)");
  for (const m of MIGRATIONS.filter((m) => m.version <= 24)) {
    db.exec(m.sqlite);
    db.run("INSERT INTO schema_migrations VALUES (?, 0)", [m.version]);
  }
  db.run(`INSERT INTO licenses (id, kind, key_hash, licensee, organization, plan, plan_title, channels, seats, issued)
    VALUES ('lic_a','license','h1','A','O','p','P','["stable"]',5,0), ('lic_b','license','h2','B','O','p','P','["stable"]',5,0)`);
  const act = db.prepare(`INSERT INTO activations (id, license_id, kind, installation, device_hash, name, platform, version, created, last_seen, deactivated)
    VALUES (?, ?, 'license', ?, 'h', 'PC', 'win-x64', '1', 0, 0, ?)`);
  act.run("act_1", "lic_a", "i1", null);
  act.run("act_2", "lic_a", "i2", null);
  act.run("act_3", "lic_a", "i3", 5);
  act.run("act_4", "lic_b", "i4", 5);
  expect(db.query("SELECT active_seats AS n FROM licenses WHERE id = 'lic_a'").get()).toEqual({ n: 2 });
  db.close();

  const store = openSqliteStore(dir);
  try {
    expect(store.migrationsApplied).toEqual(MIGRATIONS.filter((m) => m.version > 24).map((m) => m.version));
    const columns = (store.db.query("PRAGMA table_info(licenses)").all() as { name: string }[]).map((c) => c.name);
    expect(columns).not.toContain("active_seats");
    expect(store.db.query("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'activations_seat_%'").all()).toEqual([]);
    expect(await store.countActiveSeats("lic_a")).toBe(2);
    expect(await store.countActiveSeats("lic_b")).toBe(0);
    store.db.run("UPDATE activations SET deactivated = 9 WHERE id = 'act_1'");
    expect(await store.countActiveSeats("lic_a")).toBe(1);
    // The licence list reports each one's held seats too.
    const listed = await store.searchLicenses({ now: 0, limit: 10 });
    expect(listed.map((r) => [r.license.id, r.seatsUsed])).toEqual([
      ["lic_a", 1],
      ["lic_b", 0],
    ]);
  } finally {
    await store.close();
  }
});
