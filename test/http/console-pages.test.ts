import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { BASE_URL, createLicense, testSite, type TestSite } from "../helpers";

// The console's pages through app.handle (no browser): the web headers on every answer, the
// session and CSRF gates, and refusals that are pages naming their audit line.
const ORIGIN = "http://localhost";
/** The site's public origin (--base-url): the Origin its own forms carry. */
const SITE = new URL(BASE_URL).origin;
let site: TestSite;
let cookie = "";
let csrf = "";

const send = (method: string, path: string, o: { body?: string; headers?: Record<string, string> } = {}) =>
  site.app.handle(
    new Request(`${ORIGIN}${path}`, {
      method,
      body: o.body,
      headers: {
        ...(o.body !== undefined ? { "content-type": "application/x-www-form-urlencoded", origin: SITE } : {}),
        ...(cookie ? { cookie } : {}),
        ...o.headers,
      },
    }),
  );

beforeAll(async () => {
  site = await testSite("alpha");
  const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["admin"] })).secret;
  const signedIn = await send("POST", "/console/sign-in", { body: new URLSearchParams({ token }).toString() });
  expect(signedIn.status).toBe(303);
  cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
  csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await (await send("GET", "/console/licenses")).text())![1]!;
});
afterAll(() => site.close());

describe("console pages over app.handle", () => {
  test("every page, redirect and refusal carries the CSP, no framing and no-store", async () => {
    for (const [method, path] of [
      ["GET", "/console/"],
      ["GET", "/console"],
      ["GET", "/console/licenses/lic_nope"],
      ["GET", "/portal/"],
      ["HEAD", "/console/audit"],
    ] as const) {
      const r = await send(method, path);
      expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(r.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      expect(r.headers.get("cache-control")).toBe("no-store");
    }
  });

  test("a control of a release the site does not know is refused, as a page with its reference, and writes nothing", async () => {
    const r = await send("POST", `/console/releases/${encodeURIComponent("alpha/stable/win-x64")}/9.9.9/withdraw`, { body: `csrf=${csrf}` });
    expect(r.status).toBe(404);
    const text = await r.text();
    const ref = /Reference: <code>(ref_[0-9a-z]+)<\/code> \(not_found\)/.exec(text)?.[1];
    expect(ref).toBeDefined();
    const lines = await site.composed.store.listAudit({ limit: 1000 });
    expect(lines.find((l) => l.ref === ref)).toMatchObject({ action: "release-withdraw", outcome: "refused", error: "not_found" });
    // The refusal names who was signed in, as the admin API's refusals name the token.
    expect(lines.find((l) => l.ref === ref)?.actor).toMatch(/^tok_[0-9a-z]+ \(ops\)$/);
    expect((await site.composed.services.selection.controls.current()).all).toEqual([]);
  });

  test("a form without the session's token, or from another origin, changes nothing", async () => {
    const created = (n: string) =>
      send("POST", "/console/licenses", {
        body: new URLSearchParams({ csrf: n, licensee: "X", organization: "Y", plan: "p", planTitle: "P", seats: "1", channels: "stable" }).toString(),
      });
    expect((await created("0".repeat(64))).status).toBe(400);
    expect((await send("POST", "/console/licenses", { body: `csrf=${csrf}&licensee=X`, headers: { origin: "https://evil.example" } })).status).toBe(400);
    expect((await site.composed.store.searchLicenses({ now: Date.now(), limit: 10 })).length).toBe(0);
    expect((await created(csrf)).status).toBe(201);
    expect((await site.composed.store.searchLicenses({ now: Date.now(), limit: 10 })).length).toBe(1);
  });

  test("without a session a page sends to the sign-in and an action answers the sign-in page (401)", async () => {
    const page = await site.app.handle(new Request(`${ORIGIN}/console/licenses`));
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/console/sign-in");
    const action = await site.app.handle(
      new Request(`${ORIGIN}/console/licenses`, {
        method: "POST",
        headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
        body: "licensee=X",
      }),
    );
    expect(action.status).toBe(401);
    expect(await action.text()).toContain('name="token"');
  });

  test("signing out of the console or the portal revokes the session with an audit line naming it; the cookie opens nothing after", async () => {
    const { key, license } = await createLicense(site);
    const portalIn = await send("POST", "/portal/sign-in", { body: new URLSearchParams({ key }).toString(), headers: { cookie: "" } });
    expect(portalIn.status).toBe(303);
    const portalCookie = portalIn.headers.get("set-cookie")!.split(";")[0]!;
    const home = await send("GET", "/portal/", { headers: { cookie: portalCookie } });
    const portalCsrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await home.text())![1]!;
    const out = await send("POST", "/portal/sign-out", { body: new URLSearchParams({ csrf: portalCsrf }).toString(), headers: { cookie: portalCookie } });
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    const lines = await site.composed.store.listAudit({ limit: 1000 });
    expect(lines.some((l) => l.action === "portal-sign-out" && l.outcome === "ok" && l.licenseId === license.id)).toBe(true);
    const after = await send("GET", "/portal/", { headers: { cookie: portalCookie } });
    expect(await after.text()).not.toContain(portalCsrf);

    const consoleOut = await send("POST", "/console/sign-out", { body: new URLSearchParams({ csrf }).toString() });
    expect(consoleOut.status).toBe(303);
    expect((await site.composed.store.listAudit({ limit: 1000 })).some((l) => l.action === "console-sign-out" && l.outcome === "ok")).toBe(true);
    expect((await send("GET", "/console/licenses")).status).toBe(303);
  });
});
