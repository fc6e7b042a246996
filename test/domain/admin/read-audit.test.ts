import { afterEach, expect, test } from "bun:test";
import { CLI_CALLER } from "../../../src/domain/admin/deps";
import { searchLicenses } from "../../../src/domain/admin/licenses";
import { READ_AUDIT_WINDOW_MS } from "../../../src/domain/admin/read-audit";
import { createAdminToken } from "../../../src/domain/admin/tokens";
import { createLicense, testSite, type TestSite } from "../../helpers";

// Issue 21, item 11: docs/admin-api.md says every admin request is audited; successful reads (the
// bulk licence listing, the feed) were not, and refused admin requests named no actor.

let site: TestSite | null = null;
afterEach(async () => {
  await site?.close();
  site = null;
});

const lines = async (s: TestSite) => (await s.composed.store.listAudit({ limit: 1000 })).reverse();

test("successful admin reads are audited with the token as actor, once per token, action and licence within the window", async () => {
  site = await testSite("alpha");
  const { token: t, secret } = await createAdminToken(site.composed.services.admin, CLI_CALLER, {
    name: "support",
    scopes: ["licenses:read", "feed:read", "activations:read"],
  });
  const actor = `${t.id} (support)`;
  const a = await createLicense(site);
  const b = await createLicense(site);
  const before = new Set((await lines(site)).map((l) => l.ref));
  const get = async (path: string) => expect((await site!.request("GET", path, { token: secret })).status).toBe(200);

  await get("/admin/licenses");
  await get("/admin/licenses?query=Ada");
  await get(`/admin/licenses/${a.license.id}`);
  await get(`/admin/licenses/${b.license.id}`);
  await get(`/admin/licenses/${b.license.id}`);
  await get(`/admin/activations?license=${a.license.id}`);
  // (one clock time: the lines' order among themselves is not defined)
  const reads = (await lines(site)).filter((l) => !before.has(l.ref));
  const row = (action: string, licenseId: string | null) => JSON.stringify([action, licenseId, "ok", actor]);
  expect(reads.map((l) => JSON.stringify([l.action, l.licenseId, l.outcome, l.actor])).sort()).toEqual(
    [row("license-list", null), row("license-show", a.license.id), row("license-show", b.license.id), row("activation-list", a.license.id)].sort(),
  );
  expect(reads.every((l) => l.address === "203.0.113.7")).toBe(true);

  // A mirror polling the feed every 30 s for 20 minutes: one line per window, not 41
  const feedLines = async () => (await lines(site!)).filter((l) => l.action === "feed-read").length;
  for (let i = 0; i <= 40; i++) {
    await get("/admin/feed");
    site.clock.advance(30_000);
  }
  expect(await feedLines()).toBe(Math.ceil((41 * 30_000) / READ_AUDIT_WINDOW_MS));

  // the command line's reads are not audited (its operator holds the records)
  const count = (await lines(site)).length;
  await searchLicenses(site.composed.services.admin, CLI_CALLER, {});
  expect((await lines(site)).length).toBe(count);
});

test("a refused admin request names the token that asked once the token was good; a bad token names none", async () => {
  site = await testSite("alpha");
  const { token: t, secret } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "narrow", scopes: ["licenses:read"] });
  const refused = [
    await site.request("GET", "/admin/audit", { token: secret }), // insufficient_scope
    await site.request("GET", "/admin/licenses/lic_nothing", { token: secret }), // not_found
    await site.request("GET", "/admin/licenses?limit=9999", { token: secret }), // invalid_request
    await site.request("GET", "/admin/licenses", { token: "kta_" + "x".repeat(43) }), // admin_token_invalid
  ];
  expect(refused.map((r) => r.status)).toEqual([403, 404, 400, 401]);
  const refs = await Promise.all(refused.map(async (r) => ((await r.json()) as { ref: string }).ref));
  const byRef = new Map((await lines(site)).map((l) => [l.ref, l]));
  expect(refs.map((ref) => [byRef.get(ref)?.error, byRef.get(ref)?.actor ?? null])).toEqual([
    ["insufficient_scope", `${t.id} (narrow)`],
    ["not_found", `${t.id} (narrow)`],
    ["invalid_request", `${t.id} (narrow)`],
    ["admin_token_invalid", null],
  ]);
});

test("the mail list, which names customers' addresses, is audited as the other reads are", async () => {
  site = await testSite("alpha", { settings: { "smtp-url": "smtp://127.0.0.1:2525", "mail-from": "licences@example.com" } });
  const { token: t, secret } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "support", scopes: ["licenses:read"] });
  const a = await createLicense(site);
  expect((await site.request("GET", `/admin/mail?license=${a.license.id}`, { token: secret })).status).toBe(200);
  const read = (await lines(site)).filter((l) => l.action === "mail-list" && l.outcome === "ok");
  expect(read.map((l) => [l.licenseId, l.actor])).toEqual([[a.license.id, `${t.id} (support)`]]);
});
