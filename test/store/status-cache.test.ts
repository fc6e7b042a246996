import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { SQLITE_FILE, type SqliteStore } from "../../src/store/sqlite";
import { createLicense, device, testSite, type TestSite } from "../helpers";

// The SQLite store reuses an activation's status between writes; revocation must still apply at
// once, whoever writes it: this process, or another connection (an admin command's process).
const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});

async function activated() {
  const s = await testSite("alpha");
  sites.push(s);
  const { key, license } = await createLicense(s, { seats: 3 });
  const body = (await (await s.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).json()) as any;
  const current = async () => ((await (await s.request("GET", "/entitlements/current", { token: body.token })).json()) as any).error ?? "ok";
  expect(await current()).toBe("ok");
  expect(await current()).toBe("ok"); // the second read is served from the kept status
  return { s, license, activationId: body.entitlement.id as string, current };
}

test("a deactivation committed by another connection applies to the next request", async () => {
  const { s, activationId, current } = await activated();
  const other = new Database(join(s.dir, "data", SQLITE_FILE));
  other.run("UPDATE activations SET deactivated = 1 WHERE id = ?", [activationId]);
  other.close();
  expect(await current()).toBe("entitlement_revoked");
});

test("a license revoked by another connection applies to the next request", async () => {
  const { s, license, current } = await activated();
  const other = new Database(join(s.dir, "data", SQLITE_FILE));
  other.run("UPDATE licenses SET revoked = 1 WHERE id = ?", [license.id]);
  other.close();
  expect(await current()).toBe("license_revoked");
});

test("a write through the store's own connection applies to the next request", async () => {
  const { s, activationId, current } = await activated();
  (s.composed.store as SqliteStore).db.run("UPDATE activations SET deactivated = 1 WHERE id = ?", [activationId]);
  expect(await current()).toBe("entitlement_revoked");
});

test("an operator's deactivation in this process applies to the next request", async () => {
  const { s, activationId, current } = await activated();
  await s.admin.deactivate(activationId);
  expect(await current()).toBe("entitlement_revoked");
});

test("a revocation committed by another process applies to the next request", async () => {
  const { s, license, current } = await activated();
  const file = join(s.dir, "data", SQLITE_FILE);
  const script = `const { Database } = require("bun:sqlite"); const db = new Database(${JSON.stringify(file)}); db.exec("PRAGMA busy_timeout = 5000"); db.run("UPDATE licenses SET revoked = 1 WHERE id = ?", [${JSON.stringify(license.id)}])`;
  expect(Bun.spawnSync([process.execPath, "-e", script]).exitCode).toBe(0);
  expect(await current()).toBe("license_revoked");
});
