import { afterEach, expect, test } from "bun:test";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { testSite, type TestSite } from "../helpers";

// Issue 21, item 12: admin answers hold licences, keys and records; none may be kept by a cache.

let site: TestSite | null = null;
afterEach(async () => {
  await site?.close();
  site = null;
});

test("every admin answer carries Cache-Control: no-store: each admin operation of the API description, refusals, unknown admin paths and the rate limit's 429", async () => {
  site = await testSite("alpha", { settings: { "rate-limit-admin": "60/60s" } });
  const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "cache", scopes: ["admin"] })).secret;
  const doc = (await (await site.request("GET", "/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.entries(doc.paths)
    .filter(([path]) => path.startsWith("/admin/"))
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => [method.toUpperCase(), path.replace(/\{[^}]+\}/g, "x")] as const));
  expect(operations.length).toBeGreaterThan(15);
  const seen: [string, string, number, string | null][] = [];
  for (const [method, path] of operations) {
    const body = method === "GET" || method === "DELETE" ? undefined : {};
    for (const t of [token, undefined]) {
      const r = await site.request(method, path, { token: t, body });
      seen.push([method, path, r.status, r.headers.get("cache-control")]);
    }
  }
  const extra = [await site.request("GET", "/admin/no/such/thing", { token }), await site.request("GET", "/admin", { token })];
  for (const r of extra) seen.push(["GET", "unrouted", r.status, r.headers.get("cache-control")]);
  expect(new Set(seen.map((s) => s[2])).size).toBeGreaterThan(3); // answers of every kind: 200, 400, 401, 404 ...
  expect(seen.filter((s) => s[3] !== "no-store")).toEqual([]);
});

test("the admin rate limit's 429 carries no-store too", async () => {
  site = await testSite("alpha", { settings: { "rate-limit-admin": "1/60s" } });
  await site.request("GET", "/admin/licenses");
  const limited = await site.request("GET", "/admin/licenses");
  expect(limited.status).toBe(429);
  expect(limited.headers.get("cache-control")).toBe("no-store");
});
