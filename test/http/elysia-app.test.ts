import { afterAll, beforeAll, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { createLogger } from "../../src/config/log";
import { macrosOf } from "../../src/http/auth";
import { fullPath } from "../../src/http/endpoint";
import { testSite, type TestSite } from "../helpers";

// keyturn is an Elysia app: every declaration of the route table is a route of one
// Elysia instance, and that instance answers every request (app.handle is its fetch, told the peer).

let site: TestSite;
const lines: Record<string, unknown>[] = [];
beforeAll(async () => {
  site = await testSite("alpha", { log: createLogger("json", "info", (l) => lines.push(JSON.parse(l) as Record<string, unknown>)) });
});
afterAll(() => site.close());

test("each declaration is one route of the Elysia instance, with its path's parameters in Elysia's form", () => {
  expect(site.app.elysia).toBeInstanceOf(Elysia);
  const registered = site.app.elysia.routes.map((r) => `${r.method} ${r.path}`).sort();
  const declared = site.app.endpoints.map((e) => `${e.method} ${fullPath(e).replace(/\{([^}]+)\}/g, ":$1")}`).sort();
  expect(registered).toEqual(declared);
});

test("the instance's own fetch answers as app.handle does, with keyturn's hooks (log line, rate headers, refusal body)", async () => {
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

test("Elysia infers that no hook reads the whole context: no route parses headers, cookies or the query for keyturn", () => {
  // Elysia reads its hooks' source text to decide which parts of a request to parse for every route;
  // a hook handing the whole context to a function would make every request pay for all of them.
  // `inference` is protected in Elysia's types; the test reads it by name.
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

test("each route's hooks are the macros its declaration picks: no route declares its own parse, a body route checks before its JSON reader, the rest is resolved", () => {
  const AUTH = ["entitlement", "entitlementLeaving", "entitlementOrVisitor", "feedCredential", "adminScope", "consoleSession", "portalSession"];
  for (const route of site.app.elysia.routes) {
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

test("the auth macros are one plugin the area plugins use, each route selecting its macro by key", () => {
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

test("the routes are registered by one plugin per area of the site, each route by exactly one", () => {
  expect(site.app.plugins.map((p) => p.name)).toEqual(
    ["licensing", "updates", "releases", "feeds", "identity", "site", "admin", "console", "portal", "commerce"].map((a) => `keyturn:${a}`),
  );
  const byPlugins = site.app.plugins.flatMap((p) => p.routes).sort();
  expect(byPlugins).toEqual(site.app.elysia.routes.map((r) => `${r.method} ${r.path}`).sort());
  expect(new Set(byPlugins).size).toBe(byPlugins.length);
});
