import { Type } from "@sinclair/typebox";
import { UsageModel, type Metering } from "../../domain/meters";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { BEARER_ERRORS, BODY_ERRORS, NO_STORE } from "./shared";

const UsageAnswer = Type.Object({
  ok: Type.Literal(true),
  remaining: Type.Integer({ minimum: 0, description: "What is left of the meter's limit in its current period (or in all, for a one-time pool)" }),
  resetsAt: Type.Optional(Type.String({ format: "date-time", description: "When the period starts again from zero; absent for a one-time pool" })),
});

const MetersAnswer = Type.Object({
  ok: Type.Literal(true),
  meters: Type.Record(
    Type.String(),
    Type.Object({
      limit: Type.Integer(),
      period: Type.Union([Type.String({ description: "e.g. 30d" }), Type.Null()], { description: "null: a one-time pool" }),
      used: Type.Integer({ description: "In the current period" }),
      remaining: Type.Integer({ minimum: 0 }),
      resetsAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
    }),
    { description: "The licence's meters by name; {} when it has none" },
  ),
});

/** GET and POST /entitlements/usage: metered use read and spent with the bearer (docs/trials-and-meters.md, "Metered use"). */
export function usageEndpoints(metering: Metering): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/entitlements/usage",
      summary: "What is left of each meter of the bearer's licence (nothing is spent)",
      auth: "entitlement",
      budget: "api",
      audit: "usage-read",
      answer: MetersAnswer,
      errors: [...BEARER_ERRORS],
      handler: async ({ principal }) => json({ ok: true, meters: await metering.meters(principal) }, 200, NO_STORE),
    }),
    endpoint({
      method: "POST",
      path: "/entitlements/usage",
      summary: "Spend an amount from a meter of the bearer's licence; over its limit: 403 usage_limit",
      auth: "entitlement",
      budget: "api",
      audit: "usage",
      body: UsageModel,
      answer: UsageAnswer,
      errors: [...BEARER_ERRORS, ...BODY_ERRORS, "not_found", "usage_limit", "idempotency_conflict"],
      handler: async ({ principal, body, context }) => json({ ok: true, ...(await metering.use(principal, body, context)) }, 200, NO_STORE),
    }),
  ];
}
