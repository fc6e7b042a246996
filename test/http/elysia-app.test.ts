import { afterAll, beforeAll, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { createLogger } from "../../src/config/log";
import { macrosOf } from "../../src/http/auth";
import { fullPath, type Endpoint } from "../../src/http/endpoint";
import { isOnDemandPath, ON_DEMAND_PREFIXES } from "../../src/http/route-table";
import { testSite, type TestSite } from "../helpers";

// keyturn is an Elysia app: every declaration of the route table is a route of one Elysia
// instance, which answers every request (app.handle is its fetch, told the peer). The on-demand
// areas' declarations (route-table.ts) are routes of an instance of their own, registered with
// their first request, to which the site's instance hands every request under their prefixes.

let site: TestSite;
const lines: Record<string, unknown>[] = [];
beforeAll(async () => {
  site = await testSite("alpha", { log: createLogger("json", "info", (l) => lines.push(JSON.parse(l) as Record<string, unknown>)) });
});
afterAll(() => site.close());

/** Routes as `METHOD path`, leaving out the site instance's hand-overs to the on-demand areas. */
const declaredRoutes = (instance: { routes: { method: string; path: string }[] } | null) =>
  (instance?.routes ?? []).filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`);
const declaredOf = (endpoints: readonly Endpoint[]) => endpoints.map((e) => `${e.method} ${fullPath(e).replace(/\{([^}]+)\}/g, ":$1")}`).sort();

test("the on-demand areas are loaded by the first request under their paths, and answer it", async () => {
  expect(site.app.onDemandElysia).toBeNull();
  expect(site.app.endpoints.some((e) => isOnDemandPath(fullPath(e)))).toBe(false);
  expect(site.app.elysia.routes.filter((r) => r.method === "ALL").map((r) => r.path)).toEqual(ON_DEMAND_PREFIXES.flatMap((p) => [p, `${p}/*`]));
  const page = await site.app.handle(new Request("http://localhost/console/sign-in"));
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toContain("text/html");
  expect(site.app.onDemandElysia).toBeInstanceOf(Elysia);
  expect(site.app.endpoints.some((e) => fullPath(e) === "/console/sign-in")).toBe(true);
});

test("each declaration is one route of the site's instance or of the on-demand areas' instance, with its path's parameters in Elysia's form", async () => {
  await site.app.allAreas();
  expect(site.app.elysia).toBeInstanceOf(Elysia);
  const served = declaredRoutes(site.app.elysia);
  const onDemand = declaredRoutes(site.app.onDemandElysia);
  expect([...served, ...onDemand].sort()).toEqual(declaredOf(site.app.endpoints));
  expect(served.length).toBeGreaterThan(0);
  expect(onDemand.length).toBeGreaterThan(0);
  for (const route of onDemand) expect(isOnDemandPath(route.split(" ")[1]!)).toBe(true);
  for (const route of served) expect(isOnDemandPath(route.split(" ")[1]!)).toBe(false);
});

test("the instance's own fetch answers as app.handle does, with keyturn's hooks (log line, rate headers, refusal body)", async () => {
  lines.length = 0;
  const direct = await site.app.elysia.fetch(new Request("http://localhost/api/v1/no-such-thing"));
  expect(direct.status).toBe(404);
  expect(direct.headers.get("ratelimit-policy")).not.toBeNull();
  expect(((await direct.json()) as { error: string }).error).toBe("not_found");
  const meta = await site.app.elysia.fetch(new Request("http://localhost/api/v1/meta"));
  expect(meta.status).toBe(200);
  expect(lines.filter((l) => l.msg === "request").map((l) => [l.path, l.status, l.address])).toEqual([
    ["/api/v1/no-such-thing", 404, "203.0.113.7"],
    ["/api/v1/meta", 200, "203.0.113.7"],
  ]);
});

test("the peer handed to app.handle is the request's address, not the fallback", async () => {
  lines.length = 0;
  await site.app.handle(new Request("http://localhost/api/v1/health"), "198.51.100.9");
  await site.app.handle(new Request("http://localhost/api/v1/health", { method: "HEAD" }), "198.51.100.10");
  expect(lines.filter((l) => l.msg === "request").map((l) => [l.method, l.address])).toEqual([
    ["GET", "198.51.100.9"],
    ["HEAD", "198.51.100.10"],
  ]);
});

test("Elysia infers that no hook reads the whole context: no route parses headers, cookies or the query for keyturn", async () => {
  // Elysia reads its hooks' source text to decide which parts of a request to parse for every route;
  // a hook handing the whole context to a function would make every request pay for all of them.
  // `inference` is protected in Elysia's types; the test reads it by name.
  await site.app.allAreas();
  expect(site.app.onDemandElysia!["inference"]).toEqual(site.app.elysia["inference"]);
  expect(site.app.elysia["inference"]).toEqual({
    body: false,
    cookie: false,
    headers: false,
    query: false,
    set: false,
    server: false,
    url: false,
    route: false,
    path: false,
  });
});

test("each route's hooks are the macros its declaration picks: no route declares its own parse, a body route checks before its JSON reader, the rest is resolved", async () => {
  const AUTH = ["entitlement", "entitlementLeaving", "entitlementOrVisitor", "feedCredential", "adminScope", "consoleSession", "portalSession"];
  await site.app.allAreas();
  const routes = [...site.app.elysia.routes, ...site.app.onDemandElysia!.routes].filter((r) => r.method !== "ALL");
  expect(routes.length).toBe(site.app.endpoints.length);
  for (const route of routes) {
    const declared = site.app.endpoints.find((e) => e.method === route.method && fullPath(e).replace(/\{([^}]+)\}/g, ":$1") === route.path)!;
    const macros = Object.keys(macrosOf(declared));
    const hooks = route.hooks as { parse?: unknown[]; beforeHandle?: { subType?: string }[]; mapResponse?: unknown[] };
    // Only a route that takes a body runs parse hooks; each of its macros has one, the JSON reader last.
    expect({ path: route.path, parse: hooks.parse?.length ?? 0 }).toEqual({ path: route.path, parse: declared.body ? macros.length : 0 });
    if (declared.body) expect(macros.at(-1)).toBe("jsonBody");
    if (declared.auth !== "none") expect(AUTH).toContain(macros[0]!);
    // Every beforeHandle is a macro's resolve (handing the handler what it found), one per macro but the reader.
    expect((hooks.beforeHandle ?? []).map((h) => h.subType)).toEqual(macros.filter((m) => m !== "jsonBody").map(() => "resolve"));
    expect(hooks.mapResponse?.length).toBe(1);
  }
});

test("the auth macros are one plugin the area plugins use, each route selecting its macro by key", async () => {
  await site.app.allAreas();
  const keys = Object.keys(site.app.auth["extender"].macro).sort();
  expect(keys).toEqual([
    "adminScope",
    "admitted",
    "consoleSession",
    "csrf",
    "entitlement",
    "entitlementLeaving",
    "entitlementOrVisitor",
    "feedCredential",
    "jsonBody",
    "portalSession",
  ]);
  const picked = (path: string) => Object.keys(macrosOf(site.app.endpoints.find((e) => fullPath(e) === path)!));
  expect(picked("/api/v1/entitlements/current")).toEqual(["entitlement"]);
  expect(picked("/api/v1/entitlements/refresh")).toEqual(["entitlement", "jsonBody"]);
  expect(picked("/api/v1/entitlements/deactivate")).toEqual(["entitlementLeaving"]);
  expect(picked("/console/")).toEqual(["consoleSession"]);
});

test("the routes are registered by one plugin per area of the site, each route by exactly one", async () => {
  await site.app.allAreas();
  expect(site.app.plugins.map((p) => p.name)).toEqual(
    ["licensing", "updates", "releases", "feeds", "identity", "site", "admin", "console", "portal", "commerce"].map((a) => `keyturn:${a}`),
  );
  const byPlugins = site.app.plugins.flatMap((p) => p.routes).sort();
  expect(byPlugins).toEqual([...declaredRoutes(site.app.elysia), ...declaredRoutes(site.app.onDemandElysia)].sort());
  expect(new Set(byPlugins).size).toBe(byPlugins.length);
});
