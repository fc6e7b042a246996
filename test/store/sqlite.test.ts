import { rmSync } from "node:fs";
import { openSqliteStore } from "../../src/store/sqlite";
import { tempDir } from "../helpers";
import { adminStoreSuite } from "./store-admin.suite";
import { storeSuite } from "./store.suite";
import { meterTrialStoreSuite } from "./meters-trials.suite";

storeSuite("SQLite", {
  async fresh() {
    const dir = tempDir();
    return {
      open: async () => openSqliteStore(dir),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
});

adminStoreSuite("SQLite", {
  async fresh() {
    const dir = tempDir();
    return {
      open: async () => openSqliteStore(dir),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
});

meterTrialStoreSuite("SQLite", {
  async fresh() {
    const dir = tempDir();
    return {
      open: async () => openSqliteStore(dir),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
});
