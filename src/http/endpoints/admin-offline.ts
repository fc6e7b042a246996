import { actorOf } from "../../domain/admin/deps";
import type { Licensing } from "../../domain/licensing";
import { answerOfflineRequest, OfflineAnswerModel } from "../../domain/offline-activation";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS, BODY_ERRORS, LICENSE_STATE_ERRORS } from "./shared";

/** POST /admin/activations/offline: an offline computer's request code in, its answer code out. */
export function adminOfflineEndpoints(licensing: Licensing): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/admin/activations/offline",
      summary: "Turn an offline computer's request code into its answer code: activates its device (takes or reuses a seat) and answers the token",
      auth: { scope: "activations:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      // An activation like any: its line (ok or refused) is `activate`, naming the admin token as actor.
      audit: "activate",
      body: OfflineAnswerModel,
      answer: S.AdminOfflineActivationAnswer,
      errors: [...ADMIN_ERRORS, ...BODY_ERRORS, "license_unknown", ...LICENSE_STATE_ERRORS, "seat_limit", "licensing_unavailable"],
      handler: async ({ body, admin: caller, context }) => {
        const done = await answerOfflineRequest(licensing, body, { address: context.address, actor: actorOf(caller.principal) });
        return json({ ok: true, ...done });
      },
    }),
  ];
}
