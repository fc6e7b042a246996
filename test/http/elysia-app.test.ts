import { afterAll, beforeAll, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { createLogger } from "../../src/config/log";
import { fullPath } from "../../src/http/endpoint";
import { testSite, type TestSite } from "../helpers";

// Issue 20: keyturn is an Elysia app: every declaration of the route table is a route of one
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
  expect(site.app.elysia["inference"]).toEqual({ body: false, cookie: false, headers: false, query: false, set: false, server: false, url: false, route: false, path: false });
});

test("each route's hooks are keyturn's: a JSON body route reads its body in its own parse, a route without one checks in beforeHandle", () => {
  for (const route of site.app.elysia.routes) {
    const declared = site.app.endpoints.find((e) => e.method === route.method && fullPath(e).replace(/\{([^}]+)\}/g, ":$1") === route.path)!;
    const hooks = route.hooks as { parse?: unknown[]; beforeHandle?: unknown[]; mapResponse?: unknown[] };
    expect({ path: route.path, parse: hooks.parse?.length ?? 0, beforeHandle: hooks.beforeHandle?.length ?? 0 }).toEqual({
      path: route.path,
      parse: declared.body ? 1 : 0,
      beforeHandle: declared.body ? 0 : 1,
    });
    expect(hooks.mapResponse?.length).toBe(1);
  }
});

test("the routes are registered by one plugin per area of the site, each route by exactly one", () => {
  expect(site.app.plugins.map((p) => p.name)).toEqual(["licensing", "updates", "releases", "feeds", "identity", "site", "admin", "console", "portal"].map((a) => `keyturn:${a}`));
  const byPlugins = site.app.plugins.flatMap((p) => p.routes).sort();
  expect(byPlugins).toEqual(site.app.elysia.routes.map((r) => `${r.method} ${r.path}`).sort());
  expect(new Set(byPlugins).size).toBe(byPlugins.length);
});
