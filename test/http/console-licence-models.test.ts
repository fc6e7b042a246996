import { afterAll, beforeAll, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { BASE_URL, device, testSite, type TestSite } from "../helpers";

// The console's fields of the licence models (design.md "Licence models": console fields): meters
// set in the create and edit forms, a licence's metered use and trial on its page, and the
// dashboard's trials and metered use, through app.handle.
const ORIGIN = "http://localhost";
const SITE = new URL(BASE_URL).origin;
let site: TestSite;
let cookie = "";
let csrf = "";

const send = (method: string, path: string, body?: Record<string, string>) =>
  site.app.handle(
    new Request(`${ORIGIN}${path}`, {
      method,
      body: body ? new URLSearchParams({ csrf, ...body }).toString() : undefined,
      headers: { ...(body ? { "content-type": "application/x-www-form-urlencoded", origin: SITE } : {}), ...(cookie ? { cookie } : {}) },
    }),
  );

beforeAll(async () => {
  site = await testSite("alpha", { tables: { plans: { eval: { channels: ["stable"] } } }, settings: { "trial-plan": "eval" } });
  const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["admin"] })).secret;
  const signedIn = await site.app.handle(
    new Request(`${ORIGIN}/console/sign-in`, {
      method: "POST",
      body: new URLSearchParams({ token }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", origin: SITE },
    }),
  );
  cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
  csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await (await send("GET", "/console/licenses")).text())![1]!;
});
afterAll(() => site.close());

const licenceForm = { licensee: "Ada", organization: "Engines", plan: "pro", planTitle: "Pro", seats: "1", channels: "stable" };

test("a licence created with meters shows their use on its page; the edit form changes them and an empty field removes them", async () => {
  const created = await send("POST", "/console/licenses", { ...licenceForm, meters: "exports=500/30d, credits=1000" });
  expect(created.status).toBe(201);
  const id = /href="\/console\/licenses\/(lic_[0-9a-z]+)"/.exec(await created.text())![1]!;
  let page = await (await send("GET", `/console/licenses/${id}`)).text();
  expect(page).toContain('<tr data-meter="exports">');
  expect(page).toMatch(
    /data-meter="credits"><td data-label="Meter">credits<\/td><td data-label="Used">0<\/td><td data-label="Left">1000<\/td><td data-label="Limit">1000 \(one-time pool\)/,
  );
  expect(page).toContain('value="credits=1000, exports=500/30d"');

  const saved = await send("POST", `/console/licenses/${id}`, { seats: "1", channels: "stable", expires: "", seatLease: "", meters: "exports=20/1w" });
  expect(saved.status).toBe(303);
  page = await (await send("GET", `/console/licenses/${id}`)).text();
  expect(page).toContain("20 per 1w");
  expect(page).not.toContain('data-meter="credits"');

  const bad = await send("POST", `/console/licenses/${id}`, { seats: "1", channels: "stable", meters: "exports" });
  expect(bad.status).toBe(400);
  expect(await bad.text()).toContain("NAME=LIMIT");

  await send("POST", `/console/licenses/${id}`, { seats: "1", channels: "stable", meters: "" });
  page = await (await send("GET", `/console/licenses/${id}`)).text();
  expect(page).not.toContain('id="meters"');
});

test("a trial's licence page says when it started and ends; the dashboard counts trials and metered use", async () => {
  const started = await site.request("POST", "/trials/start", { body: { device: device("alpha") } });
  expect(started.status).toBe(200);
  const lic = JSON.parse(Buffer.from(((await started.json()) as { token: string }).token.split(".")[1]!, "base64url").toString()).lic as string;
  const page = await (await send("GET", `/console/licenses/${lic}`)).text();
  expect(page).toContain('<dl class="grid" id="trial">');
  expect(page).toContain("not yet");
  const dashboard = await (await send("GET", "/console/")).text();
  expect(dashboard).toMatch(/<p id="trials">1 started, 0 converted to a bought licence \(0 %\)\.<\/p>/);
});
