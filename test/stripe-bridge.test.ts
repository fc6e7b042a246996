import { afterEach, beforeEach, expect, test } from "bun:test";
import Stripe from "stripe";
import { stripeBridge, type KeyDelivery, type StripeBridgeOptions } from "../docs/examples/stripe-bridge";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createAdminToken } from "../src/domain/admin/tokens";
import { device, testSite, type TestSite } from "./helpers";

/** The Stripe example against a real site over real HTTP, fed events signed with Stripe's own helper. */
const SECRET = "whsec_" + Buffer.from("stripe-bridge-test-secret").toString("base64");
const DAY = 24 * 3600 * 1000;
let site: TestSite;
let api: string;
let token: string;
let delivered: KeyDelivery[];
const logs: string[] = [];
let bridge: (request: Request) => Promise<Response>;

function makeBridge(extra: Partial<StripeBridgeOptions> = {}) {
  return stripeBridge({
    keyturnUrl: api.replace(/\/api\/v1$/, ""),
    adminToken: token,
    stripeWebhookSecret: SECRET,
    plans: { pro: { title: "Professional", channels: ["stable", "preview"], seats: 2 }, team: { title: "Team", channels: ["stable"] } },
    deliverKey: async (d) => void delivered.push(d),
    log: (m) => void logs.push(m),
    now: site.clock,
    ...extra,
  });
}

beforeEach(async () => {
  site = await testSite("alpha");
  const server = site.app.listen({ hostname: "127.0.0.1", port: 0 });
  api = `http://127.0.0.1:${server.port}/api/v1`;
  ({ secret: token } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "stripe", scopes: ["licenses:read", "licenses:write"] }));
  delivered = [];
  bridge = makeBridge();
});
afterEach(async () => {
  if (process.env.BRIDGE_LOG) console.log(logs.join("\n"));
  logs.length = 0;
  await site.app.stop(true);
  await site.close();
});

const event = (id: string, type: string, object: Record<string, unknown>) =>
  JSON.stringify({ id, object: "event", api_version: "2025-10-29.clover", created: Math.floor(Date.now() / 1000), type, data: { object } });

async function send(payload: string, signedPayload = payload): Promise<Response> {
  const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload: signedPayload, secret: SECRET });
  return bridge(
    new Request("http://bridge.test/stripe", { method: "POST", headers: { "stripe-signature": signature, "content-type": "application/json" }, body: payload }),
  );
}

const session = (extra: Record<string, unknown> = {}) => ({
  id: "cs_test_a1",
  object: "checkout.session",
  mode: "payment",
  payment_status: "paid",
  customer: "cus_A1",
  payment_intent: "pi_A1",
  subscription: null,
  customer_details: { name: "Grace Hopper", email: "grace@example.com", business_name: "Navy Labs" },
  metadata: { plan: "pro" },
  ...extra,
});

const admin = async (path: string) => (await fetch(`${api}/admin${path}`, { headers: { authorization: `Bearer ${token}` } })).json() as Promise<any>;
const allLicenses = async () => (await admin("/licenses")).licenses as any[];

test("a paid checkout makes one licence even when Stripe sends the event again, and its key activates a device", async () => {
  const payload = event("evt_checkout_1", "checkout.session.completed", session({ metadata: { plan: "pro", seats: "3" } }));
  const first = await send(payload);
  expect(first.status).toBe(200);
  const again = await send(payload);
  expect(again.status).toBe(200);

  const licenses = await allLicenses();
  expect(licenses).toHaveLength(1);
  expect(licenses[0]).toMatchObject({
    licensee: "Grace Hopper",
    organization: "Navy Labs",
    email: "grace@example.com",
    plan: "pro",
    planTitle: "Professional",
    seats: 3,
    channels: ["stable", "preview"],
    expires: null,
    metadata: { stripe_event: "evt_checkout_1", stripe_session: "cs_test_a1", stripe_customer: "cus_A1", stripe_payment_intent: "pi_A1" },
  });
  // The retry within 24 h hands over the same key again (the first hand-over may have failed).
  expect(delivered.map((d) => d.key)).toEqual([delivered[0]!.key, delivered[0]!.key]);
  expect(delivered[0]!.session.id).toBe("cs_test_a1");

  const activated = await fetch(`${api}/licenses/activate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key: delivered[0]!.key, device: device("alpha") }),
  });
  expect(activated.status).toBe(200);
  expect(((await activated.json()) as any).entitlement).toMatchObject({ licensee: "Grace Hopper", plan: "pro", seats: { used: 1, total: 3 } });

  // Past the 24 h of the Idempotency-Key, a late retry finds the licence by its metadata and makes none.
  site.clock.advance(25 * 3600 * 1000);
  expect((await send(payload)).status).toBe(200);
  expect(await allLicenses()).toHaveLength(1);
  expect(delivered).toHaveLength(2);
});

test("a failing key hand-over answers 500 so Stripe retries, and the retry hands over the same key", async () => {
  let fail = true;
  bridge = makeBridge({
    deliverKey: async (d) => {
      if (fail) throw new Error("mail server down");
      delivered.push(d);
    },
  });
  const payload = event("evt_checkout_2", "checkout.session.completed", session());
  expect((await send(payload)).status).toBe(500);
  fail = false;
  expect((await send(payload)).status).toBe(200);
  const licenses = await allLicenses();
  expect(licenses).toHaveLength(1);
  expect(licenses[0].seats).toBe(2); // the plan's default
  const shown = await admin(`/licenses/${encodeURIComponent(delivered[0]!.key)}`);
  expect(shown.license.id).toBe(licenses[0].id);
});

test("a tampered or unsigned event is refused and changes nothing", async () => {
  const genuine = event("evt_checkout_3", "checkout.session.completed", session());
  const forged = genuine.replace('"seats"', '"x"').replace('"plan":"pro"', '"plan":"pro","seats":"500"');
  expect(forged).not.toBe(genuine);
  expect((await send(forged, genuine)).status).toBe(400);
  const unsigned = await bridge(new Request("http://bridge.test/stripe", { method: "POST", body: genuine }));
  expect(unsigned.status).toBe(400);
  const otherSecret = await Stripe.webhooks.generateTestHeaderStringAsync({ payload: genuine, secret: "whsec_" + Buffer.from("another").toString("base64") });
  expect((await bridge(new Request("http://bridge.test/stripe", { method: "POST", headers: { "stripe-signature": otherSecret }, body: genuine }))).status).toBe(
    400,
  );
  expect(await allLicenses()).toHaveLength(0);
  expect(delivered).toHaveLength(0);
});

test("a full refund revokes the licence bought with that payment, and its token is refused at once", async () => {
  await send(event("evt_checkout_4", "checkout.session.completed", session()));
  await send(
    event(
      "evt_checkout_5",
      "checkout.session.completed",
      session({ id: "cs_test_b2", payment_intent: "pi_B2", customer_details: { name: "Alan Kay", email: "alan@example.com" } }),
    ),
  );
  const activated = (await (
    await fetch(`${api}/licenses/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key: delivered[0]!.key, device: device("alpha") }),
    })
  ).json()) as any;
  const current = () => fetch(`${api}/entitlements/current`, { headers: { authorization: `Bearer ${activated.token}` } });
  expect((await current()).status).toBe(200);

  const charge = (extra: Record<string, unknown>) => ({
    id: "ch_A1",
    object: "charge",
    payment_intent: "pi_A1",
    billing_details: { email: "grace@example.com" },
    receipt_email: null,
    ...extra,
  });
  expect((await send(event("evt_refund_partial", "charge.refunded", charge({ refunded: false, amount_refunded: 500 })))).status).toBe(200);
  expect((await current()).status).toBe(200);

  // No e-mail on the charge: the bridge reads every licence to find the payment.
  const refunded = await send(event("evt_refund_full", "charge.refunded", charge({ refunded: true, billing_details: { email: null } })));
  expect(refunded.status).toBe(200);
  const refused = await current();
  expect(refused.status).toBe(403);
  expect(((await refused.json()) as any).error).toBe("license_revoked");
  const byStatus = (await admin("/licenses?status=revoked")).licenses as any[];
  expect(byStatus.map((l) => l.metadata.stripe_session)).toEqual(["cs_test_a1"]);
  // Stripe sending the refund again is answered 200 (already revoked), the other licence untouched.
  expect((await send(event("evt_refund_full", "charge.refunded", charge({ refunded: true })))).status).toBe(200);
  expect(((await admin("/licenses?status=active")).licenses as any[]).map((l) => l.metadata.stripe_session)).toEqual(["cs_test_b2"]);
});

test("a paid subscription invoice sets, then extends, the licence's expiry; before the licence exists Stripe is asked to retry", async () => {
  const periodEnd = (days: number) => Math.floor((site.clock() + days * DAY) / 1000);
  const invoice = (id: string, end: number) => ({
    id,
    object: "invoice",
    customer: "cus_S1",
    customer_email: "grace@example.com",
    billing_reason: "subscription_cycle",
    parent: { type: "subscription_details", subscription_details: { subscription: "sub_S1" } },
    lines: { object: "list", data: [{ id: "il_1", period: { start: end - 30 * 86400, end } }] },
  });
  const early = await send(event("evt_inv_0", "invoice.paid", invoice("in_0", periodEnd(30))));
  expect(early.status).toBe(500);

  await send(
    event(
      "evt_checkout_6",
      "checkout.session.completed",
      session({ id: "cs_test_s1", mode: "subscription", payment_intent: null, customer: "cus_S1", subscription: "sub_S1", metadata: { plan: "team" } }),
    ),
  );
  const [license] = await allLicenses();
  expect(license).toMatchObject({ plan: "team", seats: 1, expires: null, metadata: { stripe_subscription: "sub_S1" } });
  expect(license.metadata.stripe_payment_intent).toBeUndefined();

  expect((await send(event("evt_inv_0", "invoice.paid", invoice("in_0", periodEnd(30))))).status).toBe(200);
  const first = (await admin(`/licenses/${license.id}`)).license;
  expect(Date.parse(first.expires)).toBe(periodEnd(30) * 1000 + 3 * DAY);

  expect((await send(event("evt_inv_1", "invoice.paid", invoice("in_1", periodEnd(60))))).status).toBe(200);
  const renewed = (await admin(`/licenses/${license.id}`)).license;
  expect(Date.parse(renewed.expires)).toBe(periodEnd(60) * 1000 + 3 * DAY);
  // An older invoice arriving late never shortens it.
  expect((await send(event("evt_inv_0b", "invoice.paid", invoice("in_0", periodEnd(30))))).status).toBe(200);
  expect((await admin(`/licenses/${license.id}`)).license.expires).toBe(renewed.expires);
});

test("without metadata.plan the plan comes from the line item's price and the seats from its quantity; a session of another product is answered 200 and ignored (not retried for days)", async () => {
  bridge = makeBridge({
    prices: { price_team_yearly: "team" },
    lineItems: async (id) =>
      id === "cs_test_p1"
        ? [{ price: { id: "price_team_yearly" } as Stripe.Price, quantity: 5 }]
        : [{ price: { id: "price_other" } as Stripe.Price, quantity: 1 }],
  });
  expect((await send(event("evt_checkout_7", "checkout.session.completed", session({ id: "cs_test_p1", metadata: {} })))).status).toBe(200);
  const other = await send(event("evt_checkout_8", "checkout.session.completed", session({ id: "cs_test_p2", payment_intent: "pi_P2", metadata: {} })));
  expect(other.status).toBe(200);
  expect(((await other.json()) as { outcome: string }).outcome).toContain("ignored");
  expect(logs.at(-1)).toContain("cs_test_p2 is for no plan known here");
  // a plan named in metadata that this bridge does not sell: the same
  expect(
    (
      await send(
        event(
          "evt_checkout_8b",
          "checkout.session.completed",
          session({ id: "cs_test_p3", payment_intent: "pi_P3", metadata: { plan: "other-app", seats: "1" } }),
        ),
      )
    ).status,
  ).toBe(200);
  const licenses = await allLicenses();
  expect(licenses.map((l) => [l.plan, l.planTitle, l.seats, l.metadata.stripe_session])).toEqual([["team", "Team", 5, "cs_test_p1"]]);
  expect(delivered).toHaveLength(1);
});

test("an unpaid (delayed) checkout makes no licence until its payment succeeds", async () => {
  const pending = session({ id: "cs_test_d1", payment_status: "unpaid" });
  expect((await send(event("evt_checkout_9", "checkout.session.completed", pending))).status).toBe(200);
  expect(await allLicenses()).toHaveLength(0);
  expect((await send(event("evt_checkout_10", "checkout.session.async_payment_succeeded", { ...pending, payment_status: "paid" }))).status).toBe(200);
  expect(await allLicenses()).toHaveLength(1);
  expect(delivered).toHaveLength(1);
});

test("a full refund of a subscription's payment revokes its licence: each paid invoice's payment is remembered on it", async () => {
  const periodEnd = (days: number) => Math.floor((site.clock() + days * DAY) / 1000);
  const invoice = (id: string, end: number, paymentIntent: string) => ({
    id,
    object: "invoice",
    customer: "cus_R1",
    customer_email: "ada@example.com",
    parent: { type: "subscription_details", subscription_details: { subscription: "sub_R1" } },
    lines: { object: "list", data: [{ id: "il_r", period: { start: end - 30 * 86400, end } }] },
    payments: { object: "list", data: [{ id: "inpay_" + id, object: "invoice_payment", payment: { type: "payment_intent", payment_intent: paymentIntent } }] },
  });
  await send(
    event(
      "evt_sub_checkout",
      "checkout.session.completed",
      session({
        id: "cs_test_r1",
        mode: "subscription",
        payment_intent: null,
        customer: "cus_R1",
        subscription: "sub_R1",
        customer_details: { name: "Ada", email: "ada@example.com" },
        metadata: { plan: "team" },
      }),
    ),
  );
  expect((await send(event("evt_sub_inv_1", "invoice.paid", invoice("in_r1", periodEnd(30), "pi_R1")))).status).toBe(200);
  expect((await send(event("evt_sub_inv_2", "invoice.paid", invoice("in_r2", periodEnd(60), "pi_R2")))).status).toBe(200);
  expect((await send(event("evt_sub_inv_2", "invoice.paid", invoice("in_r2", periodEnd(60), "pi_R2")))).status).toBe(200); // sent again
  const [license] = await allLicenses();
  expect(license.metadata).toMatchObject({ stripe_subscription: "sub_R1", stripe_payment_intents: "pi_R2 pi_R1" });
  expect(Date.parse(license.expires)).toBe(periodEnd(60) * 1000 + 3 * DAY);

  const activated = (await (
    await fetch(`${api}/licenses/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key: delivered[0]!.key, device: device("alpha") }),
    })
  ).json()) as any;
  const refund = { id: "ch_R2", object: "charge", payment_intent: "pi_R2", refunded: true, billing_details: { email: "ada@example.com" }, receipt_email: null };
  expect((await send(event("evt_sub_refund", "charge.refunded", refund))).status).toBe(200);
  expect((await admin(`/licenses/${license.id}`)).license.revoked).not.toBeNull();
  const refused = await fetch(`${api}/entitlements/current`, { headers: { authorization: `Bearer ${activated.token}` } });
  expect(((await refused.json()) as any).error).toBe("license_revoked");
});

test("a buyer's name or organisation over keyturn's 200 characters (or with control characters) is cut, an e-mail keyturn refuses left out: the paid order gets its licence", async () => {
  const long = "Ü".repeat(150) + "\n" + "b".repeat(48) + "😀" + "c".repeat(100); // the emoji straddles character 200
  const email = "x".repeat(250) + "@example.com";
  const response = await send(
    event(
      "evt_checkout_long",
      "checkout.session.completed",
      session({ id: "cs_test_l1", payment_intent: "pi_L1", customer_details: { name: long, email, business_name: "O".repeat(400) } }),
    ),
  );
  expect(response.status).toBe(200);
  const [license] = await allLicenses();
  expect(license.licensee).toBe("Ü".repeat(150) + " " + "b".repeat(48));
  expect(license.organization).toBe("O".repeat(200));
  expect(license.email).toBeNull();
  expect(delivered.map((d) => d.license.id)).toEqual([license.id]);
  // and a refund finds it without the e-mail's help
  const refund = { id: "ch_L1", object: "charge", payment_intent: "pi_L1", refunded: true, billing_details: { email }, receipt_email: null };
  expect((await send(event("evt_refund_long", "charge.refunded", refund))).status).toBe(200);
  expect((await admin(`/licenses/${license.id}`)).license.revoked).not.toBeNull();
});
