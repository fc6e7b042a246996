/**
 * 5a's floor (bench/lib/records-floor.ts starts it): an activation's writes on the seeded records of
 * scenario 5, with none of keyturn's own work. A bare Bun.serve reads the JSON body, finds the
 * licence by its key's hash, takes the installation's seat (a new activation row, or the existing
 * one touched, as keyturn answers the same installation again) and writes its audit line (the
 * seat-count trigger of the migrations updates the licence), on the same file with keyturn's
 * SQLite settings (WAL, synchronous NORMAL, its checkpoint pacing) and, as keyturn does, in one
 * transaction per event-loop turn, with keyturn's time-ordered ids. Its p99 is the tail that
 * writing these records durably has on this machine's disk, whoever writes them.
 *   bun records-floor-server.ts PORT RECORDS_FILE
 */
import { Database } from "bun:sqlite";
import { VARIANTS } from "../../src/config/variants";
import { newId } from "../../src/domain/ids";
import { typedKeyHash } from "../../src/domain/license-key";
import { CheckpointPacing, passiveCheckpoint, SQLITE_AUTOCHECKPOINT_PAGES } from "../../src/store/sqlite-checkpoints";
import { walIndexReader, walProgressOf } from "../../src/store/sqlite-wal-index";

const [port, file] = process.argv.slice(2) as [string, string];
const db = new Database(file, { strict: true });
db.exec("PRAGMA busy_timeout = 10000");
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec("PRAGMA foreign_keys = ON");
db.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
const wal = walIndexReader(file);
if (!wal) throw new Error("the records' WAL index cannot be read");
const checkpoints = new CheckpointPacing({ progress: walProgressOf(wal), checkpoint: passiveCheckpoint(db).run });
const licenseByKeyHash = db.prepare("SELECT id, seats, active_seats FROM licenses WHERE key_hash = ?");
const activeSeat = db.prepare("SELECT id FROM activations WHERE license_id = ? AND installation = ? AND deactivated IS NULL");
const insertActivation =
  db.prepare(`INSERT INTO activations (id, license_id, kind, installation, device_hash, product, name, platform, version, created, last_seen)
  VALUES (?, ?, 'license', ?, ?, ?, ?, ?, ?, ?, ?)`);
const touch = db.prepare("UPDATE activations SET name = ?, platform = ?, version = ?, last_seen = ? WHERE id = ?");
const insertAudit = db.prepare(
  "INSERT INTO audit (ref, time, address, action, activation_id, license_id, outcome) VALUES (?, ?, '127.0.0.1', 'activate', ?, ?, 'ok')",
);

interface Device {
  readonly hash: string;
  readonly name: string;
  readonly platform: string;
  readonly version: string;
  readonly product: string;
}

let batch: (() => void)[] = [];
const commitTurn = () => {
  const writes = batch;
  batch = [];
  try {
    db.exec("BEGIN IMMEDIATE");
    for (const write of writes) write();
    db.exec("COMMIT");
    checkpoints.committed();
  } catch (error) {
    // A floor that cannot write measures nothing: it stops, and the bench fails on the refused connections.
    console.error(error);
    process.exit(1);
  }
};

Bun.serve({
  hostname: "127.0.0.1",
  port: Number(port),
  async fetch(request) {
    const { key, device } = (await request.json()) as { key: string; device: Device };
    const hash = typedKeyHash(VARIANTS.alpha, key);
    const license = hash === null ? null : (licenseByKeyHash.get(hash) as { id: string; seats: number; active_seats: number } | null);
    if (!license) return new Response('{"ok":false}', { status: 403 });
    let id = newId("act", Date.now());
    let taken = false;
    await new Promise<void>((resolve) => {
      const write = () => {
        const now = Date.now();
        const existing = activeSeat.get(license.id, device.hash) as { id: string } | null;
        if (existing) {
          // The installation's seat again, as keyturn answers it: touched, 200.
          touch.run(device.name, device.platform, device.version, now, existing.id);
          id = existing.id;
          taken = true;
        } else if (license.active_seats < license.seats) {
          insertActivation.run(id, license.id, device.hash, device.hash, device.product, device.name, device.platform, device.version, now, now);
          taken = true;
        }
        if (taken) insertAudit.run(newId("ref", now), now, id, license.id);
        resolve();
      };
      if (batch.push(write) === 1) setImmediate(commitTurn);
    });
    return new Response(JSON.stringify({ ok: taken, activation: id }), { status: taken ? 200 : 409, headers: { "content-type": "application/json" } });
  },
});
console.log("ready");
