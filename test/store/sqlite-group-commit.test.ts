/**
 * SQLite writes of concurrent requests: group commit (one transaction per event-loop turn, each
 * write in its own savepoint, every promise settled after the COMMIT) and small checkpoints (issue 6).
 */
import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStore, SQLITE_FILE, type SqliteStore } from "../../src/store/sqlite";
import { GroupCommit } from "../../src/store/sqlite-group-commit";
import type { AuditRecord } from "../../src/store/types";
import { tempDir } from "../helpers";
import { license, seat } from "./store.suite";

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {});
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(dir = tempDir()): { store: SqliteStore; dir: string } {
  dirs.push(dir);
  const store = openSqliteStore(dir);
  stores.push(store);
  return { store, dir };
}

let n = 0;
const line = (extra: Partial<AuditRecord> = {}): AuditRecord => ({
  ref: `ref_${++n}_${Math.random().toString(36).slice(2)}`,
  time: Date.parse("2026-11-21T12:00:00Z") + n,
  address: "203.0.113.7",
  action: "activate",
  activationId: `act_${n}`,
  licenseId: "lic_x",
  outcome: "ok",
  error: null,
  ...extra,
});

/** Frames in the WAL, read by another connection (its PASSIVE checkpoint reports the WAL's size). */
function walFrames(dir: string): number;
/** Without copying anything (a checkpoint of mode NOOP): the WAL's frames, and how many are in the file already. */
function walFrames(dir: string, mode: "NOOP"): { log: number; checkpointed: number };
function walFrames(dir: string, mode: "PASSIVE" | "NOOP" = "PASSIVE") {
  const db = new Database(join(dir, SQLITE_FILE));
  try {
    const result = db.query(`PRAGMA wal_checkpoint(${mode})`).get() as { log: number; checkpointed: number };
    return mode === "PASSIVE" ? result.log : result;
  } finally {
    db.close();
  }
}

test("writes issued in one turn are committed in one transaction: a fraction of the WAL frames of one commit each", async () => {
  // The migrations' frames are checkpointed first, so the WAL holds only the writes measured (and
  // stays below the autocheckpoint, which would reset it midway).
  const one = open();
  walFrames(one.dir);
  for (let i = 0; i < 30; i++) await one.store.writeAudit(line());
  const separate = walFrames(one.dir);

  const together = open();
  walFrames(together.dir);
  await Promise.all(Array.from({ length: 30 }, () => together.store.writeAudit(line())));
  const grouped = walFrames(together.dir);

  expect(separate).toBeGreaterThanOrEqual(30);
  expect(grouped).toBeLessThan(separate / 4);
});

test("every caller's promise settles only after the COMMIT: another connection already sees the rows", async () => {
  const { store, dir } = open();
  const lic = license({ seats: 10 });
  await store.createLicense(lic);
  const reader = new Database(join(dir, SQLITE_FILE), { readonly: true });
  try {
    const seen = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const r = await store.activate(seat(lic.id));
        if (r.outcome === "seat_limit") throw new Error("no seat");
        return reader.query("SELECT id FROM activations WHERE id = ?").get(r.activation.id);
      }),
    );
    expect(seen.every((row) => row !== null)).toBe(true);
    expect(reader.query("SELECT active_seats FROM licenses WHERE id = ?").get(lic.id)).toEqual({ active_seats: 5 });
  } finally {
    reader.close();
  }
});

test("a failing write fails alone: the others of its transaction are committed", async () => {
  const { store } = open();
  const lic = license({ seats: 2 });
  await store.createLicense(lic);
  const taken = line();
  await store.writeAudit(taken);
  const before = line();
  const after = line();
  const results = await Promise.allSettled([
    store.writeAudit(before),
    store.writeAudit({ ...line(), ref: taken.ref }), // the primary key is taken
    store.activate(seat(lic.id)),
    store.writeAudit(after),
  ]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
  const refs = (await store.listAudit({})).map((a) => a.ref).sort();
  expect(refs).toEqual([taken.ref, before.ref, after.ref].sort());
  expect(await store.countActiveSeats(lic.id)).toBe(1);
});

test("close() commits what is still queued", async () => {
  const { store, dir } = open();
  const queued = line();
  const written = store.writeAudit(queued);
  await store.close();
  await written;
  const again = open(dir).store;
  expect((await again.listAudit({})).map((a) => a.ref)).toEqual([queued.ref]);
});

/** The audit refs found in the database file alone, without its WAL. */
function refsInFileAlone(dir: string): string[] {
  const copy = join(dir, "copy.sqlite");
  copyFileSync(join(dir, SQLITE_FILE), copy);
  const db = new Database(copy, { readonly: true });
  try {
    return (db.query("SELECT ref FROM audit").all() as { ref: string }[]).map((r) => r.ref);
  } catch {
    return []; // the schema itself not yet in the file
  } finally {
    db.close();
    rmSync(copy, { force: true });
  }
}

test("checkpoints are paced (sqlite-checkpoints.ts): past 250 WAL pages the writes reach the database file, in the turn after their commit; close removes the WAL", async () => {
  const { store, dir } = open();
  await store.writeAudit(line()); // the schema's own pages are checkpointed with the first ones
  await nextTurn();
  const few = Array.from({ length: 10 }, () => line());
  for (const l of few) await store.writeAudit(l);
  await nextTurn();
  // 10 commits of a few pages each: still only in the WAL.
  expect(refsInFileAlone(dir).filter((r) => few.some((l) => l.ref === r))).toEqual([]);
  const many = Array.from({ length: 120 }, () => line());
  let answeredBeforeCheckpoint = false;
  for (const l of many) {
    const before = walFrames(dir, "NOOP");
    await store.writeAudit(l);
    const afterCommit = walFrames(dir, "NOOP");
    await nextTurn();
    // The commit that brings the WAL to 250 pages is answered first; its checkpoint follows in a turn of its own.
    if (before.checkpointed < before.log && afterCommit.log >= 250 && afterCommit.checkpointed < afterCommit.log) {
      // At most one commit's pages past 250: never SQLite's default of 1,000.
      expect(afterCommit.log).toBeLessThan(250 + 10);
      answeredBeforeCheckpoint = walFrames(dir, "NOOP").checkpointed === afterCommit.log;
      break;
    }
  }
  expect(answeredBeforeCheckpoint).toBe(true);
  expect(refsInFileAlone(dir)).toEqual(expect.arrayContaining(few.map((l) => l.ref)));

  await store.close();
  expect(existsSync(join(dir, `${SQLITE_FILE}-wal`))).toBe(false);
});

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

test("a write that fails after some of its statements leaves none of them (its savepoint is rolled back)", async () => {
  const db = new Database(":memory:");
  db.exec("CREATE TABLE t (v TEXT PRIMARY KEY)");
  const group = new GroupCommit(db);
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const results = await Promise.allSettled([
    group.write(() => insert.run("a")),
    group.write(() => {
      insert.run("half");
      insert.run("a"); // taken: this write fails after its first statement
    }),
    group.write(() => insert.run("b")),
  ]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  expect(db.query("SELECT v FROM t ORDER BY v").all()).toEqual([{ v: "a" }, { v: "b" }]);
  insert.finalize();
  group.finalize();
  db.close();
});

test("writes that all succeed run once each; after a failure they are applied again, each row in once", async () => {
  const db = new Database(":memory:");
  db.exec("CREATE TABLE t (v TEXT PRIMARY KEY)");
  const group = new GroupCommit(db);
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const runs = new Map<string, number>();
  const writing = (v: string) => () => {
    runs.set(v, (runs.get(v) ?? 0) + 1);
    insert.run(v);
  };
  await Promise.all([group.write(writing("a")), group.write(writing("b"))]);
  expect(Object.fromEntries(runs)).toEqual({ a: 1, b: 1 });

  runs.clear();
  const results = await Promise.allSettled([group.write(writing("c")), group.write(writing("a")), group.write(writing("d"))]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  expect(Object.fromEntries(runs)).toEqual({ c: 2, a: 2, d: 1 }); // the first pass stopped at the failure
  expect(db.query("SELECT v FROM t ORDER BY v").all()).toEqual([{ v: "a" }, { v: "b" }, { v: "c" }, { v: "d" }]);
  insert.finalize();
  group.finalize();
  db.close();
});
