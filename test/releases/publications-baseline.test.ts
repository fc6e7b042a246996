import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { newEvent } from "../../src/domain/events";
import { openSqliteStore } from "../../src/store/sqlite";
import { tempDir } from "../helpers";

// Issue 21, item 13e: the first start after an upgrade announced every release already in the tree
// as release.published. The first recording is a baseline; records that already knew releases when
// migration 7 came took theirs then.

const T0 = Date.parse("2026-11-21T12:00:00Z");
const a = { lane: "alpha/stable/win-x64", version: "1.0.0" };
const b = { lane: "alpha/stable/win-x64", version: "1.1.0" };
const published = (r: { lane: string; version: string }) => newEvent("release.published", { release: r }, T0);
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

test("records that knew releases before migration 7 keep announcing only new ones; records that knew none take the next scan as baseline", async () => {
  const dir = tempDir();
  dirs.push(dir);
  // Records as migration 6 left them after a scan: known_releases holds 1.0.0, no baseline table.
  let store = openSqliteStore(dir);
  store.db.exec("INSERT INTO known_releases (lane, version, first_seen) VALUES ('alpha/stable/win-x64', '1.0.0', 1)");
  store.db.exec("DROP TABLE known_releases_baseline; DROP TABLE record_key_check; DELETE FROM schema_migrations WHERE version = 7");
  await store.close();
  store = openSqliteStore(dir);
  try {
    expect(await store.recordKnownReleases([a, b], T0, published)).toEqual([b]);
    expect((await store.listEvents({ after: 0, limit: 10 })).map((e) => e.type)).toEqual(["release.published"]);
  } finally {
    await store.close();
  }

  // Records upgraded from before release events: known_releases empty at the upgrade
  const fresh = tempDir();
  dirs.push(fresh);
  store = openSqliteStore(fresh);
  store.db.exec("DROP TABLE known_releases_baseline; DROP TABLE record_key_check; DELETE FROM schema_migrations WHERE version = 7");
  await store.close();
  store = openSqliteStore(fresh);
  try {
    expect(await store.recordKnownReleases([a, b], T0, published)).toEqual([]);
    expect(await store.listEvents({ after: 0, limit: 10 })).toEqual([]);
    expect(await store.recordKnownReleases([a, b, { ...b, version: "2.0.0" }], T0, published)).toEqual([{ ...b, version: "2.0.0" }]);
  } finally {
    await store.close();
  }
});
