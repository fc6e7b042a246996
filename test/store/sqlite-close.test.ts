import { expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { openSqliteStore, SQLITE_FILE } from "../../src/store/sqlite";
import { tempDir } from "../helpers";

test("closing the SQLite store really closes the file: the WAL is checkpointed away and nothing answers", async () => {
  const dir = tempDir();
  const store = openSqliteStore(dir);
  await store.ping();
  expect(existsSync(join(dir, `${SQLITE_FILE}-wal`))).toBe(true);
  await store.close();
  expect(existsSync(join(dir, `${SQLITE_FILE}-wal`))).toBe(false);
  await expect(store.ping()).rejects.toThrow();
  rmSync(dir, { recursive: true, force: true });
});
