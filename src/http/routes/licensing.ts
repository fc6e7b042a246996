import { Elysia } from "elysia";
import type { AppDeps } from "../deps";
import { jsonBody } from "../body";
import { ActivateBody, RefreshBody } from "../schemas";

const activateBody = jsonBody(ActivateBody);
const refreshBody = jsonBody(RefreshBody);

/** POST /licenses/activate and the /entitlements endpoints. */
export function licensingRoutes(d: AppDeps) {
  const { licensing } = d;
  return new Elysia()
    .post(
      "/licenses/activate",
      async ({ request }) => {
        const body = await activateBody.read(request);
        return { ok: true, ...(await licensing.activate(body.key, body.device, d.context(request))) };
      },
      { parse: "none" },
    )
    .get("/entitlements/current", async ({ request }) => {
      const principal = await d.authenticate(request);
      return { ok: true, ...(await licensing.current(principal)) };
    })
    .post(
      "/entitlements/refresh",
      async ({ request }) => {
        const principal = await d.authenticate(request);
        const body = await refreshBody.read(request);
        return { ok: true, ...(await licensing.refresh(principal, body.device, d.context(request))) };
      },
      { parse: "none" },
    )
    .post(
      "/entitlements/deactivate",
      async ({ request }) => {
        const principal = await d.authenticate(request);
        await licensing.deactivate(principal, d.context(request));
        return { ok: true };
      },
      { parse: "none" },
    );
}
