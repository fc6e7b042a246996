import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { Admin } from "../../src/domain/admin/operator";
import { Audit } from "../../src/domain/audit";
import { systemClock } from "../../src/domain/clock";
import { openSqliteStore } from "../../src/store/sqlite";
import { device, tempDir } from "../helpers";
import { runCli, siteArgs, siteDirs, startServe } from "../processes";

const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function createLicenses(data: string, n: number, seats: number) {
  const store = openSqliteStore(data);
  const admin = new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock));
  const made = [];
  for (let i = 0; i < n; i++)
    made.push(await admin.createLicense({ licensee: `L${i}`, organization: "O", plan: "p", planTitle: "P", seats, channels: ["stable"], expires: null }));
  await store.close();
  return made;
}

test("backup copies the records while serve is activating; the copy is whole and holds the licenses", async () => {
  const dirs = siteDirs(join(root, "site"), "alpha");
  const licenses = await createLicenses(dirs.data, 3, 1000);
  const serve = await startServe(siteArgs("alpha", dirs));
  let running = true;
  let answered = 0;
  const load = Array.from({ length: 4 }, async (_, w) => {
    while (running) {
      const r = await fetch(`${serve.url}/api/v1/licenses/activate`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key: licenses[w % 3]!.key, device: device("alpha") }),
      });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
      answered++;
    }
  });
  try {
    while (answered < 30) await Bun.sleep(10);
    const file = join(root, "copy.sqlite");
    const before = answered;
    const r = await runCli(["backup", "--to", file, ...siteArgs("alpha", dirs)]);
    const after = answered;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(after).toBeGreaterThan(before); // activations went on while the copy was taken

    const copy = new Database(file, { readonly: true });
    expect(copy.query("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
    const ids = (copy.query("SELECT id FROM licenses ORDER BY id").all() as { id: string }[]).map((l) => l.id);
    expect(ids).toEqual(licenses.map((l) => l.license.id).sort());
    const activations = (copy.query("SELECT count(*) AS n FROM activations").get() as { n: number }).n;
    expect(activations).toBeGreaterThanOrEqual(before);
    expect(copy.query("PRAGMA foreign_key_check").all()).toEqual([]);
    expect(r.stdout).toContain(`backed up to ${file}: 3 licenses, ${activations} activations`);
    // The copy is other records for a mirror: restored, it answers under a feed epoch of its own.
    const live = new Database(join(dirs.data, "keyturn.sqlite"), { readonly: true });
    const epochOf = (db: Database) => (db.query("SELECT epoch FROM feed_epoch").get() as { epoch: string }).epoch;
    expect(epochOf(copy)).toMatch(/^[0-9a-f]{24}$/);
    expect(epochOf(copy)).not.toBe(epochOf(live));
    live.close();
    copy.close();
  } finally {
    running = false;
    await Promise.all(load);
    expect(await serve.stop()).toBe(0);
  }
}, 30_000);

test("backup refuses to overwrite a file, and says when there are no records", async () => {
  const dirs = siteDirs(join(root, "site2"), "alpha");
  await createLicenses(dirs.data, 1, 1);
  const file = join(root, "taken.sqlite");
  writeFileSync(file, "precious");
  const r = await runCli(["backup", "--to", file, ...siteArgs("alpha", dirs)]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("already exists; refusing to overwrite it");
  expect(readFileSync(file, "utf8")).toBe("precious");

  const empty = siteDirs(join(root, "site3"), "alpha");
  const none = await runCli(["backup", "--to", join(root, "none.sqlite"), ...siteArgs("alpha", empty)]);
  expect(none.code).toBe(1);
  expect(none.stderr).toContain("no records at");

  const usage = await runCli(["backup", ...siteArgs("alpha", dirs)]);
  expect(usage.code).toBe(2);
  expect(usage.stderr).toContain("usage: keyturn backup --to FILE");
});
