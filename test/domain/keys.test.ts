import { afterEach, expect, test } from "bun:test";
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeProtectedHeader } from "jose";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles, loadKeyRing } from "../../src/domain/keys";
import { createLicense, device, tempDir, testSite, type TestSite } from "../helpers";

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

test("the newest license key (by year and month) signs; every key present verifies: rotation", async () => {
  const old = await testSite("alpha");
  cleanup.push(() => old.close());
  const { key } = await createLicense(old, { seats: 3 });
  const before = (await (await old.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).json()) as any;
  expect(decodeProtectedHeader(before.token).kid).toBe("alpha-license-2026-10");

  // add a newer key and restart on the same records and keys
  generateKeyFiles(join(old.dir, "keys"), "alpha-license-2027-04");
  const ring = await loadKeyRing(join(old.dir, "keys"), VARIANTS.alpha);
  expect(ring.signing!.kid).toBe("alpha-license-2027-04");
  expect([...ring.verify.keys()].sort()).toEqual(["alpha-license-2026-10", "alpha-license-2027-04"]);

  const { compose } = await import("../../src/compose");
  const { createApp } = await import("../../src/http/app");
  const restarted = await compose(old.composed.config, {
    clock: old.clock,
    store: old.composed.store,
    log: (await import("../../src/config/log")).silentLogger,
  });
  const app = createApp(restarted.services);
  const req = (path: string, init: RequestInit = {}) => app.handle(new Request(`http://localhost/api/v1${path}`, init));
  const after = (await (
    await req("/licenses/activate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ key, device: device("alpha") }) })
  ).json()) as any;
  expect(decodeProtectedHeader(after.token).kid).toBe("alpha-license-2027-04");
  for (const token of [before.token, after.token])
    expect((await req("/entitlements/current", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
});

test("a private key readable by others gets a warning; keys of other variants and junk are left alone", async () => {
  const dir = tempDir();
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  generateKeyFiles(dir, "gamma-license-2026-09");
  generateKeyFiles(dir, "beta-license-2026-10");
  chmodSync(join(dir, "gamma-license-2026-09.pem"), 0o644);
  writeFileSync(join(dir, "gamma-license-2026-08.pem"), "not a key");
  const ring = await loadKeyRing(dir, VARIANTS.gamma);
  expect(ring.signing!.kid).toBe("gamma-license-2026-09");
  expect([...ring.verify.keys()]).toEqual(["gamma-license-2026-09"]);
  expect(ring.warnings.some((w) => w.includes("gamma-license-2026-09.pem") && w.includes("is open to every user (mode 0644): make it 0600"))).toBe(true);
  expect(ring.warnings.some((w) => w.includes("gamma-license-2026-08.pem") && w.includes("skipped"))).toBe(true);
});

test("a release key never signs entitlement tokens", async () => {
  const dir = tempDir();
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  generateKeyFiles(dir, "alpha-release-2030-01");
  const ring = await loadKeyRing(dir, VARIANTS.alpha);
  expect(ring.signing).toBeNull();
});

test("without a license key bearer endpoints answer entitlement_invalid", async () => {
  const s: TestSite = await testSite("beta", { withKey: false });
  cleanup.push(() => s.close());
  const r = await s.request("GET", "/entitlements/current", { token: "a.b.c" });
  expect(r.status).toBe(401);
  expect(((await r.json()) as any).error).toBe("entitlement_invalid");
});
