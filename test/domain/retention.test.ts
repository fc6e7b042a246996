import { afterEach, expect, test } from "bun:test";
import { silentLogger } from "../../src/config/log";
import { startRetention, type Timers } from "../../src/domain/retention";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite";
import type { AuditRecord } from "../../src/store/types";
import { tempDir, testClock } from "../helpers";
import { rmSync } from "node:fs";
import { siteArgs, siteDirs, startServe } from "../processes";

const DAY = 86_400_000;
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function store(): SqliteStore {
  const dir = tempDir();
  dirs.push(dir);
  return openSqliteStore(dir);
}

function line(ref: string, time: number): AuditRecord {
  return { ref, time, address: null, action: "activate", activationId: null, licenseId: null, outcome: "ok", error: null };
}

/** Timers whose ticks the test fires by hand. */
function manualTimers() {
  const ticks: Array<() => void> = [];
  let cleared = 0;
  const timers: Timers = {
    setInterval: (tick) => (ticks.push(tick), ticks.length - 1),
    clearInterval: () => void cleared++,
  };
  return {
    timers,
    tick: () => ticks.forEach((t) => t()),
    get cleared() {
      return cleared;
    },
    get scheduled() {
      return ticks.length;
    },
  };
}

/** Lets a prune started by a tick (SQLite answers synchronously) finish. */
const settle = () => new Promise((r) => setImmediate(r));
const refs = async (s: SqliteStore) => (await s.listAudit({})).map((a) => a.ref).sort();
const challenges = (s: SqliteStore) =>
  (s.db.query("SELECT nonce_hash FROM challenges ORDER BY nonce_hash").all() as { nonce_hash: string }[]).map((r) => r.nonce_hash);

test("prunes audit lines past the retention and expired challenges at start and on every tick, keeping the rest", async () => {
  const s = store();
  const clock = testClock();
  const t0 = clock();
  await s.writeAudit(line("ref_old", t0 - 91 * DAY));
  await s.writeAudit(line("ref_edge", t0 - 90 * DAY + 1));
  await s.writeAudit(line("ref_new", t0 - DAY));
  await s.createChallenge({ nonceHash: "expired", installation: "i", created: t0 - DAY - 700_000, expires: t0 - DAY - 100_000, used: null });
  // expired, but kept a day so that a replayed ID token still meets token_replayed
  await s.createChallenge({ nonceHash: "kept", installation: "i", created: t0 - 700_000, expires: t0 - 100_000, used: t0 - 600_000 });
  await s.createChallenge({ nonceHash: "live", installation: "i", created: t0, expires: t0 + 600_000, used: null });

  const m = manualTimers();
  const schedule = startRetention({ store: s, clock, log: silentLogger, auditRetentionSeconds: 90 * 86400, everyMs: 3_600_000, timers: m.timers });
  await settle();
  expect(await refs(s)).toEqual(["ref_edge", "ref_new"]);
  expect(challenges(s)).toEqual(["kept", "live"]);

  // A day later the edge line is past the retention and the kept challenge is a day past its expiry.
  clock.advance(DAY);
  expect(await refs(s)).toEqual(["ref_edge", "ref_new"]);
  m.tick();
  await settle();
  expect(await refs(s)).toEqual(["ref_new"]);
  expect(challenges(s)).toEqual(["live"]);

  schedule.stop();
  expect(m.cleared).toBe(1);
  await s.writeAudit(line("ref_ancient", t0 - 1000 * DAY));
  m.tick();
  await settle();
  expect(await schedule.run()).toBeNull();
  expect(await refs(s)).toEqual(["ref_ancient", "ref_new"]);
  await s.close();
});

test("a failing prune is logged and retried on the next tick, never thrown", async () => {
  const s = store();
  const clock = testClock();
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (msg: string) => void warnings.push(msg) };
  let fail = true;
  const flaky = Object.assign(Object.create(s), {
    pruneAudit: (before: number) => (fail ? Promise.reject(new Error("database is locked")) : s.pruneAudit(before)),
  });
  await s.writeAudit(line("ref_old", clock() - 100 * DAY));
  const m = manualTimers();
  const schedule = startRetention({ store: flaky, clock, log, auditRetentionSeconds: 90 * 86400, timers: m.timers });
  expect(await schedule.run()).toBeNull();
  expect(warnings.length).toBeGreaterThan(0);
  fail = false;
  expect(await schedule.run()).toEqual({ audit: 1, challenges: 0, idempotency: 0, events: 0, deliveries: 0, sessions: 0 });
  expect(await refs(s)).toEqual([]);
  schedule.stop();
  await s.close();
});

test("serve prunes at start: an audit line past --audit-retention is gone once it answers", async () => {
  const root = tempDir();
  dirs.push(root);
  const site = siteDirs(root, "alpha");
  const s = openSqliteStore(site.data);
  const now = Date.now();
  await s.writeAudit(line("ref_past", now - 2 * DAY));
  await s.writeAudit(line("ref_recent", now - 1000));
  await s.close();
  const serve = await startServe([...siteArgs("alpha", site), "--audit-retention", "1d"]);
  try {
    const check = openSqliteStore(site.data);
    let left: string[] = [];
    for (let i = 0; i < 100; i++) {
      left = (await refs(check)).filter((r) => r.startsWith("ref_past") || r.startsWith("ref_recent"));
      if (!left.includes("ref_past")) break;
      await Bun.sleep(20);
    }
    await check.close();
    expect(left).toEqual(["ref_recent"]);
  } finally {
    expect(await serve.stop()).toBe(0);
  }
});
