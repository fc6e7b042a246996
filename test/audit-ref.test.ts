/**
 * design.md, Audit: "every refusal writes one audit line (time, address, action, activation,
 * license, outcome, error); the error body's `ref` names it." Every refusal the licensing
 * endpoints can give is provoked here and its `ref` looked up in the records.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createAdminToken } from "../src/domain/admin/tokens";
import { device, createLicense, testClock, testSite, type TestSite } from "./helpers";

let site: TestSite;
const clock = testClock();
beforeAll(async () => {
  site = await testSite("alpha", { clock });
});
afterAll(() => site.close());

const DAY = 86_400_000;

async function activate(key: string, dev = device("alpha")) {
  const r = await site.request("POST", "/licenses/activate", { body: { key, device: dev } });
  expect(r.status).toBe(200);
  return { ...((await r.json()) as { token: string; entitlement: { id: string } }), dev };
}

interface Refusal {
  readonly name: string;
  readonly error: string;
  readonly action: string;
  send(): Promise<Response>;
  /** The license and activation the audit line must name, when the request got that far. */
  ids?(): { licenseId?: string; activationId?: string };
}

const post = (path: string, o: Parameters<TestSite["request"]>[2]) => () => site.request("POST", path, o);

let licenseKey = "";
let licenseId = "";
let full: { key: string; id: string };
let revoked: { key: string; id: string };
let expired: { key: string; id: string };
let live: { token: string; entitlement: { id: string }; dev: ReturnType<typeof device> };
let gone: { token: string; entitlement: { id: string } };
let oldToken = "";

beforeAll(async () => {
  const l = await createLicense(site, { seats: 5 });
  licenseKey = l.key;
  licenseId = l.license.id;
  live = await activate(licenseKey);
  gone = await activate(licenseKey);
  expect((await site.request("POST", "/entitlements/deactivate", { token: gone.token })).status).toBe(200);

  const f = await createLicense(site, { seats: 1 });
  full = { key: f.key, id: f.license.id };
  await activate(full.key);
  const r = await createLicense(site);
  revoked = { key: r.key, id: r.license.id };
  await site.admin.revokeLicense(r.license.id);
  const e = await createLicense(site, { expires: clock() + DAY });
  expired = { key: e.key, id: e.license.id };

  // A token that outlives its time (token-ttl 7d): issued now, checked 8 days later.
  oldToken = (await activate(licenseKey)).token;
});

const refusals: Refusal[] = [
  {
    name: "wrong media type",
    error: "unsupported_media_type",
    action: "activate",
    send: post("/licenses/activate", { body: "key=x", headers: { "content-type": "text/plain" } }),
  },
  { name: "malformed JSON", error: "invalid_request", action: "activate", send: post("/licenses/activate", { body: "{not json" }) },
  {
    name: "missing device",
    error: "invalid_request",
    action: "activate",
    send: () => site.request("POST", "/licenses/activate", { body: { key: licenseKey } }),
  },
  {
    name: "body over 16 KiB",
    error: "payload_too_large",
    action: "activate",
    send: post("/licenses/activate", { body: JSON.stringify({ key: "x".repeat(17 * 1024) }) }),
  },
  {
    name: "unknown key",
    error: "license_unknown",
    action: "activate",
    send: () => site.request("POST", "/licenses/activate", { body: { key: "AL-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", device: device("alpha") } }),
  },
  {
    name: "every seat taken",
    error: "seat_limit",
    action: "activate",
    send: () => site.request("POST", "/licenses/activate", { body: { key: full.key, device: device("alpha") } }),
    ids: () => ({ licenseId: full.id }),
  },
  {
    name: "revoked license",
    error: "license_revoked",
    action: "activate",
    send: () => site.request("POST", "/licenses/activate", { body: { key: revoked.key, device: device("alpha") } }),
    ids: () => ({ licenseId: revoked.id }),
  },
  { name: "no token on current", error: "entitlement_invalid", action: "current", send: () => site.request("GET", "/entitlements/current") },
  {
    name: "garbage token on refresh",
    error: "entitlement_invalid",
    action: "refresh",
    send: post("/entitlements/refresh", { token: "not.a.token", body: { device: device("alpha") } }),
  },
  {
    name: "refresh from another device",
    error: "device_mismatch",
    action: "refresh",
    send: () => site.request("POST", "/entitlements/refresh", { token: live.token, body: { device: device("alpha") } }),
    ids: () => ({ licenseId, activationId: live.entitlement.id }),
  },
  {
    name: "refresh with a bad body",
    error: "invalid_request",
    action: "refresh",
    send: () => site.request("POST", "/entitlements/refresh", { token: live.token, body: { device: { ...live.dev, platform: "os2" } } }),
  },
  {
    name: "deactivated installation",
    error: "entitlement_revoked",
    action: "current",
    send: () => site.request("GET", "/entitlements/current", { token: gone.token }),
    ids: () => ({ licenseId, activationId: gone.entitlement.id }),
  },
  {
    name: "second deactivation",
    error: "entitlement_revoked",
    action: "deactivate",
    send: () => site.request("POST", "/entitlements/deactivate", { token: gone.token }),
    ids: () => ({ licenseId, activationId: gone.entitlement.id }),
  },
  { name: "unknown path", error: "not_found", action: "request", send: () => site.request("GET", "/licenses/nothing-here") },
  { name: "wrong method", error: "method_not_allowed", action: "activate", send: () => site.request("GET", "/licenses/activate") },
];

describe("every refusal of the licensing endpoints names its audit line", () => {
  for (const r of refusals)
    test(r.name, async () => {
      const res = await r.send();
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({ ok: false, error: r.error });
      expect(body.ref).toMatch(/^ref_[0-9a-z]{20}$/);
      const line = (await site.composed.store.listAudit({ limit: 100_000 })).find((a) => a.ref === body.ref);
      expect(line).toMatchObject({ outcome: "refused", error: r.error, action: r.action, address: "203.0.113.7", time: clock() });
      const ids = r.ids?.() ?? {};
      if (ids.licenseId) expect(line!.licenseId).toBe(ids.licenseId);
      if (ids.activationId) expect(line!.activationId).toBe(ids.activationId);
    });

  test("an expired license and an expired token, after time has passed", async () => {
    clock.advance(8 * DAY);
    for (const [res, error, action, lic] of [
      [await site.request("POST", "/licenses/activate", { body: { key: expired.key, device: device("alpha") } }), "license_expired", "activate", expired.id],
      [await site.request("GET", "/entitlements/current", { token: oldToken }), "entitlement_expired", "current", null],
    ] as const) {
      const body = (await res.json()) as { error: string; ref: string };
      expect(body.error).toBe(error);
      const line = (await site.composed.store.listAudit({ error, limit: 100_000 })).find((a) => a.ref === body.ref);
      expect(line).toMatchObject({ outcome: "refused", action, time: clock() });
      if (lic) expect(line!.licenseId).toBe(lic);
    }
  });
});

describe("a ref leads to its audit line (README: quote the ref, find the line)", () => {
  test("GET /admin/audit?ref= answers that one line; keyturn audit --ref prints it", async () => {
    const refused = (await (
      await site.request("POST", "/licenses/activate", { body: { key: "AL-00000-00000-00000-00000-00000", device: device("alpha") } })
    ).json()) as { ref: string };
    const { secret } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "support", scopes: ["audit:read"] });
    const r = await site.request("GET", `/admin/audit?ref=${refused.ref}`, { token: secret });
    expect(r.status).toBe(200);
    const { lines } = (await r.json()) as { lines: { ref: string; error: string }[] };
    expect(lines).toEqual([expect.objectContaining({ ref: refused.ref, error: "license_unknown" })]);
    expect(((await (await site.request("GET", "/admin/audit?ref=ref_none", { token: secret })).json()) as { lines: unknown[] }).lines).toEqual([]);

    const cli = Bun.spawnSync(
      [
        process.execPath,
        join(import.meta.dir, "..", "src", "main.ts"),
        "audit",
        "--ref",
        refused.ref,
        "--variant",
        "alpha",
        "--data",
        join(site.dir, "data"),
        "--json",
      ],
      {
        env: { PATH: process.env.PATH ?? "" },
      },
    );
    expect(cli.exitCode).toBe(0);
    expect((JSON.parse(cli.stdout.toString()) as { audit: { ref: string }[] }).audit.map((l) => l.ref)).toEqual([refused.ref]);
  });
});
