/**
 * The checkpoint pacing (src/store/sqlite-checkpoints.ts): when a checkpoint runs, and how the size
 * of the next one follows what the last one cost. A WAL, a clock and a disk of the test's own.
 */
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { CHECKPOINT_BUDGET_MS, CHECKPOINT_PAGES, CheckpointPacing, passiveCheckpoint } from "../../src/store/sqlite-checkpoints";
import { tempDir } from "../helpers";

/**
 * A WAL of `frames` frames, a checkpoint that costs `msPerPage` a page copied (and copies all unless
 * readers hold some, or fails when told to), and turns run by hand.
 */
function wal(msPerPage: number) {
  const state = { frames: 0, backfilled: 0, salt: 1, clock: 0, checkpoints: 0, heldByReaders: 0, msPerPage, refuse: null as "busy" | "error" | null };
  const turns: (() => void)[] = [];
  const pacing = new CheckpointPacing({
    progress: () => ({ frames: state.frames, backfilled: state.backfilled, salt: state.salt }),
    checkpoint: () => {
      if (state.refuse === "busy") return false;
      if (state.refuse === "error") throw new Error("database table is locked");
      state.checkpoints++;
      const copied = Math.max(state.backfilled, state.frames - state.heldByReaders);
      state.clock += (copied - state.backfilled) * state.msPerPage + 0.0001;
      state.backfilled = copied;
      return true;
    },
    now: () => state.clock,
    later: (run) => turns.push(run),
  });
  const commit = (pages: number) => {
    // A writer after a checkpoint that copied everything starts the WAL again from its beginning, with a new salt.
    if (state.frames > 0 && state.backfilled === state.frames) {
      state.frames = state.backfilled = 0;
      state.salt++;
    }
    state.frames += pages;
    pacing.committed();
  };
  const runTurns = () => {
    for (const run of turns.splice(0)) run();
  };
  /** `count` checkpoints, each after a commit of the pages it waits for: the sizes that follow each. */
  const rounds = (count: number) =>
    Array.from({ length: count }, () => {
      commit(pacing.pagesPerCheckpoint);
      runTurns();
      return pacing.pagesPerCheckpoint;
    });
  return { state, pacing, commit, runTurns, turns, rounds };
}

test("a checkpoint waits for the WAL to hold the pages it waits for (250 at first), and runs in a turn after the commit, not in it", () => {
  const { state, pacing, commit, runTurns, turns } = wal(0.001);
  expect(pacing.pagesPerCheckpoint).toBe(CHECKPOINT_PAGES.start);
  for (let i = 0; i < 24; i++) commit(10);
  expect(turns).toHaveLength(0);
  commit(10); // 250 pages
  expect(state.checkpoints).toBe(0);
  expect(turns).toHaveLength(1);
  commit(5); // already scheduled: not twice
  expect(turns).toHaveLength(1);
  runTurns();
  expect(state.checkpoints).toBe(1);
  expect(state.backfilled).toBe(255);
});

test("slow checkpoints make the next ones smaller, in proportion, by at most half a step, never under the minimum", () => {
  // 0.04 ms a page: 250 pages take 10 ms, five times the budget.
  const sizes = wal(0.04).rounds(8);
  expect(sizes[0]).toBe(125); // 10 ms: halved, not cut to a fifth in one step
  // Then settles where a checkpoint takes the budget: 2 ms / 0.04 ms a page = 50 pages.
  expect(sizes.at(-1)).toBe(Math.round(CHECKPOINT_BUDGET_MS / 0.04));
  expect(wal(1).rounds(8).at(-1)).toBe(CHECKPOINT_PAGES.min);
});

test("cheap checkpoints (a small set of records, the same pages again) make the next ones larger, at most doubled, up to the maximum", () => {
  expect(wal(0.0001).rounds(4)).toEqual([500, CHECKPOINT_PAGES.max, CHECKPOINT_PAGES.max, CHECKPOINT_PAGES.max]);
});

test("a checkpoint that readers kept from copying everything is not retried after every commit, and its time does not resize the next", () => {
  const { state, pacing, commit, runTurns, turns } = wal(0.001);
  state.heldByReaders = 250;
  commit(250);
  runTurns();
  expect(state.checkpoints).toBe(1);
  expect(state.backfilled).toBe(0);
  // Nothing copied: the checkpoint's few microseconds are no measure of a page's cost.
  expect(pacing.pagesPerCheckpoint).toBe(CHECKPOINT_PAGES.start);
  commit(249);
  expect(turns).toHaveLength(0);
  state.heldByReaders = 0;
  commit(1); // 250 frames more than the checkpoint left
  expect(turns).toHaveLength(1);
  runTurns();
  expect(state.checkpoints).toBe(2);
  expect(state.backfilled).toBe(500);
});

test("a WAL started again (another salt) drops the wait for frames the readers held", () => {
  const { state, pacing, commit, runTurns, turns } = wal(0.001);
  state.heldByReaders = 250;
  commit(300);
  runTurns();
  const waited = pacing.pagesPerCheckpoint;
  // Another process's checkpoint copies everything and its writer starts the WAL again.
  state.heldByReaders = 0;
  state.backfilled = state.frames;
  commit(waited);
  expect(state.frames).toBe(waited);
  expect(turns).toHaveLength(1);
});

test("a checkpoint that cannot start now (a transaction open) or fails is tried again after a later commit; the size stays", () => {
  const { state, pacing, commit, runTurns, turns } = wal(0.001);
  state.refuse = "busy";
  commit(250);
  runTurns();
  expect(state.checkpoints).toBe(0);
  state.refuse = "error";
  commit(1);
  expect(turns).toHaveLength(1);
  expect(() => runTurns()).not.toThrow();
  expect(pacing.pagesPerCheckpoint).toBe(CHECKPOINT_PAGES.start);
  state.refuse = null;
  commit(1);
  runTurns();
  expect(state.checkpoints).toBe(1);
  expect(state.backfilled).toBe(252);
});

test("after close, a checkpoint already scheduled does not run (the connection's close checkpoints)", () => {
  const { state, pacing, commit, runTurns, turns } = wal(0.001);
  commit(300);
  expect(turns).toHaveLength(1);
  pacing.close();
  runTurns();
  commit(300);
  runTurns();
  expect(state.checkpoints).toBe(0);
});

test("the checkpoint is not started inside one of the connection's own transactions (SQLite refuses it there), and is once it ends", () => {
  const dir = tempDir();
  const db = new Database(join(dir, "records.sqlite"), { create: true, strict: true });
  try {
    db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (v TEXT)");
    db.exec("INSERT INTO t VALUES ('a')");
    const checkpoint = passiveCheckpoint(db);
    db.exec("BEGIN");
    expect(checkpoint.run()).toBe(false);
    db.exec("COMMIT");
    expect(checkpoint.run()).toBe(true);
    const other = new Database(join(dir, "records.sqlite"));
    const { log, checkpointed } = other.query("PRAGMA wal_checkpoint(NOOP)").get() as { log: number; checkpointed: number };
    other.close();
    expect(log).toBeGreaterThan(0);
    expect(checkpointed).toBe(log);
    checkpoint.finalize();
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
