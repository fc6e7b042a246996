import { afterAll, describe, expect, test } from "bun:test";
import { VARIANT_NAMES, type VariantName } from "../../src/config/variants";
import { ERROR_CODES } from "../../src/domain/errors";
import { API_PREFIX } from "../../src/http/app";
import { STATUS_OF } from "../../src/http/status";
import { testSite, type TestSite } from "../helpers";

type Doc = {
  openapi: string;
  servers: { url: string }[];
  paths: Record<string, Record<string, { security: unknown[]; requestBody?: any; responses: Record<string, any>; parameters?: any[] }>>;
};

const sites: TestSite[] = [];
afterAll(async () => {
  for (const s of sites) await s.close();
});

async function documentOf(variant: VariantName) {
  const site = await testSite(variant);
  sites.push(site);
  const r = await site.request("GET", "/openapi.json");
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toStartWith("application/json");
  return { site, doc: (await r.json()) as Doc };
}

/** `/updates/:product/:channel` and `/updates/{product}/{channel}` compare equal. */
const shape = (path: string) => path.replace(/:[^/]+|\{[^}]+\}/g, "{}");

describe("OpenAPI document at /api/v1/openapi.json", () => {
  for (const variant of VARIANT_NAMES)
    test(`${variant}: every route the app registers is described, with its method`, async () => {
      const { site, doc } = await documentOf(variant);
      expect(doc.openapi).toStartWith("3.");
      expect(doc.servers).toEqual([{ url: API_PREFIX }]);
      const described = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${shape(path)}`));
      // The console's and portal's pages are routes of the app but not of the API document.
      const pages = site.app.routes.filter((r) => !r.path.startsWith(API_PREFIX));
      for (const r of pages) expect(r.path).toMatch(/^\/(console|portal)(\/|$)/);
      expect(Object.keys(doc.paths).filter((p) => /^\/(console|portal)/.test(p))).toEqual([]);
      const registered = site.app.routes
        .filter((r) => r.path.startsWith(API_PREFIX))
        .map((r) => ({ method: r.method.toUpperCase(), path: r.path.slice(API_PREFIX.length) }));
      expect(registered.length).toBeGreaterThan(0);
      for (const { method, path } of registered) {
        if (path.includes("*")) {
          // A wildcard route must be covered by a described path under its prefix.
          const prefix = path.slice(0, path.indexOf("*"));
          expect(described.some((d) => d.startsWith(`${method} ${shape(prefix)}`))).toBe(true);
        } else expect(described).toContain(`${method} ${shape(path)}`);
      }
    });

  test("every operation lists its error answers with the status of each code", async () => {
    const { doc } = await documentOf("alpha");
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops)) {
        const where = `${method} ${path}`;
        expect(op.responses["429"], where).toBeDefined();
        expect(op.responses["500"], where).toBeDefined();
        expect(op.responses["429"].headers["Retry-After"], where).toBeDefined();
        for (const [status, answer] of Object.entries(op.responses)) {
          if (Number(status) < 400 || status === "416") continue; // 416 is a range answer, not a refusal
          // A HEAD refusal has the GET's status and headers and no body.
          if (method === "head") {
            expect(answer.content, where).toBeUndefined();
            continue;
          }
          const codes: string[] = answer.content["application/json"].schema.properties.error.enum;
          expect(codes.length, where).toBeGreaterThan(0);
          for (const code of codes) expect(STATUS_OF[code as (typeof ERROR_CODES)[number]], `${where} ${code}`).toBe(Number(status));
        }
      }
  });

  test("bearer routes say so and list the entitlement errors; the others need no token", async () => {
    const { doc } = await documentOf("alpha");
    const bearer = (p: string, m = "get") => doc.paths[p]![m]!.security.length > 0;
    expect(bearer("/entitlements/current")).toBe(true);
    expect(bearer("/entitlements/refresh", "post")).toBe(true);
    expect(bearer("/releases")).toBe(true);
    expect(bearer("/updates/{product}/{channel}/{platform}/{file}")).toBe(true);
    for (const open of ["/health", "/meta", "/auth/identity"]) expect(bearer(open)).toBe(false);
    expect(bearer("/licenses/activate", "post")).toBe(false);
    expect(doc.paths["/entitlements/current"]!.get!.responses["401"].content["application/json"].schema.properties.error.enum).toEqual([
      "entitlement_invalid",
      "entitlement_expired",
      "entitlement_revoked",
    ]);
  });

  test("request bodies come from the routes' schemas; path parameters list their allowed values", async () => {
    const { doc } = await documentOf("beta");
    const activate = doc.paths["/licenses/activate"]!.post!;
    const schema = activate.requestBody.content["application/json"].schema;
    expect(schema.required).toEqual(["key", "device"]);
    expect(schema.properties.device.required).toEqual(["hash", "name", "platform", "version"]);
    expect(Object.keys(activate.responses)).toEqual(["200", "400", "403", "409", "413", "415", "429", "500", "503"]);
    const update = doc.paths["/updates/{product}/{channel}/{platform}/{file}"]!.get!;
    expect(update.parameters!.map((p) => [p.name, p.schema.enum ?? null])).toEqual([
      ["product", ["beta", "beta-studio"]],
      ["channel", ["stable", "preview"]],
      ["platform", ["win-x64"]],
      ["file", null],
      ["version", null],
      ["installed", null],
      // The update path answers public lanes without a bearer: the visitor names its device hash (docs/public-lanes.md).
      ["Keyturn-Device", null],
      ["device", null],
    ]);
    expect(update.security).toEqual([{ bearer: [] }, {}]);
    expect(Object.keys(update.responses)).toEqual(expect.arrayContaining(["200", "206", "304", "416", "401", "403", "404"]));
    // The document carries no TypeBox internals.
    expect(JSON.stringify(doc)).not.toContain("Symbol(");
  });

  test("gamma's update path has no product segment and its releases no product query", async () => {
    const { doc } = await documentOf("gamma");
    expect(doc.paths["/updates/{channel}/{platform}/{file}"]).toBeDefined();
    expect(doc.paths["/releases"]!.get!.parameters).toBeUndefined();
  });
});
