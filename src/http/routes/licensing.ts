import { Elysia } from "elysia";
import type { AppDeps } from "../deps";
import { jsonBody } from "../body";
import { json } from "../respond";
import { ActivateBody, RefreshBody } from "../schemas";

const activateBody = jsonBody(ActivateBody);
const refreshBody = jsonBody(RefreshBody);

export type LicensingHandlers = ReturnType<typeof licensingHandlers>;

/**
 * The work of POST /licenses/activate and the /entitlements endpoints, the same whether Elysia or
 * the fast path (src/http/fast-path.ts) routed the request.
 */
export function licensingHandlers(d: AppDeps) {
  const { licensing } = d;
  return {
    activate: async (request: Request) => {
      const body = await activateBody.read(request);
      return json({ ok: true, ...(await licensing.activate(body.key, body.device, d.context(request))) });
    },
    current: async (request: Request) => {
      const principal = await d.authenticate(request);
      return json({ ok: true, ...(await licensing.current(principal)) });
    },
    refresh: async (request: Request) => {
      const principal = await d.authenticate(request);
      const body = await refreshBody.read(request);
      return json({ ok: true, ...(await licensing.refresh(principal, body.device, d.context(request))) });
    },
    deactivate: async (request: Request) => {
      const principal = await d.authenticate(request);
      await licensing.deactivate(principal, d.context(request));
      return json({ ok: true });
    },
  };
}

/** The licensing routes, below the API prefix. */
export const LICENSING_PATHS = {
  activate: "/licenses/activate",
  current: "/entitlements/current",
  refresh: "/entitlements/refresh",
  deactivate: "/entitlements/deactivate",
} as const;

export function licensingRoutes(h: LicensingHandlers) {
  return new Elysia()
    .post(LICENSING_PATHS.activate, ({ request }) => h.activate(request), { parse: "none" })
    .get(LICENSING_PATHS.current, ({ request }) => h.current(request))
    .post(LICENSING_PATHS.refresh, ({ request }) => h.refresh(request), { parse: "none" })
    .post(LICENSING_PATHS.deactivate, ({ request }) => h.deactivate(request), { parse: "none" });
}
