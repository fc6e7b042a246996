import { afterAll, beforeAll, expect, test } from "bun:test";
import { createApp, type App } from "../../src/http/app";
import { setCookie } from "../../src/http/cookies";
import { endpoint, type Endpoint } from "../../src/http/endpoint";
import { BASE, testSite, type TestSite } from "../helpers";

// The Endpoint contract for pages outside /api/v1 (the console and portal, issue 22): `prefix: ""`
// puts a declaration at its own path with routing, 404/405, HEAD and the front door as for the API,
// out of the OpenAPI document; a handler answers HTML with Set-Cookie and reads cookies.

const page: Endpoint = endpoint({
  method: "GET",
  prefix: "",
  path: "/console/hello/{name}",
  summary: "A console page",
  auth: "none",
  budget: "api",
  audit: "request",
  errors: [],
  handler: async (call) => {
    const seen = (await call.cookies()).visit ?? "never";
    const headers = new Headers({ "content-type": "text/html;charset=utf-8" });
    headers.append("set-cookie", setCookie("visit", "once more", { httpOnly: true, sameSite: "strict", path: "/console" }));
    headers.append("set-cookie", setCookie("theme", "dark", { path: "/" }));
    return new Response(`<!doctype html><p>${call.params.name} ${seen}</p>`, { headers });
  },
});

let site: TestSite;
let app: App;
beforeAll(async () => {
  site = await testSite("alpha");
  app = createApp(site.composed.services, [page]);
});
afterAll(() => site.close());

const at = (path: string, init?: RequestInit) => app.handle(new Request(`${BASE.replace(/\/api\/v1$/, "")}${path}`, init));

test('a declaration with prefix "" answers at its own path: HTML, two Set-Cookie headers, the request\'s cookies read', async () => {
  const res = await at("/console/hello/ada", { headers: { cookie: "visit=last%20week; other=1" } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/html;charset=utf-8");
  expect(res.headers.getSetCookie()).toEqual(["visit=once%20more; Path=/console; HttpOnly; SameSite=Strict", "theme=dark; Path=/"]);
  expect(await res.text()).toBe("<!doctype html><p>ada last week</p>");
  // The front door's rate headers are on it as on every answer.
  expect(res.headers.get("ratelimit-policy")).not.toBeNull();
});

test("HEAD, 405 with Allow and 404 hold below the prefix; the API prefix does not answer it", async () => {
  const head = await at("/console/hello/ada", { method: "HEAD" });
  expect(head.status).toBe(200);
  expect(await head.text()).toBe("");
  expect(head.headers.get("content-length")).toBe(String("<!doctype html><p>ada never</p>".length));
  const post = await at("/console/hello/ada", { method: "POST" });
  expect(post.status).toBe(405);
  expect(post.headers.get("allow")).toBe("GET, HEAD");
  expect((await at("/console/nothing")).status).toBe(404);
  expect((await at("/api/v1/console/hello/ada")).status).toBe(404);
});

test("only API endpoints are in the OpenAPI document; app.routes lists the page at its full path", async () => {
  const doc = (await (await at("/api/v1/openapi.json")).json()) as { paths: Record<string, unknown> };
  // No page (the console's, the portal's); the admin API's /admin/console-sessions is API and is in it.
  expect(Object.keys(doc.paths).some((p) => /^\/(console|portal)\b/.test(p) || p.includes("/hello/"))).toBe(false);
  expect(Object.keys(doc.paths)).toContain("/admin/console-sessions");
  expect(Object.keys(doc.paths).length).toBeGreaterThan(10);
  expect(app.routes).toContainEqual({ method: "GET", path: "/console/hello/{name}" });
});
