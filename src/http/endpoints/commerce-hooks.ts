import { Type } from "@sinclair/typebox";
import { MAX_BRIDGE_BODY, type CommerceBridges } from "../../domain/commerce/bridge";
import { PROVIDERS, type Provider } from "../../domain/commerce/sale-event";
import { KeyturnError } from "../../domain/errors";
import { salesPage, SALES } from "../../console/pages/sales";
import type { ConsoleDeps } from "../../console/deps";
import { BridgeEventQuery, listBridgeEvents } from "../../domain/commerce/bridge-events";
import { endpoint, type Endpoint } from "../endpoint";
import { consolePage } from "./console";
import { ADMIN_ERRORS } from "./shared";
import { json } from "../respond";
import { readWithin } from "../body";

const BridgeAnswer = Type.Object({
  ok: Type.Literal(true),
  event: Type.String({ description: "The provider's event id (Lemon Squeezy: a hash of the signed body)" }),
  type: Type.String({ description: "The provider's event type" }),
  outcome: Type.Union([Type.Literal("applied"), Type.Literal("ignored"), Type.Literal("replayed")], {
    description: "applied: a licence changed; ignored: nothing to do (an unknown product, a state already reached); replayed: handled before",
  }),
  detail: Type.String(),
  license: Type.Union([Type.String(), Type.Null()]),
});

const BridgeEventList = Type.Object({
  ok: Type.Literal(true),
  events: Type.Array(
    Type.Object({
      provider: Type.String(),
      event: Type.String(),
      type: Type.String(),
      received: Type.String({ format: "date-time" }),
      outcome: Type.Union([Type.Literal("applied"), Type.Literal("ignored")]),
      detail: Type.String(),
      license: Type.Union([Type.String(), Type.Null()]),
      replays: Type.Integer(),
    }),
  ),
  next: Type.Union([Type.String(), Type.Null()]),
});

/** The header each provider signs its deliveries in. */
const SIGNATURE_HEADER: Readonly<Record<Provider, string>> = { stripe: "stripe-signature", paddle: "paddle-signature", lemonsqueezy: "x-signature" };

/**
 * POST /hooks/{provider}: the commerce bridges' webhook receivers (domain/commerce/bridge.ts). A
 * good signature over the raw body is checked before anything else is read; every answer the
 * provider should not repeat is 2xx (an unknown product too), and every refusal (a bad signature,
 * a licence not made yet) is not, so the provider sends the event again.
 */
export function commerceHookEndpoints(bridges: CommerceBridges): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/hooks/{provider}",
      summary: "A Stripe, Paddle Billing or Lemon Squeezy webhook event: creates, renews, re-seats or revokes the licence it sold, once",
      auth: "none",
      budget: "api",
      audit: "bridge-event",
      params: [{ name: "provider", description: "The commerce provider whose bridge is called", values: PROVIDERS }],
      headers: [
        { name: "Stripe-Signature", description: "Stripe's signature (t=…,v1=…), on /hooks/stripe", schema: Type.String() },
        { name: "Paddle-Signature", description: "Paddle's signature (ts=…;h1=…), on /hooks/paddle", schema: Type.String() },
        { name: "X-Signature", description: "Lemon Squeezy's signature (hex HMAC-SHA256 of the body), on /hooks/lemonsqueezy", schema: Type.String() },
      ],
      answer: BridgeAnswer,
      errors: ["invalid_request", "payload_too_large", "not_found", "unavailable"],
      handler: async ({ request, params, context }) => {
        const provider = params.provider as Provider;
        if (!bridges.isOn(provider)) throw new KeyturnError("not_found", `The ${provider} bridge is off on this site.`);
        const body = await readRaw(request);
        return json({ ok: true, ...(await bridges.receive(provider, request.headers.get(SIGNATURE_HEADER[provider]), body, context.address)) });
      },
    }),
  ];
}

/** The body's bytes as sent (the signature is over them), within MAX_BRIDGE_BODY. */
async function readRaw(request: Request): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > MAX_BRIDGE_BODY) throw tooLarge();
  if (!request.body) throw new KeyturnError("invalid_request", "The request needs the provider's JSON body.");
  return readWithin(request.body, MAX_BRIDGE_BODY, tooLarge);
}

const tooLarge = () => new KeyturnError("payload_too_large", `A provider's event is limited to ${MAX_BRIDGE_BODY / 1024} KiB.`);

/** GET /admin/bridge-events and the console's /console/sales: what the bridges received (licenses:read). */
export function bridgeEventEndpoints(web: ConsoleDeps): { admin: Endpoint[]; console: Endpoint[] } {
  return {
    admin: [
      endpoint({
        method: "GET",
        path: "/admin/bridge-events",
        summary: "The events the commerce bridges received, newest first, each with its outcome (applied, ignored), its licence and how often it came again",
        auth: { scope: "licenses:read" },
        budget: "admin",
        audit: "bridge-event-list",
        querySchema: BridgeEventQuery,
        query: [
          { name: "cursor", description: "The previous page's `next`" },
          { name: "limit", description: "1 to 200, 50 if absent" },
        ],
        answer: BridgeEventList,
        errors: [...ADMIN_ERRORS, "invalid_request"],
        handler: async ({ admin: caller, queryValues }) => json({ ok: true, ...(await listBridgeEvents(web.admin, caller, queryValues)) }),
      }),
    ],
    console: [
      consolePage("GET", SALES, "What the commerce bridges received, with the outcome of each", "bridge-event-list", (p) =>
        salesPage(web, p.session, p.address, new URLSearchParams(p.call.query)),
      ),
    ],
  };
}
