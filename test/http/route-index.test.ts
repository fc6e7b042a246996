import { describe, expect, test } from "bun:test";
import { endpoint, type Endpoint } from "../../src/http/endpoint";
import { routeIndex } from "../../src/http/route-index";

const declared = (method: Endpoint["method"], path: string): Endpoint =>
  endpoint({ method, path, summary: path, auth: "none", budget: "api", audit: "request", errors: [], handler: () => new Response(null) });

const manifest = declared("GET", "/updates/{product}/{channel}/{platform}/{file}");
const health = declared("GET", "/health");
const activate = declared("POST", "/licenses/activate");
const deactivate = declared("POST", "/activations/{id}/deactivate");
const show = declared("GET", "/activations/{id}");

describe("keyturn's own route index (the budget's endpoint before Elysia routes, 405's Allow)", () => {
  const index = routeIndex([manifest, health, activate, deactivate, show]);

  test("finds the declaration of a method and path; HEAD is its GET; a literal segment wins over a parameter", () => {
    expect(index.find("GET", "/api/v1/health")).toBe(health);
    expect(index.find("HEAD", "/api/v1/health")).toBe(health);
    expect(index.find("GET", "/api/v1/updates/alpha/stable/win-x64/alpha-update.json")).toBe(manifest);
    expect(index.find("POST", "/api/v1/activations/act_1/deactivate")).toBe(deactivate);
    expect(index.find("GET", "/api/v1/activations/act_1")).toBe(show);
    expect(index.find("POST", "/api/v1/health")).toBeUndefined();
    expect(index.find("GET", "/api/v1/activations//deactivate")).toBeUndefined();
    expect(index.answering("/api/v1/licenses/activate").map((e) => e.method)).toEqual(["POST"]);
  });

  test("kept answers stay right: asked again, after the kept answers are dropped when full, and for paths too long to keep", () => {
    const path = (n: number) => `/api/v1/activations/act_${n}`;
    for (let round = 0; round < 2; round++) for (let n = 0; n < 5000; n++) expect(index.find("GET", path(n))).toBe(show);
    expect(index.find("GET", "/api/v1/nothing/here")).toBeUndefined();
    expect(index.find("GET", "/api/v1/nothing/here")).toBeUndefined();
    const long = `/api/v1/activations/${"x".repeat(300)}`;
    expect(index.find("GET", long)).toBe(show);
    expect(index.find("POST", `${long}/deactivate`)).toBe(deactivate);
    expect(index.find("DELETE", long)).toBeUndefined();
  });
});
