import { Elysia } from "elysia";
import { VERSION } from "../../version";
import { apiRoutes } from "../api-routes";
import type { AppDeps } from "../deps";
import { openApiDocument } from "../openapi";
import { json } from "../respond";

/** GET /health, /meta and /openapi.json: no bearer. */
export function siteRoutes(d: AppDeps) {
  const openapi = JSON.stringify(openApiDocument(d.variant, apiRoutes(d.variant), VERSION));
  return new Elysia()
    .get("/health", async () => {
      const details = await d.site.health();
      return json({ ok: true, ...details }, 200, { "cache-control": "no-store" });
    })
    .get("/meta", async () => json({ ok: true, ...(await d.site.meta()) }, 200, { "cache-control": "no-store" }))
    .get("/openapi.json", () => new Response(openapi, { headers: { "content-type": "application/json;charset=utf-8" } }));
}
