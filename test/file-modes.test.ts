import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { createLicense, device, tempDir } from "./helpers";
import { runCli } from "./processes";
import { ReleaseTree } from "./release-tree";
import { startServe } from "./serve-process";
import { backupSqlite } from "../src/store/sqlite-backup";
import { openSqliteStore } from "../src/store/sqlite";
import { Admin } from "../src/domain/admin/operator";
import { Audit } from "../src/domain/audit";
import { systemClock } from "../src/domain/clock";
import { VARIANTS } from "../src/config/variants";

// Issue 13, item 6: "keyturn.sqlite, -wal, -shm (and backups) are created 0644 when --data exists
// with 0755. Create them 0600 whatever the umask and data directory mode (also the release
// signature cache and index snapshot files in the data dir)."

let umask: number;
beforeAll(() => {
  umask = process.umask(0o022);
});
afterAll(() => {
  process.umask(umask);
});

/** Every file in `dir` with its permission bits, e.g. { "keyturn.sqlite": "600" }. */
function modes(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, (statSync(join(dir, f)).mode & 0o777).toString(8)]));
}

const ownerOnly = (files: Record<string, string>) => Object.fromEntries(Object.keys(files).map((f) => [f, "600"]));

test("with umask 022 and a 0755 data directory, every file serve and backup create there is 0600", async () => {
  const tree = new ReleaseTree("gamma");
  tree.add({ version: "1.0.0" });
  const data = join(tree.dir, "data");
  mkdirSync(data);
  chmodSync(data, 0o755);
  const serve = await startServe("gamma", [], tree.dir);
  try {
    await serve.waitFor("release index built");
    // A write, so the WAL and its index exist while serve runs.
    const { code, stdout } = await runCli([
      "license",
      "create",
      "--variant",
      "gamma",
      "--data",
      data,
      "--licensee",
      "A",
      "--organization",
      "O",
      "--plan",
      "p",
      "--plan-title",
      "P",
      "--seats",
      "1",
      "--channels",
      "stable",
      "--json",
    ]);
    expect(code).toBe(0);
    const r = await fetch(`${serve.url}/api/v1/licenses/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key: JSON.parse(stdout).key, device: device("gamma") }),
    });
    expect(r.status).toBe(200);
    const backup = await runCli(["backup", "--variant", "gamma", "--data", data, "--to", join(data, "copy.sqlite")]);
    expect(backup.code).toBe(0);

    const running = modes(data);
    for (const f of ["keyturn.sqlite", "keyturn.sqlite-wal", "keyturn.sqlite-shm", "release-signatures.cache", "release-index.snapshot", "copy.sqlite"])
      expect(Object.keys(running)).toContain(f);
    expect(running).toEqual(ownerOnly(running));
    serve.proc.kill("SIGTERM");
    expect(await serve.proc.exited).toBe(0);
    const stopped = modes(data);
    expect(stopped).toEqual(ownerOnly(stopped));
  } finally {
    await serve.cleanup();
  }
});

test("records an earlier keyturn left readable to others are made owner-only when opened", async () => {
  const dir = tempDir();
  try {
    for (const f of ["keyturn.sqlite", "keyturn.sqlite-wal", "keyturn.sqlite-shm"]) closeSync(openSync(join(dir, f), "w", 0o644));
    const store = openSqliteStore(dir);
    const admin = new Admin(VARIANTS.gamma, store, systemClock, new Audit(store, systemClock));
    await createLicense({ admin } as Parameters<typeof createLicense>[0]);
    await store.close();
    const files = modes(dir);
    expect(files["keyturn.sqlite"]).toBe("600");
    expect(files).toEqual(ownerOnly(files));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("backupSqlite: the copy is 0600 and nothing else is left beside it", async () => {
  const dir = tempDir();
  try {
    const store = openSqliteStore(join(dir));
    await store.close();
    mkdirSync(join(dir, "out"), { mode: 0o755 });
    backupSqlite(dir, join(dir, "out", "b.sqlite"));
    expect(modes(join(dir, "out"))).toEqual({ "b.sqlite": "600" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
