/**
 * Issue 5, hostile conditions: activations under load, the process killed with SIGKILL, restarted.
 * Every activation answered 200 must be in the records, the file must pass PRAGMA integrity_check,
 * and no license may have more active seats than its total.
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
import { siteArgs, siteDirs, startServe, type ServeProcess } from "./processes";

const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

const LICENSES = 4;
const SEATS = 25;
const WORKERS = 16;

interface Granted {
  readonly activationId: string;
  readonly licenseId: string;
  readonly token: string;
}

/** Activations from WORKERS parallel clients until the process dies; returns those answered 200. */
async function loadUntilKilled(
  serve: ServeProcess,
  keys: string[],
  killWhen: (granted: number, refused: number) => boolean,
): Promise<{ granted: Granted[]; refused: number }> {
  const granted: Granted[] = [];
  let refused = 0;
  let killing: Promise<void> | null = null;
  const worker = async (w: number) => {
    for (let n = 0; ; n++) {
      let r: Response;
      try {
        r = await fetch(`${serve.url}/api/v1/licenses/activate`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key: keys[(w + n) % keys.length], device: device("alpha") }),
        });
      } catch {
        return; // the process is gone; this request's fate is unknown, so it proves nothing
      }
      const body = (await r.json().catch(() => null)) as { token: string; entitlement: { id: string } } | { error: string } | null;
      if (body === null) return;
      if (r.status === 200 && "token" in body) {
        const claims = JSON.parse(Buffer.from(body.token.split(".")[1]!, "base64url").toString()) as { lic: string };
        granted.push({ activationId: body.entitlement.id, licenseId: claims.lic, token: body.token });
      } else {
        expect(r.status).toBe(409);
        refused++;
      }
      if (killWhen(granted.length, refused)) killing ??= serve.kill();
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  await killing;
  return { granted, refused };
}

function checkRecords(data: string, granted: Granted[]) {
  const db = new Database(join(data, SQLITE_FILE));
  try {
    expect(db.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
    expect(db.query("PRAGMA foreign_key_check").all()).toEqual([]);
    const active = new Set((db.query("SELECT id FROM activations WHERE deactivated IS NULL").all() as { id: string }[]).map((a) => a.id));
    const missing = granted.filter((g) => !active.has(g.activationId));
    expect(missing).toEqual([]);
    const over = db
      .query(`SELECT l.id, l.seats, count(a.id) AS used FROM licenses l
      JOIN activations a ON a.license_id = l.id AND a.deactivated IS NULL GROUP BY l.id HAVING used > l.seats`)
      .all();
    expect(over).toEqual([]);
  } finally {
    db.close();
  }
}

test("SIGKILL under concurrent activations loses no answered activation and breaks no seat count", async () => {
  const dirs = siteDirs(root, "alpha");
  const store = openSqliteStore(dirs.data);
  const admin = new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock));
  const keys: string[] = [];
  for (let i = 0; i < LICENSES; i++)
    keys.push(
      (await admin.createLicense({ licensee: `L${i}`, organization: "O", plan: "p", planTitle: "P", seats: SEATS, channels: ["stable"], expires: null })).key,
    );
  await store.close();

  const granted: Granted[] = [];
  let refused = 0;
  // Two kills: the first mid-way through the seats, the second once the licenses are full and seat_limit answers.
  const kills = [(g: number) => g >= 50, (_: number, r: number) => r >= 40];
  for (const killWhen of kills) {
    const serve = await startServe(siteArgs("alpha", dirs));
    const round = await loadUntilKilled(serve, keys, killWhen);
    expect(serve.proc.signalCode).toBe("SIGKILL");
    expect(killWhen(round.granted.length, round.refused)).toBe(true);
    granted.push(...round.granted);
    refused += round.refused;
    checkRecords(dirs.data, granted);
  }
  expect(granted.length).toBeGreaterThan(LICENSES * SEATS * 0.8);

  // Restarted, the site still knows every installation it answered 200 for.
  const serve = await startServe(siteArgs("alpha", dirs));
  try {
    for (const g of granted.filter((_, i) => i % 10 === 0)) {
      const r = await fetch(`${serve.url}/api/v1/entitlements/current`, { headers: { authorization: `Bearer ${g.token}` } });
      expect(r.status).toBe(200);
      expect(((await r.json()) as { activation: { id: string } }).activation.id).toBe(g.activationId);
    }
  } finally {
    expect(await serve.stop()).toBe(0);
  }
  checkRecords(dirs.data, granted);
}, 60_000);
