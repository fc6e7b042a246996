/**
 * Issue 2's concurrency rule, end to end: seats are taken atomically in the database itself, so
 * two keyturn processes sharing one SQLite file never hand out more seats than a license has.
 */
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { Admin } from "../src/domain/admin/operator";
import { Audit } from "../src/domain/audit";
import { systemClock } from "../src/domain/clock";
import { openSqliteStore, SQLITE_FILE } from "../src/store/sqlite";
import { device, tempDir } from "./helpers";
import { siteArgs, siteDirs, startServe } from "./processes";

const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Several rounds: a race between the count and the insert is a narrow window; more tries, more chances to see it.
const ROUNDS = [
  { seats: 10, taken: 4, requests: 60 },
  { seats: 1, taken: 0, requests: 40 },
  { seats: 25, taken: 5, requests: 80 },
  { seats: 40, taken: 0, requests: 100 },
  { seats: 60, taken: 10, requests: 120 },
  { seats: 3, taken: 2, requests: 40 },
];

test("parallel activations through two processes on one SQLite file: exactly the free seats succeed", async () => {
  const dirs = siteDirs(root, "alpha");
  const store = openSqliteStore(dirs.data);
  const admin = new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock));
  const licenses = [];
  for (const r of ROUNDS)
    licenses.push(
      await admin.createLicense({ licensee: "L", organization: "O", plan: "p", planTitle: "P", seats: r.seats, channels: ["stable"], expires: null }),
    );
  await store.close();

  const servers = [await startServe(siteArgs("alpha", dirs)), await startServe(siteArgs("alpha", dirs))];
  try {
    const activate = (url: string, key: string) =>
      fetch(`${url}/api/v1/licenses/activate`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key, device: device("alpha") }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: string } }));

    for (const [i, round] of ROUNDS.entries()) {
      const key = licenses[i]!.key;
      for (let t = 0; t < round.taken; t++) expect((await activate(servers[t % 2]!.url, key)).status).toBe(200);
      const answers = await Promise.all(Array.from({ length: round.requests }, (_, n) => activate(servers[n % 2]!.url, key)));
      const free = round.seats - round.taken;
      expect(answers.filter((a) => a.status === 200)).toHaveLength(free);
      const refused = answers.filter((a) => a.status !== 200);
      expect(refused.every((a) => a.status === 409 && a.body.error === "seat_limit")).toBe(true);
      expect(refused).toHaveLength(round.requests - free);
    }
  } finally {
    for (const s of servers) expect(await s.stop()).toBe(0);
  }

  const db = new Database(join(dirs.data, SQLITE_FILE), { readonly: true });
  for (const [i, round] of ROUNDS.entries()) {
    const active = db.query("SELECT count(*) AS n FROM activations WHERE license_id = ? AND deactivated IS NULL").get(licenses[i]!.license.id) as { n: number };
    expect(active.n).toBe(round.seats);
  }
  db.close();
}, 60_000);
