import { Type } from "@sinclair/typebox";
import type { AdminDeps } from "../../domain/admin/deps";
import { listTrials, TrialQuery } from "../../domain/admin/trials";
import { TrialStartModel, type Trials } from "../../domain/trials";
import * as A from "../answer-schemas";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS, BODY_ERRORS, LICENSE_STATE_ERRORS, NO_STORE } from "./shared";

const Timestamp = Type.String({ format: "date-time" });
const TrialView = Type.Object({
  license: Type.String({ description: "The licence the site made for the trial" }),
  started: Timestamp,
  ends: Type.Union([Timestamp, Type.Null()]),
  converted: Type.Union([Timestamp, Type.Null()], { description: "When a bought key was activated on the device; null while not" }),
  convertedTo: Type.Union([Type.String(), Type.Null()], { description: "The bought licence" }),
});
const TrialPage = Type.Object({
  ok: Type.Literal(true),
  trials: Type.Array(TrialView),
  counts: Type.Object({ started: Type.Integer(), converted: Type.Integer() }),
  next: Type.Union([Type.String(), Type.Null()]),
});

/** POST /trials/start (docs/trials-and-meters.md, "How to run a trial"). */
export function trialEndpoints(trials: Trials): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/trials/start",
      summary: "Start (or find) this device's trial without a key: answered like an activation; one trial per device hash",
      auth: "none",
      budget: "signin",
      audit: "trial-start",
      precondition: () => void trials.requireEnabled(),
      body: TrialStartModel,
      answer: A.ActivationAnswer,
      errors: [...BODY_ERRORS, "not_found", ...LICENSE_STATE_ERRORS, "licensing_unavailable"],
      handler: async ({ body, context }) => json({ ok: true, ...(await trials.start(body, context)) }, 200, NO_STORE),
    }),
  ];
}

/** GET /admin/trials. */
export function adminTrialEndpoints(admin: AdminDeps): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/admin/trials",
      summary: "Trials, newest first, with how many were started and how many converted to a bought licence",
      auth: { scope: "licenses:read" },
      budget: "admin",
      audit: "trial-list",
      querySchema: TrialQuery,
      answer: TrialPage,
      errors: [...ADMIN_ERRORS],
      handler: async ({ queryValues, admin: caller }) => json({ ok: true, ...(await listTrials(admin, caller, queryValues)) }),
    }),
  ];
}
