import { Elysia } from "elysia";
import type { AppDeps } from "../deps";
import { jsonBody } from "../body";
import type { ExactRoute } from "../fast-path";
import { json } from "../respond";
import { ActivateBody, RefreshBody } from "../schemas";

const activateBody = jsonBody(ActivateBody);
const refreshBody = jsonBody(RefreshBody);

/**
 * POST /licenses/activate and the /entitlements endpoints (below the API prefix), each with its
 * whole work. Elysia's routes and the fast path (src/http/fast-path.ts) are both made from this one
 * table, so a request gets the same answer whichever routed it.
 */
export function licensingRouteTable(d: AppDeps): readonly ExactRoute[] {
  const { licensing } = d;
  return [
    {
      method: "POST",
      path: "/licenses/activate",
      handler: async (request) => {
        const body = await activateBody.read(request);
        return json({ ok: true, ...(await licensing.activate(body.key, body.device, d.context(request))) });
      },
    },
    {
      method: "GET",
      path: "/entitlements/current",
      handler: async (request) => {
        const principal = await d.authenticate(request);
        return json({ ok: true, ...(await licensing.current(principal)) });
      },
    },
    {
      method: "POST",
      path: "/entitlements/refresh",
      handler: async (request) => {
        const principal = await d.authenticate(request);
        const body = await refreshBody.read(request);
        return json({ ok: true, ...(await licensing.refresh(principal, body.device, d.context(request))) });
      },
    },
    {
      method: "POST",
      path: "/entitlements/deactivate",
      handler: async (request) => {
        const principal = await d.authenticate(request);
        await licensing.deactivate(principal, d.context(request));
        return json({ ok: true });
      },
    },
  ];
}

export function licensingRoutes(table: readonly ExactRoute[]) {
  const routes = new Elysia();
  // Bodies are read by the handlers themselves (limited, strict UTF-8), never by Elysia.
  for (const r of table) routes.route(r.method, r.path, ({ request }) => r.handler(request), r.method === "GET" ? {} : { parse: "none" });
  return routes;
}
