import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parsePlans } from "../../src/config/plans";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { isoTime } from "../../src/domain/clock";
import { KeyturnError } from "../../src/domain/errors";
import { planFields, renewalPatch, withPlan } from "../../src/domain/plans";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { tempDir, testSite, type TestSite } from "../helpers";
import { runCli, siteArgs, siteDirs } from "../processes";

// design.md "Licence models": "a create naming a plan takes its values, the caller's own fields win".
const DAY = 86_400_000;
const PLANS_TABLE = {
  pro: {
    title: "Pro",
    seats: 3,
    channels: ["stable", "preview"],
    features: ["export-pdf", "max-projects=50"],
    seatLease: "30d",
    tokenTtl: "14d",
    updatesFor: "365d",
  },
  subscription: { seats: 1, channels: ["stable"], expiresAfter: "30d", updatesFor: "30d" },
  bare: { features: ["export-pdf"] },
};
const plans = parsePlans(PLANS_TABLE, ["stable", "preview"]);
const NOW = Date.parse("2026-11-21T12:00:00Z");

describe("withPlan, planFields, renewalPatch", () => {
  test("the plan fills in what the caller left out; the caller's own fields win, an explicit null included", () => {
    expect(planFields(plans.get("pro")!, NOW)).toEqual({
      planTitle: "Pro",
      seats: 3,
      channels: ["stable", "preview"],
      features: ["export-pdf", "max-projects=50"],
      seatLease: "30d",
      tokenTtl: 14 * 86_400,
      updatesUntil: isoTime(NOW + 365 * DAY),
    });
    const merged = withPlan(plans, { licensee: "Ada", plan: "pro", seats: 10, features: [], updatesUntil: undefined }, NOW);
    expect(merged).toMatchObject({ seats: 10, features: [], channels: ["stable", "preview"], updatesUntil: isoTime(NOW + 365 * DAY), planTitle: "Pro" });
    expect(withPlan(plans, { plan: "subscription", expires: null }, NOW).expires).toBeNull();
    expect(withPlan(plans, { plan: "subscription" }, NOW).expires).toBe(isoTime(NOW + 30 * DAY));
  });

  test("seats and channels are still required when no plan gives them, in the schema's words", () => {
    const refusal = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as KeyturnError).message;
      }
      return "accepted";
    };
    expect(refusal(() => withPlan(plans, { plan: "unknown-label", channels: ["stable"] }, NOW))).toBe("seats is required.");
    expect(refusal(() => withPlan(plans, { plan: "bare", seats: 1 }, NOW))).toBe("channels is required: the plan bare gives none.");
    expect(refusal(() => withPlan(undefined, { plan: "pro", seats: 1, channels: ["stable"] }, NOW))).toBe("accepted");
  });

  test("a renewal extends the window from its end, or from now once it has ended; an expiry likewise; never-expiring stays so", () => {
    const plan = plans.get("subscription")!;
    expect(renewalPatch({ updatesUntil: NOW + 5 * DAY, expires: NOW + 5 * DAY }, plan, NOW)).toEqual({ updatesUntil: NOW + 35 * DAY, expires: NOW + 35 * DAY });
    expect(renewalPatch({ updatesUntil: NOW - 90 * DAY, expires: null }, plan, NOW)).toEqual({ updatesUntil: NOW + 30 * DAY });
    expect(renewalPatch({ expires: null }, plan, NOW)).toEqual({ updatesUntil: NOW + 30 * DAY });
    expect(renewalPatch({ updatesUntil: null, expires: null }, plans.get("bare")!, NOW)).toEqual({});
  });
});

/** The admin API on a site with the plans above (SQLite, or PostgreSQL in a schema of its own). */
function adminApi(label: string, open: () => Promise<{ site: TestSite; close: () => Promise<void> }>) {
  describe(`plans through the admin API (${label})`, () => {
    let s: TestSite;
    let close: () => Promise<void>;
    let tok: string;
    beforeAll(async () => {
      ({ site: s, close } = await open());
      tok = (await createAdminToken(s.composed.services.admin, CLI_CALLER, { name: "plans", scopes: ["licenses:read", "licenses:write"] })).secret;
    });
    afterAll(() => close());
    const send = async (method: string, path: string, body?: unknown) => {
      const res = await s.request(method, path, { token: tok, body });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };

    test("POST /admin/licenses naming a plan takes its values; the caller's seats win; the records keep them", async () => {
      const created = await send("POST", "/admin/licenses", { licensee: "Ada", plan: "pro", seats: 5 });
      expect(created.status).toBe(201);
      const now = s.clock();
      expect(created.body.license).toMatchObject({
        plan: "pro",
        planTitle: "Pro",
        seats: 5,
        channels: ["stable", "preview"],
        features: ["export-pdf", "max-projects=50"],
        seatLease: "30d",
        tokenTtl: 14 * 86_400,
        updatesUntil: isoTime(now + 365 * DAY),
        expires: null,
      });
      const stored = (await s.composed.store.getLicense(created.body.license.id))!;
      expect(stored.updatesUntil).toBe(Math.floor((now + 365 * DAY) / 1000) * 1000);
      expect(stored.features).toEqual(["export-pdf", "max-projects=50"]);
      const shown = await send("GET", `/admin/licenses/${created.body.license.id}`);
      expect(shown.body.license).toMatchObject({ updatesUntil: isoTime(now + 365 * DAY), features: ["export-pdf", "max-projects=50"] });
    });

    test("a plan without seats or channels: the caller must give them; a label that is no plan works as before", async () => {
      const missing = await send("POST", "/admin/licenses", { licensee: "Ada", plan: "bare", seats: 1 });
      expect(missing).toMatchObject({ status: 400, body: { error: "invalid_request", message: "channels is required: the plan bare gives none." } });
      const label = await send("POST", "/admin/licenses", { licensee: "Ada", plan: "gold", seats: 1, channels: ["stable"] });
      expect(label.status).toBe(201);
      expect(label.body.license).toMatchObject({ plan: "gold", planTitle: "gold", updatesUntil: null, features: [] });
      const stored = (await s.composed.store.getLicense(label.body.license.id))!;
      expect("updatesUntil" in stored || "features" in stored).toBe(false);
      expect((await send("POST", "/admin/licenses", { licensee: "Ada", plan: "gold", channels: ["stable"] })).body.message).toBe("seats is required.");
    });

    test("PATCH sets and clears updatesUntil and features (a past window is allowed: a perpetual licence sold long ago)", async () => {
      const { body } = await send("POST", "/admin/licenses", { licensee: "Bo", plan: "subscription" });
      const id = body.license.id;
      expect(body.license.expires).toBe(isoTime(s.clock() + 30 * DAY));
      const set = await send("PATCH", `/admin/licenses/${id}`, { updatesUntil: "2020-01-01T00:00:00Z", features: ["seats-pack=10", "ai"] });
      expect(set.status).toBe(200);
      expect(set.body.changed).toEqual(["updatesUntil", "features"]);
      expect(set.body.license).toMatchObject({ updatesUntil: "2020-01-01T00:00:00+00:00", features: ["seats-pack=10", "ai"] });
      const dup = await send("PATCH", `/admin/licenses/${id}`, { features: ["ai", "ai=2"] });
      expect(dup).toMatchObject({ status: 400, body: { error: "invalid_request", message: 'features names the feature "ai" twice.' } });
      const bad = await send("PATCH", `/admin/licenses/${id}`, { features: ["AI"] });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toStartWith("features.0 must be a feature");
      const cleared = await send("PATCH", `/admin/licenses/${id}`, { updatesUntil: null, features: [] });
      expect(cleared.body.changed).toEqual(["updatesUntil", "features"]);
      expect(cleared.body.license).toMatchObject({ updatesUntil: null, features: [] });
      const stored = (await s.composed.store.getLicense(id))!;
      expect(stored.updatesUntil ?? null).toBeNull();
      expect(stored.features ?? []).toEqual([]);
    });
  });
}

adminApi("SQLite", async () => {
  const s = await testSite("alpha", { tables: { plans: PLANS_TABLE } });
  return { site: s, close: () => s.close() };
});
if (PG_URL)
  adminApi("PostgreSQL", async () => {
    const schema = await freshSchema();
    const s = await testSite("alpha", { settings: { database: schema.url }, tables: { plans: PLANS_TABLE } });
    return {
      site: s,
      close: async () => {
        await s.close();
        await schema.drop();
      },
    };
  });
else announceSkip("test/domain/plans.test.ts (PostgreSQL)", "KEYTURN_TEST_POSTGRES_URL");

describe("keyturn license create --plan", () => {
  const dir = tempDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const dirs = siteDirs(join(dir, "site"), "alpha");
  const config = join(dir, "keyturn.toml");
  writeFileSync(config, '[plans.pro]\ntitle = "Pro"\nseats = 3\nchannels = ["stable"]\nfeatures = ["export-pdf"]\nupdatesFor = "365d"\n');
  const cli = (...args: string[]) => runCli(["license", "create", ...siteArgs("alpha", dirs), "--config", config, "--json", ...args]);

  test("takes the plan's values; the flags given win; --seats and --channels are needed only without a plan giving them", async () => {
    const before = Date.now();
    const r = await cli("--licensee", "Ada", "--plan", "pro");
    expect(r.code).toBe(0);
    const lic = JSON.parse(r.stdout);
    expect(lic).toMatchObject({ plan: "pro", planTitle: "Pro", seats: 3, channels: ["stable"], features: ["export-pdf"] });
    expect(Date.parse(lic.updatesUntil) - before).toBeGreaterThanOrEqual(365 * DAY - 1000);
    expect(Date.parse(lic.updatesUntil) - before).toBeLessThan(365 * DAY + 60_000);

    const own = JSON.parse(
      (await cli("--licensee", "Bo", "--plan", "pro", "--seats", "7", "--features", "none", "--updates-until", "2027-06-30T00:00:00Z")).stdout,
    );
    expect(own).toMatchObject({ seats: 7, features: [], updatesUntil: "2027-06-30T00:00:00+00:00" });

    const listed = await runCli(["license", "plans", ...siteArgs("alpha", dirs), "--config", config]);
    expect(listed.stdout).toBe('pro "Pro": seats 3, channels stable, features export-pdf, updates for 365d\n');
    const renewed = await runCli(["license", "renew", lic.id, ...siteArgs("alpha", dirs), "--config", config, "--json"]);
    expect(renewed.code).toBe(0);
    expect(Date.parse(JSON.parse(renewed.stdout).updatesUntil) - Date.parse(lic.updatesUntil)).toBe(365 * DAY);

    const unplanned = await cli("--licensee", "Cy", "--plan", "gold", "--channels", "stable");
    expect(unplanned.code).toBe(2);
    expect(unplanned.stderr.split("\n")[0]).toBe('keyturn: --seats is required (no plan "gold" is configured: pro)');
  }, 30_000);
});

describe("renewLicense (what a payment bridge's renewal calls)", () => {
  test("extends the window by the plan's updatesFor from its end; audited license-renew; license.updated names the fields", async () => {
    const { renewLicense } = await import("../../src/domain/admin/renewal");
    const s = await testSite("alpha", { tables: { plans: PLANS_TABLE } });
    try {
      const d = s.composed.services.admin;
      // Webhook-only events are written only while an endpoint subscribes (store/types.ts NewEvent).
      await s.composed.store.createWebhookEndpoint({
        id: "whe_created",
        url: "https://hooks.example/k",
        types: ["license.created"],
        secret: "whsec_x",
        enabled: true,
        disabledReason: null,
        created: s.clock(),
      });
      const created = await s.request("POST", "/admin/licenses", {
        token: (await createAdminToken(d, CLI_CALLER, { name: "r", scopes: ["admin"] })).secret,
        body: { licensee: "Ada", plan: "subscription" },
      });
      const id = ((await created.json()) as any).license.id as string;
      const start = s.clock();
      s.clock.advance(20 * DAY);
      const renewed = await renewLicense(d, CLI_CALLER, id);
      expect(renewed.changed).toEqual(["updatesUntil", "expires"]);
      expect(renewed.license.updatesUntil).toBe(isoTime(start + 60 * DAY));
      expect(renewed.license.expires).toBe(isoTime(start + 60 * DAY));
      const lines = await s.composed.store.listAudit({ licenseId: id, limit: 10 });
      expect(lines.filter((l) => l.action === "license-renew").map((l) => l.actor)).toEqual(["cli"]);
      // A label that is no configured plan has nothing to extend by.
      await expect(renewLicense(d, CLI_CALLER, id, "gold")).rejects.toThrow('No plan "gold" is configured');
      // The events carry the terms: license.created the licence's, license.updated the renewal's fields.
      const events = await s.composed.store.listEvents({ after: 0, limit: 100, types: ["license.created", "license.updated"] });
      const data = events.map((e) => [e.type, JSON.parse(e.data)] as const);
      expect(data[0]![0]).toBe("license.created");
      expect(data[0]![1].license).toMatchObject({ id, updatesUntil: isoTime(start + 30 * DAY), features: [] });
      expect(data.at(-1)![0]).toBe("license.updated");
      expect(data.at(-1)![1]).toMatchObject({ changed: ["updatesUntil", "expires"], license: { updatesUntil: isoTime(start + 60 * DAY) } });
    } finally {
      await s.close();
    }
  });
});
