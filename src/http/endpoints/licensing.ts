import { ActivateModel, RefreshModel, type Licensing } from "../../domain/licensing";
import * as A from "../answer-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { BEARER_ERRORS, BODY_ERRORS, LICENSE_STATE_ERRORS, NO_STORE } from "./shared";

/** POST /licenses/activate and the /entitlements endpoints. */
export function licensingEndpoints(licensing: Licensing): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/licenses/activate",
      summary: "Exchange a license key and a device for an entitlement token (takes or reuses a seat)",
      auth: "none",
      budget: "signin",
      audit: "activate",
      body: ActivateModel,
      answer: A.ActivationAnswer,
      errors: [...BODY_ERRORS, "license_unknown", ...LICENSE_STATE_ERRORS, "seat_limit", "licensing_unavailable"],
      handler: async ({ body, context }) => json({ ok: true, ...(await licensing.activate(body, context)) }, 200, NO_STORE),
    }),
    endpoint({
      method: "GET",
      path: "/entitlements/current",
      summary: "The entitlement as it is today in the site's records",
      auth: "entitlement",
      budget: "api",
      audit: "current",
      answer: A.CurrentAnswer,
      errors: [...BEARER_ERRORS, ...LICENSE_STATE_ERRORS],
      handler: async ({ principal }) => json({ ok: true, ...(await licensing.current(principal)) }),
    }),
    endpoint({
      method: "POST",
      path: "/entitlements/refresh",
      summary: "A new token for the bearer's activation",
      auth: "entitlement",
      budget: "api",
      audit: "refresh",
      body: RefreshModel,
      answer: A.ActivationAnswer,
      errors: [...BEARER_ERRORS, ...BODY_ERRORS, ...LICENSE_STATE_ERRORS, "device_mismatch", "licensing_unavailable"],
      handler: async ({ principal, body, context }) => json({ ok: true, ...(await licensing.refresh(principal, body.device, context)) }, 200, NO_STORE),
    }),
    endpoint({
      method: "POST",
      path: "/entitlements/deactivate",
      summary: "Give the seat back; every token of the activation stops working at once",
      auth: "entitlement",
      leaving: true,
      budget: "api",
      audit: "deactivate",
      answer: A.OkAnswer,
      // A licence that expired since does not stop an installation leaving.
      errors: BEARER_ERRORS.filter((code) => code !== "license_expired"),
      handler: async ({ principal, context }) => {
        await licensing.deactivate(principal, context);
        return json({ ok: true });
      },
    }),
  ];
}
