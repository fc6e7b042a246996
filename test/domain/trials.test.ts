/**
 * Trials without a key (design.md "Licence models": `POST /api/v1/trials/start {device}`, off unless
 * configured, one trial licence per device hash made from the trial plan, answered like activate,
 * a second start answers the same trial, activating a bought key on that device ends the trial's
 * seat and counts a conversion), through the same Elysia instance production uses.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { toConfig } from "../../src/config/config";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { isoTime } from "../../src/domain/clock";
import { addWebhookEndpoint } from "../../src/domain/webhooks/endpoints";
import { createLicense, device, testClock, testSite, type TestSite } from "../helpers";

const DAY = 86_400_000;
const PLANS = { plans: { eval: { title: "Pro (trial)", channels: ["stable", "preview"], features: ["export-pdf"], seats: 1 } } };

interface Answer {
  token: string;
  entitlement: { id: string; kind: string; plan: string; planTitle: string; channels: string[]; licenseExpires: string | null; seats: { total: number } };
}

let site: TestSite;
let adminToken: string;
const clock = testClock();

beforeAll(async () => {
  site = await testSite("alpha", { clock, tables: PLANS, settings: { "trial-plan": "eval", "trial-length": "14d" } });
  adminToken = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "trials", scopes: ["admin"] })).secret;
  await addWebhookEndpoint(site.composed.services.admin, CLI_CALLER, { url: "https://hooks.example/trials", events: ["trial.started", "trial.converted"] });
});
afterAll(() => site.close());

const start = (dev: unknown) => site.request("POST", "/trials/start", { body: { device: dev } });
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { lic: string; kind: string; sub: string };

describe("POST /trials/start", () => {
  test("gives a device a trial of the trial plan, answered like an activation (kind license), ending after the trial's length", async () => {
    const dev = device("alpha");
    const res = await start(dev);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as Answer & { ok: boolean };
    expect(body.ok).toBe(true);
    expect(body.entitlement).toMatchObject({ kind: "license", plan: "eval", planTitle: "Pro (trial)", channels: ["stable", "preview"] });
    expect(body.entitlement.licenseExpires).toBe(isoTime(clock() + 14 * DAY));
    expect(claimsOf(body.token).kind).toBe("license");
    // The token is a spec token: the bearer endpoints take it.
    expect((await site.request("GET", "/entitlements/current", { token: body.token })).status).toBe(200);
  });

  test("a second start for the same device answers the same trial, never a new one, even when the starts race", async () => {
    const dev = device("alpha");
    const first = (await (await start(dev)).json()) as Answer;
    const again = (await (await start({ ...dev, name: "Renamed PC" })).json()) as Answer;
    expect(claimsOf(again.token).lic).toBe(claimsOf(first.token).lic);
    expect(again.entitlement.id).toBe(first.entitlement.id);
    expect(again.entitlement.licenseExpires).toBe(first.entitlement.licenseExpires);
    // Later, still the same trial and the same end: a restart gives no fresh two weeks.
    clock.advance(3 * DAY);
    const later = (await (await start(dev)).json()) as Answer;
    expect(claimsOf(later.token).lic).toBe(claimsOf(first.token).lic);
    expect(later.entitlement.licenseExpires).toBe(first.entitlement.licenseExpires);

    const racing = device("alpha");
    const answers = await Promise.all(Array.from({ length: 12 }, () => start(racing)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const licences = new Set(await Promise.all(answers.map(async (a) => claimsOf(((await a.json()) as Answer).token).lic)));
    expect(licences.size).toBe(1);
    const other = (await (await start(device("alpha"))).json()) as Answer;
    expect(licences.has(claimsOf(other.token).lic)).toBe(false);
  });

  test("a trial that ran out is refused license_expired, and starting again does not renew it", async () => {
    const dev = device("alpha");
    expect((await start(dev)).status).toBe(200);
    clock.advance(15 * DAY);
    const res = await start(dev);
    expect(res.status).toBe(403);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe("license_expired");
    expect(body.message).toContain("trial");
  });

  test("activating a bought key on the device ends the trial's seat and counts a conversion", async () => {
    const dev = device("alpha");
    const trial = (await (await start(dev)).json()) as Answer;
    const trialLicence = claimsOf(trial.token).lic;
    const before = (await (await site.request("GET", "/admin/trials", { token: adminToken })).json()) as { counts: { started: number; converted: number } };

    const { key, license: bought } = await createLicense(site);
    const activated = await site.request("POST", "/licenses/activate", { body: { key, device: dev } });
    expect(activated.status).toBe(200);

    // The trial's seat is gone: its token is refused at once, and the trial cannot be started again.
    const current = await site.request("GET", "/entitlements/current", { token: trial.token });
    expect(current.status).toBe(401);
    expect(((await current.json()) as { error: string }).error).toBe("entitlement_revoked");
    const restarted = await start(dev);
    expect(restarted.status).toBe(403);
    expect(((await restarted.json()) as { message: string }).message).toContain("when a licence was activated on it");

    const after = (await (await site.request("GET", "/admin/trials", { token: adminToken })).json()) as {
      counts: { started: number; converted: number };
      trials: Array<{ license: string; converted: string | null; convertedTo: string | null }>;
    };
    expect(after.counts).toEqual({ started: before.counts.started, converted: before.counts.converted + 1 });
    expect(after.trials.find((t) => t.license === trialLicence)).toMatchObject({ convertedTo: bought.id, converted: isoTime(clock()) });
    const shown = (await (await site.request("GET", `/admin/licenses/${trialLicence}`, { token: adminToken })).json()) as {
      license: { expires: string; metadata: Record<string, string> };
      activations: Array<{ deactivated: string | null }>;
      trial: { convertedTo: string };
    };
    expect(shown.trial.convertedTo).toBe(bought.id);
    expect(shown.license.expires).toBe(isoTime(clock()));
    expect(shown.activations.every((a) => a.deactivated !== null)).toBe(true);
    const stats = (await (await site.request("GET", "/admin/stats", { token: adminToken })).json()) as { trials?: { converted: number } };
    expect(stats.trials?.converted).toBe(after.counts.converted);

    const converted = await site.composed.store.listEvents({ after: 0, limit: 100, types: ["trial.converted"] });
    expect(converted.map((e) => JSON.parse(e.data).license.id)).toContain(bought.id);
    // Activating the bought key again on the device converts nothing more.
    expect((await site.request("POST", "/licenses/activate", { body: { key, device: dev } })).status).toBe(200);
    const again = (await (await site.request("GET", "/admin/trials", { token: adminToken })).json()) as { counts: { converted: number } };
    expect(again.counts.converted).toBe(after.counts.converted);
  });

  test("the trial licence is in the admin API's licences, its audit line names it, and the event was written", async () => {
    const trial = (await (await start(device("alpha"))).json()) as Answer;
    const lic = claimsOf(trial.token).lic;
    const shown = (await (await site.request("GET", `/admin/licenses/${lic}`, { token: adminToken })).json()) as {
      license: { licensee: string; metadata: Record<string, string>; seats: number };
      trial: { started: string; ends: string };
    };
    expect(shown.license.licensee).toBe("Trial on Office PC");
    expect(shown.license.metadata).toEqual({ trial: "true" });
    expect(shown.trial.ends).toBe(trial.entitlement.licenseExpires!);
    const lines = await site.composed.store.listAudit({ licenseId: lic });
    expect(
      lines
        .map((l) => l.action)
        .filter((a) => a !== "license-show")
        .sort(),
    ).toEqual(["activate", "trial-start"]);
    const started = await site.composed.store.listEvents({ after: 0, limit: 100, types: ["trial.started"] });
    expect(started.map((e) => JSON.parse(e.data).license.id)).toContain(lic);
  });
});

describe("a trial with meters (--trial-meters)", () => {
  test("every trial licence gets the meters; the trial's token spends from them", async () => {
    const metered = await testSite("alpha", { tables: PLANS, settings: { "trial-plan": "eval", "trial-meters": "exports=3,ai=10/1d" } });
    try {
      const trial = (await (await metered.request("POST", "/trials/start", { body: { device: device("alpha") } })).json()) as Answer;
      const spend = (amount: number) =>
        metered.request("POST", "/entitlements/usage", { token: trial.token, body: { meter: "exports", amount, idempotencyKey: crypto.randomUUID() } });
      expect(await (await spend(2)).json()).toEqual({ ok: true, remaining: 1 });
      expect((await spend(2)).status).toBe(403);
      const meters = await metered.composed.store.listMeters(claimsOf(trial.token).lic);
      expect(meters.map((m) => [m.name, m.limit, m.period])).toEqual([
        ["ai", 10, 86_400_000],
        ["exports", 3, null],
      ]);
    } finally {
      await metered.close();
    }
  });

  test("a malformed --trial-meters stops the site from starting, naming the setting", async () => {
    for (const bad of ["exports", "Exports=3", "exports=0", "exports=3/2s"])
      await expect(testSite("alpha", { tables: PLANS, settings: { "trial-plan": "eval", "trial-meters": bad } })).rejects.toMatchObject({
        setting: "trial-meters",
      });
  });
});

describe("trials switched off", () => {
  test("without --trial-plan a start is not_found, and /meta does not name trials", async () => {
    const off = await testSite("alpha");
    try {
      expect(((await (await off.request("GET", "/meta")).json()) as { features: Record<string, unknown> }).features.trials).toBeUndefined();
      expect(((await (await site.request("GET", "/meta")).json()) as { features: Record<string, unknown> }).features.trials).toBe(true);
      const res = await off.request("POST", "/trials/start", { body: { device: device("alpha") } });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: string; message: string }).message).toContain("offers no trials");
    } finally {
      await off.close();
    }
  });

  test("--trial-plan must name a plan of the configuration", () => {
    const base = { variant: "alpha", "base-url": "https://licenses.example.com", data: "/tmp/x", keys: "/tmp/k", releases: "/tmp/r" };
    expect(() => toConfig({ ...base, "trial-plan": "nope" }, "admin", PLANS)).toThrow("names no plan");
    expect(toConfig({ ...base, "trial-plan": "eval", "trial-length": "30d" }, "admin", PLANS).trial?.lengthSeconds).toBe(30 * 86400);
    expect(() => toConfig({ ...base, "trial-plan": "eval", "trial-length": "400d" }, "admin", PLANS)).toThrow("at most 366d");
    expect(toConfig(base, "admin", PLANS).trial).toBeNull();
  });
});
