/**
 * Seats that come back, under concurrency (design.md "Seats that come back"): two keyturn processes
 * on one SQLite file, and on one PostgreSQL schema, take 50 concurrent activations against a full
 * license whose seats have lapsed. The reclaim is part of the one atomic seat transaction: never
 * more installations hold seats than the license has, each lapsed seat is reclaimed exactly once,
 * the seats still seen are kept, and a reclaimed installation's token is refused by both processes.
 */
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { Admin } from "../src/domain/admin/operator";
import { Audit } from "../src/domain/audit";
import { systemClock } from "../src/domain/clock";
import { openPostgresStore } from "../src/store/postgres";
import { openSqliteStore, SQLITE_FILE } from "../src/store/sqlite";
import type { Store } from "../src/store/types";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "./databases";
import { device, tempDir } from "./helpers";
import { siteArgs, siteDirs, startServe, type ServeProcess } from "./processes";

const root = tempDir();
const schemas: TestSchema[] = [];
afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  for (const s of schemas) await s.drop();
});
if (!PG_URL) announceSkip("seats-reclaim-two-processes.test.ts", "KEYTURN_TEST_POSTGRES_URL");

const SEATS = 10;
const LAPSED = 6;
const REQUESTS = 50;

interface Answer {
  status: number;
  body: { token?: string; error?: string; entitlement?: { id: string } };
}

const activate = (url: string, key: string, d = device("alpha")): Promise<Answer> =>
  fetch(`${url}/api/v1/licenses/activate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ key, device: d }) }).then(
    async (r) => ({ status: r.status, body: (await r.json()) as Answer["body"] }),
  );
const current = (url: string, token: string) =>
  fetch(`${url}/api/v1/entitlements/current`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => ({
    status: r.status,
    body: (await r.json()) as { error?: string },
  }));

/**
 * Runs the race. `backdate(ids)` moves those activations' last sighting two hours back (their
 * 1 h lease has run out); `query(sql)` reads the records.
 */
async function race(
  openStore: () => Promise<Store>,
  serveArgs: string[],
  backdate: (ids: string[]) => Promise<void>,
  query: (sql: string, licenseId: string) => Promise<Array<Record<string, unknown>>>,
) {
  const store = await openStore();
  const admin = new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock));
  const { key, license } = await admin.createLicense({
    licensee: "L",
    organization: "O",
    plan: "p",
    planTitle: "P",
    seats: SEATS,
    channels: ["stable"],
    expires: null,
    seatLease: "1h",
  });
  await store.close();

  const servers: ServeProcess[] = [await startServe(serveArgs), await startServe(serveArgs)];
  try {
    const [a, b] = servers.map((s) => s.url) as [string, string];
    const holders: Answer[] = [];
    for (let i = 0; i < SEATS; i++) holders.push(await activate(i % 2 ? a : b, key));
    expect(holders.every((h) => h.status === 200)).toBe(true);
    const lapsed = holders.slice(0, LAPSED);
    const kept = holders.slice(LAPSED);
    await backdate(lapsed.map((h) => h.body.entitlement!.id));

    const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, n) => activate(n % 2 ? a : b, key)));
    const granted = answers.filter((x) => x.status === 200);
    expect(granted).toHaveLength(LAPSED);
    expect(answers.filter((x) => x.status !== 200).every((x) => x.status === 409 && x.body.error === "seat_limit")).toBe(true);

    const active = await query("SELECT id FROM activations WHERE license_id = $1 AND deactivated IS NULL", license.id);
    expect(active).toHaveLength(SEATS);
    expect(active.map((r) => r.id).sort()).toEqual([...kept, ...granted].map((h) => h.body.entitlement!.id).sort());
    const reclaims = await query("SELECT activation_id, actor FROM audit WHERE license_id = $1 AND action = 'reclaim'", license.id);
    expect(reclaims.map((r) => r.activation_id).sort()).toEqual(lapsed.map((h) => h.body.entitlement!.id).sort());
    expect(reclaims.map((r) => r.actor).sort()).toEqual(granted.map((h) => h.body.entitlement!.id).sort());

    for (const url of [a, b]) {
      for (const h of lapsed) expect((await current(url, h.body.token!)).body.error).toBe("entitlement_revoked");
      for (const h of kept) expect((await current(url, h.body.token!)).status).toBe(200);
    }
  } finally {
    for (const s of servers) expect(await s.stop()).toBe(0);
  }
}

test("SQLite, two processes: 50 concurrent activations against 6 lapsed seats of 10: 6 granted, each lapsed seat reclaimed once", async () => {
  const dirs = siteDirs(join(root, "sqlite"), "alpha");
  const file = join(dirs.data, SQLITE_FILE);
  const withDb = async <T>(f: (db: Database) => T) => {
    const db = new Database(file);
    db.exec("PRAGMA busy_timeout = 5000");
    try {
      return f(db);
    } finally {
      db.close();
    }
  };
  await race(
    async () => openSqliteStore(dirs.data),
    siteArgs("alpha", dirs),
    (ids) =>
      withDb((db) => void db.query(`UPDATE activations SET last_seen = ? WHERE id IN (${ids.map(() => "?").join(",")})`).run(Date.now() - 7_200_000, ...ids)),
    (sql, licenseId) => withDb((db) => db.query(sql.replace("$1", "?")).all(licenseId) as Array<Record<string, unknown>>),
  );
}, 60_000);

test.skipIf(!PG_URL)(
  "PostgreSQL, two processes: 50 concurrent activations against 6 lapsed seats of 10: 6 granted, each lapsed seat reclaimed once",
  async () => {
    const schema = await freshSchema();
    schemas.push(schema);
    const dirs = siteDirs(join(root, "pg"), "alpha");
    const sql = new SQL(schema.url, { max: 1 });
    try {
      await race(
        () => openPostgresStore(schema.url),
        [...siteArgs("alpha", dirs), "--database", schema.url],
        async (ids) => void (await sql`UPDATE activations SET last_seen = ${Date.now() - 7_200_000} WHERE id IN ${sql(ids)}`),
        (text, licenseId) => sql.unsafe(text, [licenseId]),
      );
    } finally {
      await sql.close();
    }
  },
  60_000,
);
