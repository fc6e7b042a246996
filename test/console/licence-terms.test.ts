import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { BASE_URL, createLicense, testSite } from "../helpers";

// The console's fields for plans, the maintenance window and features (design.md "Licence models":
// "console fields"), through app.handle as test/http/console-pages.test.ts drives the console.
const ORIGIN = "http://localhost";
const SITE = new URL(BASE_URL).origin;
const PLANS = { pro: { title: "Pro", seats: 3, channels: ["stable", "preview"], features: ["export-pdf"], updatesFor: "365d" } };

/** A site signed in to the console as an admin: GET and form POSTs with the session's CSRF token. */
async function consoleOf(tables?: Record<string, unknown>) {
  const site = await testSite("alpha", tables ? { tables } : {});
  let cookie = "";
  const send = (method: string, path: string, body?: Record<string, string | string[]>) => {
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(body ?? {})) for (const one of [v].flat()) form.append(k, one);
    return site.app.handle(
      new Request(`${ORIGIN}${path}`, {
        method,
        body: body ? form.toString() : undefined,
        headers: { ...(body ? { "content-type": "application/x-www-form-urlencoded", origin: SITE } : {}), ...(cookie ? { cookie } : {}) },
      }),
    );
  };
  const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["admin"] })).secret;
  cookie = (await send("POST", "/console/sign-in", { token })).headers.get("set-cookie")!.split(";")[0]!;
  const page = await (await send("GET", "/console/licenses")).text();
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(page)![1]!;
  return { site, send, csrf, page };
}

describe("the console on a site with plans", () => {
  let c: Awaited<ReturnType<typeof consoleOf>>;
  beforeAll(async () => {
    c = await consoleOf({ plans: PLANS });
  });
  afterAll(() => c.site.close());

  test("the create form offers the plans and requires nothing the plan gives; a licence made from the plan alone has its values", async () => {
    expect(c.page).toContain('<option value="pro">Pro</option>');
    expect(c.page).toContain('<input name="seats" type="number" min="1">');
    const made = await c.send("POST", "/console/licenses", { csrf: c.csrf, licensee: "Ada", organization: "Engines", plan: "pro" });
    expect(made.status).toBe(201);
    const [row] = await c.site.composed.store.searchLicenses({ now: c.site.clock(), limit: 10 });
    expect(row!.license).toMatchObject({ planTitle: "Pro", seats: 3, channels: ["stable", "preview"], features: ["export-pdf"] });
    expect(row!.license.updatesUntil).toBe(Math.floor((c.site.clock() + 365 * 86_400_000) / 1000) * 1000);
    const shown = await (await c.send("GET", `/console/licenses/${row!.license.id}`)).text();
    expect(shown).toMatch(/<dd id="updates-until">[^<]*2027-11-21/);
    expect(shown).toContain('<dd id="features">export-pdf</dd>');
  });

  test("the edit form sets the window and features; saved unchanged, a window keeps its time of day", async () => {
    const [row] = await c.site.composed.store.searchLicenses({ now: c.site.clock(), limit: 10 });
    const id = row!.license.id;
    const before = row!.license.updatesUntil!;
    const edit = (updatesUntil: string, features: string) =>
      c.send("POST", `/console/licenses/${id}`, { csrf: c.csrf, seats: "3", channels: ["stable", "preview"], updatesUntil, features });
    expect((await edit(new Date(before).toISOString().slice(0, 10), "export-pdf")).status).toBe(303);
    expect((await c.site.composed.store.getLicense(id))!.updatesUntil).toBe(before);
    expect((await edit("2027-01-31", "export-pdf, max-projects=50")).status).toBe(303);
    const after = (await c.site.composed.store.getLicense(id))!;
    expect(after.updatesUntil).toBe(Date.parse("2027-01-31T00:00:00Z"));
    expect(after.features).toEqual(["export-pdf", "max-projects=50"]);
    const bad = await edit("2027-01-31", "Export PDF");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("features.0 must be a feature");
    expect((await edit("", "")).status).toBe(303);
    const cleared = (await c.site.composed.store.getLicense(id))!;
    expect([cleared.updatesUntil ?? null, cleared.features ?? []]).toEqual([null, []]);
  });

  test("the portal names the window's end", async () => {
    const { key } = await createLicense(c.site, { updatesUntil: "2027-03-01T00:00:00Z" });
    const signedIn = await c.site.app.handle(
      new Request(`${ORIGIN}/portal/sign-in`, {
        method: "POST",
        body: new URLSearchParams({ key }).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded", origin: SITE },
      }),
    );
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
    const home = await (await c.site.app.handle(new Request(`${ORIGIN}/portal/`, { headers: { cookie } }))).text();
    expect(home).toMatch(/Updates until: <span id="updates-until">[^<]*2027-03-01/);
  });
});

test("without plans the create form is as it was: plan, title, seats and a channel filled in and required", async () => {
  const c = await consoleOf();
  try {
    expect(c.page).toContain('<input name="seats" type="number" min="1" required value="1">');
    expect(c.page).not.toContain("<datalist");
    const made = await c.send("POST", "/console/licenses", {
      csrf: c.csrf,
      licensee: "Bo",
      organization: "B",
      plan: "standard",
      planTitle: "Standard",
      seats: "1",
      channels: "stable",
    });
    expect(made.status).toBe(201);
    const [row] = await c.site.composed.store.searchLicenses({ now: c.site.clock(), limit: 10 });
    expect("updatesUntil" in row!.license || "features" in row!.license).toBe(false);
  } finally {
    await c.site.close();
  }
});
