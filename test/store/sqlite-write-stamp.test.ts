import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sqliteWriteStamp } from "../../src/store/sqlite-write-stamp";

const dirs: string[] = [];
afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

function walDatabase() {
  const dir = mkdtempSync(join(tmpdir(), "keyturn-stamp-"));
  dirs.push(dir);
  const file = join(dir, "db.sqlite");
  const db = new Database(file, { create: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("CREATE TABLE t (x INTEGER)");
  return { db, file };
}

test("a commit by another process moves the stamp; reading does not", () => {
  const { db, file } = walDatabase();
  const stamp = sqliteWriteStamp(db, file);
  expect(stamp.source).toBe("wal-index");
  stamp.changedSinceLastCall();
  db.query("SELECT count(*) FROM t").get();
  expect(stamp.changedSinceLastCall()).toBe(false);
  const writer = Bun.spawnSync([
    process.execPath,
    "-e",
    `const { Database } = require("bun:sqlite"); new Database(${JSON.stringify(file)}).run("INSERT INTO t VALUES (1)")`,
  ]);
  expect(writer.exitCode).toBe(0);
  expect(stamp.changedSinceLastCall()).toBe(true);
  expect(stamp.changedSinceLastCall()).toBe(false);
  stamp.close();
  db.close();
});

test("a commit by this connection, and every one of several commits, moves the stamp", () => {
  const { db, file } = walDatabase();
  const stamp = sqliteWriteStamp(db, file);
  stamp.changedSinceLastCall();
  for (let i = 0; i < 3; i++) {
    db.run("INSERT INTO t VALUES (?)", [i]);
    expect(stamp.changedSinceLastCall()).toBe(true);
  }
  // A checkpoint resets the WAL; the next commit writes at its start again and must still count.
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  stamp.changedSinceLastCall();
  db.run("INSERT INTO t VALUES (9)");
  expect(stamp.changedSinceLastCall()).toBe(true);
  stamp.close();
  db.close();
});

test("without a shared-memory WAL index it asks SQLite instead, with the same answers", () => {
  const db = new Database(":memory:");
  db.exec("CREATE TABLE t (x INTEGER)");
  const stamp = sqliteWriteStamp(db, ":memory:");
  expect(stamp.source).toBe("data_version");
  stamp.changedSinceLastCall();
  expect(stamp.changedSinceLastCall()).toBe(false);
  db.run("INSERT INTO t VALUES (1)");
  expect(stamp.changedSinceLastCall()).toBe(true);
  stamp.close();
  db.close();
});

// SQLite locks the -shm file with POSIX record locks, which a process loses when it closes ANY
// descriptor of that file. A stamp that did (Bun.mmap opens and closes one) let another process
// open the database as if no one had it open, truncate the -shm and crash this one with SIGBUS.
test.skipIf(!existsSync("/proc/locks"))("making and reading the stamp keeps this process's SQLite locks on the -shm file", () => {
  const { db, file } = walDatabase();
  db.query("SELECT count(*) FROM t").get();
  const ino = statSync(`${file}-shm`).ino;
  const held = () =>
    readFileSync("/proc/locks", "utf8")
      .split("\n")
      .filter((l) => l.includes(` ${process.pid} `) && l.includes(`:${ino} `)).length;
  const before = held();
  expect(before).toBeGreaterThan(0);
  const stamp = sqliteWriteStamp(db, file);
  stamp.changedSinceLastCall();
  expect(held()).toBe(before);
  const other = sqliteWriteStamp(db, file); // a second stamp of the same file reuses the descriptor
  other.changedSinceLastCall();
  expect(held()).toBe(before);
  const writer = Bun.spawnSync([
    process.execPath,
    "-e",
    `const { Database } = require("bun:sqlite"); new Database(${JSON.stringify(file)}).run("INSERT INTO t VALUES (1)")`,
  ]);
  expect(writer.exitCode).toBe(0);
  expect(stamp.changedSinceLastCall()).toBe(true);
  expect(db.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
  db.close();
});
