import { afterEach, expect, test } from "bun:test";
import { fullPath } from "../../src/http/endpoint";
import { isOnDemandPath, ON_DEMAND_PREFIXES } from "../../src/http/route-table";
import { testSite, type TestSite } from "../helpers";

// The on-demand areas (the admin API, the console, the portal, the payment hooks) are loaded by the
// first request under their paths: route-table.ts says why.

const sites: TestSite[] = [];
afterEach(async () => {
  for (const site of sites.splice(0)) await site.close();
});

async function site(settings: Record<string, string> = {}): Promise<TestSite> {
  const made = await testSite("alpha", { settings });
  sites.push(made);
  return made;
}

test("every path of an on-demand area is under one of its prefixes, and no path of the areas served from the start is", async () => {
  // With a public lane, so that its download page is declared too; and a mail server, for the portal's e-mail sign-in.
  const { app } = await site({ "public-lanes": "alpha/preview", "smtp-url": "smtp://127.0.0.1:9", "mail-from": "licences@example.com" });
  const served = app.endpoints.map(fullPath);
  await app.allAreas();
  const onDemand = app.endpoints.map(fullPath).filter((path) => !served.includes(path));
  expect(onDemand.length).toBeGreaterThan(0);
  for (const path of onDemand) expect({ path, onDemand: isOnDemandPath(path) }).toEqual({ path, onDemand: true });
  for (const path of served) expect({ path, onDemand: isOnDemandPath(path) }).toEqual({ path, onDemand: false });
  for (const prefix of ON_DEMAND_PREFIXES) expect(onDemand.some((path) => path.startsWith(prefix))).toBe(true);
});

test("a prefix matches whole segments only", () => {
  expect(isOnDemandPath("/console")).toBe(true);
  expect(isOnDemandPath("/console/")).toBe(true);
  expect(isOnDemandPath("/api/v1/admin/licenses")).toBe(true);
  expect(isOnDemandPath("/consoles")).toBe(false);
  expect(isOnDemandPath("/api/v1/administrators")).toBe(false);
  expect(isOnDemandPath("/api/v1/releases")).toBe(false);
});

test("the first request of an on-demand area is charged to its own budget, as every later one", async () => {
  const { app } = await site({ "rate-limit-admin": "1/60s" });
  const signIn = () => app.handle(new Request("http://localhost/console/sign-in"));
  expect(app.onDemandElysia).toBeNull();
  expect((await signIn()).status).toBe(200);
  const second = await signIn();
  expect(second.status).toBe(429);
  // The API's budget was not the one spent.
  expect((await app.handle(new Request("http://localhost/api/v1/meta"))).status).toBe(200);
});

test("an unknown path under an on-demand prefix is the same 404 as anywhere else, in the spec's error body", async () => {
  const { app } = await site();
  for (const path of ["/api/v1/admin/no-such-thing", "/api/v1/no-such-thing", "/api/v1/hooks/stripe/no-such-thing", "/console/no-such-page"]) {
    const answer = await app.handle(new Request(`http://localhost${path}`));
    expect({ path, status: answer.status }).toEqual({ path, status: 404 });
    expect(((await answer.json()) as { ok: boolean; error: string }).error).toBe("not_found");
  }
});

test("a HEAD and a method the path does not answer go through the on-demand areas as through the others", async () => {
  const { app } = await site();
  const head = await app.handle(new Request("http://localhost/console/sign-in", { method: "HEAD" }));
  expect(head.status).toBe(200);
  expect(await head.text()).toBe("");
  const wrong = await app.handle(new Request("http://localhost/api/v1/admin/licenses", { method: "PATCH" }));
  expect(wrong.status).toBe(405);
  expect(wrong.headers.get("allow")).toContain("GET");
});
