import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import Stripe from "stripe";
import { lemon, paddle, stripe } from "../commerce-events";
import { LEMON_SECRET, lemonHeader, PADDLE_SECRET, paddle as paddleSdk, paddleHeader, STRIPE_SECRET, stripeHeader } from "../commerce-signers";
import { isoTime } from "../../src/domain/clock";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createLicense, rekeyLicense, updateLicense } from "../../src/domain/admin/licenses";
import { adoptStripeExampleLicences } from "../../src/domain/commerce/adopt-stripe-example";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { BASE, BASE_URL, device, testClock, testSite, type TestSite } from "../helpers";

/**
 * design.md "From sale to key": each bridge at /api/v1/hooks/{provider}, verified by the provider's
 * own scheme, idempotent on the provider's event id, mapping products to what they grant. Every
 * event is signed as its provider signs it (Stripe's SDK; Paddle's checked by Paddle's SDK, which
 * also parses each one; Lemon Squeezy's by openssl). The clock is the real one (the Paddle SDK
 * checks signatures against it), moved only forward by the test.
 */
const DAY = 24 * 3600 * 1000;
const PRODUCTS = {
  stripe: {
    price_pro_monthly: { plan: "pro", planTitle: "Professional", seats: 1, channels: ["stable"], grace: "3d", onCancel: "expire" },
    prod_desktop: { plan: "desktop", seats: 2, expiresAfter: "365d", onRefund: "revoke", onDispute: "revoke" },
    price_keep: { plan: "keep", onRefund: "keep", onCancel: "revoke" },
  },
  paddle: {
    pri_pro_monthly: { plan: "pro", seats: 1, channels: ["stable", "preview"], grace: "2d" },
    pro_desktop: { plan: "desktop", seats: 1 },
  },
  lemonsqueezy: {
    "501": { plan: "pro", seats: 1 },
    "600": { plan: "desktop", seats: 3, expiresAfter: "30d" },
  },
};

let site: TestSite;
let now: number;

beforeEach(async () => {
  const clock = testClock(Date.now());
  site = await testSite("alpha", {
    clock,
    settings: {
      "stripe-webhook-secret": STRIPE_SECRET,
      "paddle-webhook-secret": PADDLE_SECRET,
      "lemonsqueezy-webhook-secret": LEMON_SECRET,
      "bridge-products": JSON.stringify(PRODUCTS),
    },
  });
  now = clock();
});
afterEach(async () => {
  await site.close();
});

async function post(provider: string, body: string, headers: Record<string, string>): Promise<{ status: number; answer: any }> {
  const res = await site.app.handle(
    new Request(`${BASE}/hooks/${provider}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }),
  );
  return { status: res.status, answer: await res.json() };
}
const toStripe = async (body: string) => post("stripe", body, { "stripe-signature": await stripeHeader(body, site.clock()) });
async function toPaddle(body: string) {
  const header = await paddleHeader(body, site.clock());
  // Paddle's own SDK reads what keyturn reads: the event it unmarshals has the same id and type.
  if (Math.abs(site.clock() - Date.now()) < 4000) {
    const parsed = await paddleSdk.webhooks.unmarshal(body, PADDLE_SECRET, header);
    expect(parsed.eventId).toBe(JSON.parse(body).event_id);
  }
  return post("paddle", body, { "paddle-signature": header });
}
const toLemon = (body: string) => post("lemonsqueezy", body, { "x-signature": lemonHeader(body), "x-event-name": JSON.parse(body).meta.event_name });

async function licenses() {
  return (await site.admin.listLicenses()).map((r) => r.license);
}
async function license(id: string): Promise<any> {
  return site.composed.store.getLicense(id);
}

describe("Stripe", () => {
  test("buy, replay, renew, seats, refund of a renewal, dispute of a one-off, cancel, unknown product: the licence follows, nothing twice", async () => {
    const periodEnd = now + 30 * DAY;
    const buy = stripe.event(
      "evt_buy",
      "invoice.paid",
      stripe.invoicePaid({
        invoice: "in_1",
        subscription: "sub_1",
        reason: "subscription_create",
        price: "price_pro_monthly",
        product: "prod_pro",
        quantity: 2,
        periodEnd,
      }),
      now,
    );
    const first = await toStripe(buy);
    expect(first.status).toBe(200);
    expect(first.answer).toMatchObject({ ok: true, event: "evt_buy", type: "invoice.paid", outcome: "applied" });
    const id = first.answer.license as string;
    let l = await license(id);
    expect(l).toMatchObject({
      plan: "pro",
      planTitle: "Professional",
      seats: 2,
      channels: ["stable"],
      email: "ada@example.com",
      licensee: "Ada Lovelace",
      revoked: null,
    });
    expect(l.expires).toBe(Math.floor((periodEnd + 3 * DAY) / 1000) * 1000);
    expect(l.metadata).toMatchObject({ bridge: "stripe", bridge_product: "price_pro_monthly", bridge_subscription: "sub_1" });

    // Stripe sends it again (a retry, or a replay from the dashboard): nothing new.
    const again = await toStripe(buy);
    expect(again.status).toBe(200);
    expect(again.answer).toMatchObject({ outcome: "replayed", license: id });
    expect(await licenses()).toHaveLength(1);

    // Renewal: the next paid period moves the expiry.
    site.clock.advance(1000);
    // The renewal's payment can come before its invoice: it is noted against the invoice.
    const renewPayment = stripe.event(
      "evt_renew_payment",
      "invoice_payment.paid",
      stripe.invoicePayment({ invoice: "in_2", paymentIntent: "pi_2", charge: "ch_2" }),
      site.clock(),
    );
    expect((await toStripe(renewPayment)).answer).toMatchObject({ outcome: "ignored", license: null });
    const nextEnd = periodEnd + 30 * DAY;
    const renew = stripe.event(
      "evt_renew",
      "invoice.paid",
      stripe.invoicePaid({
        invoice: "in_2",
        subscription: "sub_1",
        reason: "subscription_cycle",
        price: "price_pro_monthly",
        product: "prod_pro",
        quantity: 2,
        periodEnd: nextEnd,
      }),
      site.clock(),
    );
    expect((await toStripe(renew)).answer.outcome).toBe("applied");
    expect((await license(id)).expires).toBe(Math.floor((nextEnd + 3 * DAY) / 1000) * 1000);
    expect((await toStripe(renew)).answer.outcome).toBe("replayed");

    // A quantity change re-seats it.
    const seats = stripe.event(
      "evt_seats",
      "customer.subscription.updated",
      stripe.subscription({ subscription: "sub_1", price: "price_pro_monthly", product: "prod_pro", quantity: 5 }),
      site.clock(),
    );
    expect((await toStripe(seats)).answer).toMatchObject({ outcome: "applied", detail: `licence ${id}: seats 2 → 5` });
    expect((await license(id)).seats).toBe(5);
    // Stripe does not deliver in order: a quantity made a minute before the 5 arrives after it, and is not applied.
    const updated = (event: string, quantity: number, at: number) =>
      stripe.event(
        event,
        "customer.subscription.updated",
        stripe.subscription({ subscription: "sub_1", price: "price_pro_monthly", product: "prod_pro", quantity }),
        at,
      );
    expect((await toStripe(updated("evt_seats_older", 3, site.clock() - 60_000))).answer).toMatchObject({ outcome: "ignored", license: id });
    expect((await license(id)).seats).toBe(5);
    expect((await toStripe(updated("evt_seats_newer", 4, site.clock() + 60_000))).answer).toMatchObject({
      outcome: "applied",
      detail: `licence ${id}: seats 5 → 4`,
    });
    expect((await license(id)).seats).toBe(4);
    // Made in the same second as the 4 (Stripe's times are whole seconds): which came last cannot be told, so the 4 stays.
    expect((await toStripe(updated("evt_seats_tie", 6, site.clock() + 60_000))).answer).toMatchObject({ outcome: "ignored", license: id });
    expect((await license(id)).seats).toBe(4);
    // 4, then 7, then 4 again, the 7 delivered last: the latest statement (4) stands.
    expect((await toStripe(updated("evt_seats_again", 4, site.clock() + 180_000))).answer).toMatchObject({
      outcome: "applied",
      detail: `licence ${id}: seats stay 4`,
    });
    expect((await toStripe(updated("evt_seats_between", 7, site.clock() + 120_000))).answer).toMatchObject({ outcome: "ignored", license: id });
    expect((await license(id)).seats).toBe(4);

    // The key works until the refund of the renewal's payment (the example kept such a licence).
    // The buyer's key went to their mailbox; the test takes a new one, as support would.
    const created = await rekeyLicense(site.composed.services.admin, CLI_CALLER, id);
    const act = await site.request("POST", "/licenses/activate", { body: { key: created.key, device: device("alpha") } });
    expect(act.status).toBe(200);
    const refund = stripe.event("evt_refund", "charge.refunded", stripe.charge({ charge: "ch_2", paymentIntent: "pi_2", refunded: true }), site.clock());
    expect((await toStripe(refund)).answer).toMatchObject({ outcome: "applied", detail: `refund: licence ${id} revoked`, license: id });
    expect((await license(id)).revoked).not.toBeNull();
    const refused = await site.request("POST", "/licenses/activate", { body: { key: created.key, device: device("alpha") } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error).toBe("license_revoked");
    expect((await toStripe(refund)).answer.outcome).toBe("replayed");

    // A one-off purchase (Checkout Session naming the product), then a dispute of its payment.
    const checkout = stripe.event(
      "evt_checkout",
      "checkout.session.completed",
      stripe.checkout({ session: "cs_1", product: "prod_desktop", paymentIntent: "pi_9", seats: "2" }),
      site.clock(),
    );
    const bought = await toStripe(checkout);
    expect(bought.answer.outcome).toBe("applied");
    const oneOff = await license(bought.answer.license);
    expect(oneOff).toMatchObject({ plan: "desktop", seats: 4, email: "grace@example.com", organization: "Navy Labs", channels: ["stable", "preview"] });
    expect(oneOff.expires).toBe(Math.floor((site.clock() + 365 * DAY) / 1000) * 1000);
    // The same session completed again by another event id finds its licence: none is made twice.
    const sameSession = stripe.event(
      "evt_checkout_async",
      "checkout.session.async_payment_succeeded",
      stripe.checkout({ session: "cs_1", product: "prod_desktop", paymentIntent: "pi_9" }),
      site.clock(),
    );
    expect((await toStripe(sameSession)).answer).toMatchObject({ outcome: "ignored", license: oneOff.id });
    const dispute = stripe.event(
      "evt_dispute",
      "charge.dispute.created",
      stripe.dispute({ dispute: "dp_1", charge: "ch_9", paymentIntent: "pi_9" }),
      site.clock(),
    );
    expect((await toStripe(dispute)).answer).toMatchObject({ outcome: "applied", detail: `dispute: licence ${oneOff.id} revoked` });
    expect((await license(oneOff.id)).revoked).not.toBeNull();

    // A partial refund keeps the licence; an unknown product is acknowledged and ignored.
    const partial = stripe.event("evt_partial", "charge.refunded", stripe.charge({ charge: "ch_3", paymentIntent: "pi_9", refunded: false }), site.clock());
    expect((await toStripe(partial)).answer.outcome).toBe("ignored");
    const other = stripe.event(
      "evt_other",
      "invoice.paid",
      stripe.invoicePaid({
        invoice: "in_9",
        subscription: "sub_9",
        reason: "subscription_create",
        price: "price_someone_else",
        product: "prod_else",
        quantity: 1,
        periodEnd,
      }),
      site.clock(),
    );
    const ignored = await toStripe(other);
    expect(ignored.status).toBe(200);
    expect(ignored.answer).toMatchObject({ outcome: "ignored", license: null });
    expect(ignored.answer.detail).toContain("no product of bridge-products.stripe");
    // An event that changes nothing has an audit line of its own, naming the bridge and the sender's address.
    const lines = await site.composed.store.listAudit({ limit: 500 });
    expect(
      lines.filter((l) => l.action === "bridge-event" && l.outcome === "ok" && l.actor === "bridge:stripe (Stripe bridge)" && l.address === "203.0.113.7")
        .length,
    ).toBeGreaterThanOrEqual(3);

    // Cancellation as the product says: "expire" keeps the paid period; "revoke" ends it.
    const keepBuy = stripe.event(
      "evt_keep",
      "invoice.paid",
      stripe.invoicePaid({
        invoice: "in_k",
        subscription: "sub_k",
        reason: "subscription_create",
        price: "price_keep",
        product: "prod_k",
        quantity: 1,
        periodEnd,
      }),
      site.clock(),
    );
    const keepId = (await toStripe(keepBuy)).answer.license;
    const keepPayment = stripe.event(
      "evt_keep_payment",
      "invoice_payment.paid",
      stripe.invoicePayment({ invoice: "in_k", paymentIntent: "pi_k", charge: "ch_k" }),
      site.clock(),
    );
    expect((await toStripe(keepPayment)).answer).toMatchObject({
      outcome: "ignored",
      license: keepId,
      detail: `payment pi_k, ch_k of in_k tied to licence ${keepId}`,
    });
    const keepRefund = stripe.event(
      "evt_keep_refund",
      "charge.refunded",
      stripe.charge({ charge: "ch_k", paymentIntent: "pi_k", refunded: true }),
      site.clock(),
    );
    expect((await toStripe(keepRefund)).answer.detail).toContain("kept, as the product's grant says");
    expect((await license(keepId)).revoked).toBeNull();
    const keepCancel = stripe.event(
      "evt_keep_cancel",
      "customer.subscription.deleted",
      stripe.subscription({ subscription: "sub_k", price: "price_keep", product: "prod_k", quantity: 1, status: "canceled" }),
      site.clock(),
    );
    expect((await toStripe(keepCancel)).answer.outcome).toBe("applied");
    expect((await license(keepId)).revoked).not.toBeNull();
    const cancelPro = stripe.event(
      "evt_cancel_pro",
      "customer.subscription.deleted",
      stripe.subscription({ subscription: "sub_1", price: "price_pro_monthly", product: "prod_pro", quantity: 5, status: "canceled" }),
      site.clock(),
    );
    expect((await toStripe(cancelPro)).answer.detail).toContain("runs to its paid end");
    // Its paid end is final now: marked, so that the reminders that a payment would have made moot are sent.
    expect((await license(id)).metadata.bridge_subscription_ended).toBe(isoTime(site.clock()));

    expect((await licenses()).map((x) => x.plan).sort()).toEqual(["desktop", "keep", "pro"]);
    // Every event is listed with its outcome; replays counted on the event, not listed again.
    const events = await site.composed.store.listBridgeEvents({ limit: 50 });
    expect(events.map((e) => e.eventId).sort()).toEqual(
      [
        "evt_buy",
        "evt_cancel_pro",
        "evt_checkout",
        "evt_checkout_async",
        "evt_dispute",
        "evt_keep",
        "evt_keep_cancel",
        "evt_keep_payment",
        "evt_keep_refund",
        "evt_other",
        "evt_partial",
        "evt_refund",
        "evt_renew",
        "evt_renew_payment",
        "evt_seats",
        "evt_seats_newer",
        "evt_seats_older",
        "evt_seats_tie",
        "evt_seats_again",
        "evt_seats_between",
      ].sort(),
    );
    expect(events.find((e) => e.eventId === "evt_buy")!.replays).toBe(1);
    // The changes' audit lines name the bridge.
    const audit = await site.composed.store.listAudit({ licenseId: id, limit: 20 });
    expect(audit.filter((a) => a.actor?.startsWith("bridge:stripe")).map((a) => a.action)).toEqual(
      expect.arrayContaining(["license-create", "license-update", "license-revoke"]),
    );
  });

  test("a bad or stale signature is refused (400) and changes nothing; an unsigned site bridge is off (404)", async () => {
    const buy = stripe.event(
      "evt_x",
      "invoice.paid",
      stripe.invoicePaid({
        invoice: "in_x",
        subscription: "sub_x",
        reason: "subscription_create",
        price: "price_pro_monthly",
        product: "prod_pro",
        quantity: 1,
        periodEnd: now + DAY,
      }),
      now,
    );
    const forged = await post("stripe", buy, {
      "stripe-signature": await Stripe.webhooks.generateTestHeaderStringAsync({ payload: buy, secret: "whsec_other" }),
    });
    expect(forged.status).toBe(400);
    expect(forged.answer).toMatchObject({ ok: false, error: "invalid_request" });
    const stale = await post("stripe", buy, { "stripe-signature": await stripeHeader(buy, now - 10 * 60 * 1000) });
    expect(stale.status).toBe(400);
    const unsigned = await post("stripe", buy, {});
    expect(unsigned.status).toBe(400);
    expect(await licenses()).toHaveLength(0);
    expect(await site.composed.store.listBridgeEvents({ limit: 5 })).toHaveLength(0);
    const refusals = await site.composed.store.listAudit({ error: "invalid_request", limit: 10 });
    expect(refusals.filter((a) => a.action === "bridge-event")).toHaveLength(3);
    const off = await testSite("alpha");
    try {
      const res = await off.app.handle(
        new Request(`${BASE}/hooks/stripe`, { method: "POST", body: buy, headers: { "stripe-signature": await stripeHeader(buy, now) } }),
      );
      expect(res.status).toBe(404);
      const unknown = await off.app.handle(new Request(`${BASE}/hooks/gumroad`, { method: "POST", body: "{}" }));
      expect(unknown.status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe("Paddle Billing", () => {
  test("buy, replay, renew, seats, refund, chargeback, cancel, unknown product", async () => {
    const periodEnd = now + 30 * DAY;
    const buy = paddle.event(
      "evt_p_buy",
      "transaction.completed",
      paddle.transaction({
        transaction: "txn_1",
        subscription: "sub_p1",
        origin: "web",
        price: "pri_pro_monthly",
        product: "pro_x",
        quantity: 3,
        periodEnd,
        email: "mary@example.com",
      }),
      now,
    );
    const first = await toPaddle(buy);
    expect(first.answer).toMatchObject({ outcome: "applied", event: "evt_p_buy" });
    const id = first.answer.license;
    expect(await license(id)).toMatchObject({ plan: "pro", seats: 3, email: "mary@example.com", channels: ["stable", "preview"] });
    expect((await license(id)).expires).toBe(Math.floor((periodEnd + 2 * DAY) / 1000) * 1000);
    expect((await toPaddle(buy)).answer.outcome).toBe("replayed");

    site.clock.advance(1000);
    const nextEnd = periodEnd + 30 * DAY;
    const renew = paddle.event(
      "evt_p_renew",
      "transaction.completed",
      paddle.transaction({
        transaction: "txn_2",
        subscription: "sub_p1",
        origin: "subscription_recurring",
        price: "pri_pro_monthly",
        product: "pro_x",
        quantity: 3,
        periodEnd: nextEnd,
      }),
      site.clock(),
    );
    expect((await toPaddle(renew)).answer.outcome).toBe("applied");
    expect((await license(id)).expires).toBe(Math.floor((nextEnd + 2 * DAY) / 1000) * 1000);

    const seats = paddle.event(
      "evt_p_seats",
      "subscription.updated",
      paddle.subscription({ subscription: "sub_p1", price: "pri_pro_monthly", product: "pro_x", quantity: 1 }),
      site.clock(),
    );
    expect((await toPaddle(seats)).answer.detail).toBe(`licence ${id}: seats 3 → 1`);

    const cancel = paddle.event(
      "evt_p_cancel",
      "subscription.canceled",
      paddle.subscription({ subscription: "sub_p1", price: "pri_pro_monthly", product: "pro_x", quantity: 1, status: "canceled" }),
      site.clock(),
    );
    expect((await toPaddle(cancel)).answer.detail).toContain("runs to its paid end");
    expect((await license(id)).revoked).toBeNull();

    const partial = paddle.event(
      "evt_p_partial",
      "adjustment.created",
      paddle.adjustment({ adjustment: "adj_0", transaction: "txn_2", action: "refund", type: "partial" }),
      site.clock(),
    );
    expect((await toPaddle(partial)).answer.outcome).toBe("ignored");
    const pending = paddle.event(
      "evt_p_pending",
      "adjustment.created",
      paddle.adjustment({ adjustment: "adj_1", transaction: "txn_2", action: "refund", status: "pending_approval" }),
      site.clock(),
    );
    expect((await toPaddle(pending)).answer.outcome).toBe("ignored");
    const approved = paddle.event(
      "evt_p_refund",
      "adjustment.updated",
      paddle.adjustment({ adjustment: "adj_1", transaction: "txn_2", action: "refund" }),
      site.clock(),
    );
    expect((await toPaddle(approved)).answer).toMatchObject({ outcome: "applied", detail: `refund: licence ${id} revoked` });
    expect((await license(id)).revoked).not.toBeNull();

    // Paddle names the buyer by customer id: the e-mail of its customer event is the licence's.
    const customer = paddle.event(
      "evt_p_customer",
      "customer.created",
      paddle.customer({ customer: "ctm_02", email: "rosalind@example.com", updatedAt: "2026-01-02T00:00:00Z" }),
      site.clock(),
    );
    expect((await toPaddle(customer)).answer).toMatchObject({ outcome: "ignored", license: null });
    const older = paddle.event(
      "evt_p_customer_old",
      "customer.updated",
      paddle.customer({ customer: "ctm_02", email: "old@example.com", updatedAt: "2026-01-01T12:00:00Z" }),
      site.clock(),
    );
    await toPaddle(older);
    const withCustomer = paddle.event(
      "evt_p_known",
      "transaction.completed",
      paddle.transaction({
        transaction: "txn_4",
        subscription: null,
        origin: "web",
        price: "pri_x",
        product: "pro_desktop",
        quantity: 1,
        periodEnd: null,
        customer: "ctm_02",
      }),
      site.clock(),
    );
    const known = await toPaddle(withCustomer);
    expect(await license(known.answer.license)).toMatchObject({ email: "rosalind@example.com", licensee: "rosalind@example.com" });

    // A one-off purchase by product id, disputed.
    const oneOff = paddle.event(
      "evt_p_once",
      "transaction.completed",
      paddle.transaction({
        transaction: "txn_3",
        subscription: null,
        origin: "web",
        price: "pri_unmapped",
        product: "pro_desktop",
        quantity: 1,
        periodEnd: null,
      }),
      site.clock(),
    );
    const bought = await toPaddle(oneOff);
    expect(await license(bought.answer.license)).toMatchObject({ plan: "desktop", expires: null, email: null, licensee: "Paddle Billing customer" });
    const chargeback = paddle.event(
      "evt_p_cb",
      "adjustment.created",
      paddle.adjustment({ adjustment: "adj_2", transaction: "txn_3", action: "chargeback" }),
      site.clock(),
    );
    expect((await toPaddle(chargeback)).answer.detail).toBe(`dispute: licence ${bought.answer.license} revoked`);

    const other = paddle.event(
      "evt_p_other",
      "transaction.completed",
      paddle.transaction({ transaction: "txn_9", subscription: null, origin: "web", price: "pri_else", product: "pro_else", quantity: 1, periodEnd: null }),
      site.clock(),
    );
    expect((await toPaddle(other)).answer).toMatchObject({ outcome: "ignored", license: null });
    expect(await licenses()).toHaveLength(3);
  });
});

describe("Lemon Squeezy", () => {
  test("buy (order, then its subscription), replay, renew, seats, refund; a subscription event before its order is answered for a retry", async () => {
    const renewsAt = now + 30 * DAY;
    // subscription_created can come first: answered 503 (Lemon Squeezy retries), nothing recorded.
    const subCreated = lemon.event(
      "subscription_created",
      "subscriptions",
      "77",
      lemon.subscription({ order: "1001", variant: 501, product: 50, quantity: 1, renewsAt, updatedAt: "2026-01-01T00:00:00Z" }),
    );
    const early = await toLemon(subCreated);
    expect(early.status).toBe(503);
    expect(await site.composed.store.listBridgeEvents({ limit: 5 })).toHaveLength(0);

    const order = lemon.event("order_created", "orders", "1001", lemon.order({ order: "1001", variant: 501, product: 50, updatedAt: "2026-01-01T00:00:00Z" }));
    const first = await toLemon(order);
    expect(first.answer.outcome).toBe("applied");
    const id = first.answer.license;
    expect(await license(id)).toMatchObject({ plan: "pro", seats: 1, email: "katherine@example.com", licensee: "Katherine Johnson", expires: null });
    expect((await toLemon(order)).answer.outcome).toBe("replayed");

    // The retried subscription_created now ties the subscription and sets the paid period.
    expect((await toLemon(subCreated)).answer.outcome).toBe("applied");
    expect((await license(id)).expires).toBe(Math.floor((renewsAt + 3 * DAY) / 1000) * 1000);

    site.clock.advance(1000);
    const renewed = lemon.event(
      "subscription_updated",
      "subscriptions",
      "77",
      lemon.subscription({ order: "1001", variant: 501, product: 50, quantity: 4, renewsAt: renewsAt + 30 * DAY, updatedAt: "2026-02-01T00:00:00Z" }),
    );
    expect((await toLemon(renewed)).answer.outcome).toBe("applied");
    expect(await license(id)).toMatchObject({ seats: 4, expires: Math.floor((renewsAt + 33 * DAY) / 1000) * 1000 });
    expect((await toLemon(renewed)).answer.outcome).toBe("replayed");

    const refund = lemon.event("subscription_payment_refunded", "subscription-invoices", "900", {
      subscription_id: 77,
      status: "refunded",
      updated_at: "2026-02-02T00:00:00Z",
    });
    expect((await toLemon(refund)).answer.detail).toBe(`refund: licence ${id} revoked`);

    // A one-off order refunded in full. (Lemon Squeezy sends no chargeback event at all.)
    const once = lemon.event(
      "order_created",
      "orders",
      "1002",
      lemon.order({ order: "1002", variant: 600, product: 60, quantity: 2, updatedAt: "2026-01-03T00:00:00Z" }),
    );
    const bought = (await toLemon(once)).answer.license;
    expect(await license(bought)).toMatchObject({ plan: "desktop", seats: 6 });
    const refunded = lemon.event(
      "order_refunded",
      "orders",
      "1002",
      lemon.order({ order: "1002", variant: 600, product: 60, status: "refunded", updatedAt: "2026-01-04T00:00:00Z" }),
    );
    expect((await toLemon(refunded)).answer.detail).toBe(`refund: licence ${bought} revoked`);

    const other = lemon.event("order_created", "orders", "1003", lemon.order({ order: "1003", variant: 999, product: 99, updatedAt: "2026-01-03T00:00:00Z" }));
    expect((await toLemon(other)).answer).toMatchObject({ outcome: "ignored", license: null });
    const forged = await post("lemonsqueezy", other, { "x-signature": lemonHeader(other, "not-the-secret") });
    expect(forged.status).toBe(400);
    expect(await licenses()).toHaveLength(2);
  });
});

describe("coming from the Stripe example", () => {
  test("its licences, adopted once, follow their renewals and refunds; before, the bridge found none", async () => {
    // As the example left them: its Stripe ids in the metadata, no bridge links.
    const created = await createLicense(site.composed.services.admin, CLI_CALLER, {
      licensee: "Old Customer",
      plan: "pro",
      seats: 1,
      channels: ["stable"],
      expires: new Date(now + 5 * DAY).toISOString(),
      metadata: { stripe_subscription: "sub_old", stripe_payment_intent: "pi_old", stripe_payment_intents: "pi_old2 pi_old3" },
    });
    const id = created.license.id;
    const renewal = (event: string, periodEnd: number) =>
      stripe.event(
        event,
        "invoice.paid",
        stripe.invoicePaid({
          invoice: `in_${event}`,
          subscription: "sub_old",
          reason: "subscription_cycle",
          price: "price_pro_monthly",
          product: "prod_pro",
          quantity: 1,
          periodEnd,
        }),
        site.clock(),
      );
    expect((await toStripe(renewal("evt_old_1", now + 35 * DAY))).answer).toMatchObject({ outcome: "ignored", license: null });

    const adopt = () => adoptStripeExampleLicences(site.composed.services.admin, CLI_CALLER, site.composed.config.bridges.products.stripe);
    expect(await adopt()).toEqual([{ license: id, references: ["sub_old", "pi_old", "pi_old2", "pi_old3"], product: "price_pro_monthly" }]);
    expect((await license(id)).metadata).toMatchObject({ bridge: "stripe", bridge_subscription: "sub_old", bridge_product: "price_pro_monthly" });
    expect(await adopt()).toEqual([]);
    // The example renewed it once more before the endpoint moved: a second run links that payment only.
    const metadata = { ...(await license(id)).metadata, stripe_payment_intents: "pi_old2 pi_old3 pi_old4" };
    await updateLicense(site.composed.services.admin, CLI_CALLER, id, { metadata });
    expect(await adopt()).toEqual([{ license: id, references: ["pi_old4"], product: "price_pro_monthly" }]);
    expect(await adopt()).toEqual([]);

    const periodEnd = now + 35 * DAY;
    expect((await toStripe(renewal("evt_old_2", periodEnd))).answer).toMatchObject({ outcome: "applied", license: id });
    expect((await license(id)).expires).toBe(Math.floor((periodEnd + 3 * DAY) / 1000) * 1000);
    const refund = stripe.event(
      "evt_old_refund",
      "charge.refunded",
      stripe.charge({ charge: "ch_old3", paymentIntent: "pi_old3", refunded: true }),
      site.clock(),
    );
    expect((await toStripe(refund)).answer).toMatchObject({ outcome: "applied", detail: `refund: licence ${id} revoked` });
  });
});

describe("coming from the Stripe example, several prices of one plan", () => {
  test("prices that renew alike (a monthly and a yearly of the same grant): the first by id; prices that differ: none, named in the output", async () => {
    const pro = site.composed.config.bridges.products.stripe.price_pro_monthly!;
    const make = async (licensee: string) =>
      (
        await createLicense(site.composed.services.admin, CLI_CALLER, {
          licensee,
          plan: "pro",
          seats: 1,
          channels: ["stable"],
          metadata: { stripe_subscription: `sub_${licensee}` },
        })
      ).license.id;
    const first = await make("a");
    const alike = await adoptStripeExampleLicences(site.composed.services.admin, CLI_CALLER, { price_yearly: pro, price_monthly: pro });
    expect(alike).toEqual([{ license: first, references: ["sub_a"], product: "price_monthly" }]);
    const second = await make("b");
    const differ = await adoptStripeExampleLicences(site.composed.services.admin, CLI_CALLER, {
      price_yearly: { ...pro, graceSeconds: 0 },
      price_monthly: pro,
    });
    expect(differ).toEqual([{ license: second, references: ["sub_b"], product: null }]);
  });
});

describe("plans", () => {
  /** The site again, with these [plans.NAME] and Paddle's bridge-products. */
  async function withPlans(plans: Record<string, unknown>, products: Record<string, unknown>) {
    await site.close();
    const clock = testClock(Date.now());
    site = await testSite("alpha", {
      clock,
      tables: { plans },
      settings: { "paddle-webhook-secret": PADDLE_SECRET, "bridge-products": JSON.stringify({ paddle: products }) },
    });
    now = clock();
  }

  test("a monthly plan with expiresAfter and updatesFor: each paid period extends both, so a paying subscriber never lapses", async () => {
    await withPlans({ monthly: { seats: 1, channels: ["stable"], expiresAfter: "31d", updatesFor: "31d" } }, { pri_monthly: { plan: "monthly" } });
    const paid = (end: number) => Math.floor((end + 3 * DAY) / 1000) * 1000;
    const periodEnd = now + 30 * DAY;
    const buy = paddle.event(
      "evt_m_buy",
      "transaction.completed",
      paddle.transaction({
        transaction: "txn_m1",
        subscription: "sub_m",
        origin: "web",
        price: "pri_monthly",
        product: "pro_m",
        quantity: 1,
        periodEnd,
        email: "m@example.com",
      }),
      now,
    );
    const id = (await toPaddle(buy)).answer.license;
    expect(await license(id)).toMatchObject({ expires: paid(periodEnd), updatesUntil: paid(periodEnd) });
    // Two more months, each paid: both move with the paid period.
    let end = periodEnd;
    for (const month of [2, 3]) {
      site.clock.advance(30 * DAY);
      end += 30 * DAY;
      const renew = paddle.event(
        `evt_m_renew_${month}`,
        "transaction.completed",
        paddle.transaction({
          transaction: `txn_m${month}`,
          subscription: "sub_m",
          origin: "subscription_recurring",
          price: "pri_monthly",
          product: "pro_m",
          quantity: 1,
          periodEnd: end,
        }),
        site.clock(),
      );
      expect((await toPaddle(renew)).answer.detail).toBe(`licence ${id}: updates until ${isoTime(paid(end))}, expires ${isoTime(paid(end))}`);
      expect(await license(id)).toMatchObject({ expires: paid(end), updatesUntil: paid(end) });
    }
  });

  test("a product naming a [plans.NAME] with updatesFor sells a perpetual licence: renewals extend its updates window, a refund ends it", async () => {
    await withPlans(
      { studio: { title: "Studio", seats: 2, channels: ["stable"], features: ["export-pdf"], updatesFor: "365d" } },
      { pri_studio_yearly: { plan: "studio", onRefund: "end-updates", onDispute: "revoke" } },
    );
    const periodEnd = now + 365 * DAY;
    const buy = paddle.event(
      "evt_s_buy",
      "transaction.completed",
      paddle.transaction({
        transaction: "txn_s1",
        subscription: "sub_s",
        origin: "web",
        price: "pri_studio_yearly",
        product: "pro_s",
        quantity: 2,
        periodEnd,
        email: "studio@example.com",
      }),
      now,
    );
    const id = (await toPaddle(buy)).answer.license;
    const bought = await license(id);
    // The plan's title, seats (× 2 bought), channels and features; no expiry; updates to the paid end plus grace.
    expect(bought).toMatchObject({ plan: "studio", planTitle: "Studio", seats: 4, channels: ["stable"], features: ["export-pdf"], expires: null });
    expect(bought.updatesUntil).toBe(Math.floor((periodEnd + 3 * DAY) / 1000) * 1000);

    site.clock.advance(1000);
    const nextEnd = periodEnd + 365 * DAY;
    const renew = paddle.event(
      "evt_s_renew",
      "transaction.completed",
      paddle.transaction({
        transaction: "txn_s2",
        subscription: "sub_s",
        origin: "subscription_recurring",
        price: "pri_studio_yearly",
        product: "pro_s",
        quantity: 2,
        periodEnd: nextEnd,
      }),
      site.clock(),
    );
    expect((await toPaddle(renew)).answer.detail).toContain("updates until");
    expect(await license(id)).toMatchObject({ expires: null, updatesUntil: Math.floor((nextEnd + 3 * DAY) / 1000) * 1000 });

    const refund = paddle.event(
      "evt_s_refund",
      "adjustment.created",
      paddle.adjustment({ adjustment: "adj_s", transaction: "txn_s2", action: "refund" }),
      site.clock(),
    );
    expect((await toPaddle(refund)).answer.outcome).toBe("applied");
    const after = await license(id);
    expect(after.revoked).toBeNull();
    expect(after.updatesUntil).toBe(Math.floor(site.clock() / 1000) * 1000);
    expect((await toPaddle(refund)).answer.outcome).toBe("replayed");

    const chargeback = paddle.event(
      "evt_s_cb",
      "adjustment.created",
      paddle.adjustment({ adjustment: "adj_s2", transaction: "txn_s1", action: "chargeback" }),
      site.clock(),
    );
    expect((await toPaddle(chargeback)).answer.detail).toBe(`dispute: licence ${id} revoked`);
  });
});

describe("the console and the admin API list what the bridges received", () => {
  test("/console/sales shows each event with its outcome and licence, escaped; /admin/bridge-events pages them; both need licenses:read", async () => {
    const buy = stripe.event(
      "evt_c_buy",
      "invoice.paid",
      stripe.invoicePaid({
        invoice: "in_c",
        subscription: "sub_c",
        reason: "subscription_create",
        price: "price_pro_monthly",
        product: "prod_c",
        quantity: 1,
        periodEnd: now + DAY,
        name: "<script>x</script>",
      }),
      now,
    );
    const id = (await toStripe(buy)).answer.license;
    await toStripe(buy);
    const other = stripe.event(
      "evt_c_other",
      "checkout.session.completed",
      stripe.checkout({ session: "cs_c", product: "<b>unknown</b>", paymentIntent: "pi_c2" }),
      now,
    );
    expect((await toStripe(other)).answer.outcome).toBe("ignored");

    const reader = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "support", scopes: ["licenses:read"] })).secret;
    const signIn = await site.app.handle(
      new Request("http://localhost/console/sign-in", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: new URL(BASE_URL).origin },
        body: new URLSearchParams({ token: reader }).toString(),
      }),
    );
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    const page = await site.app.handle(new Request("http://localhost/console/sales", { headers: { cookie } }));
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain('href="/console/sales" aria-current="page"');
    expect(text).toContain(`<a href="/console/licenses/${id}"><code>${id}</code></a>`);
    expect(text).toContain("evt_c_buy");
    expect(text).toContain("<strong>applied</strong>");
    expect(text).toContain("<strong>ignored</strong>: no product of bridge-products.stripe among &lt;b&gt;unknown&lt;/b&gt;");
    expect(text).not.toContain("<b>unknown</b>");
    const rows = [...text.matchAll(/<tr><td>.*?<\/td><td>Stripe<\/td>[\s\S]*?<td>(\d+)<\/td><\/tr>/g)].map((m) => m[1]);
    expect(rows).toEqual(["0", "1"]);

    const api = await site.request("GET", "/admin/bridge-events?limit=1", { token: reader });
    const first = (await api.json()) as any;
    expect(first.events).toHaveLength(1);
    expect(first.events[0]).toMatchObject({ provider: "stripe", event: "evt_c_other", outcome: "ignored", license: null, replays: 0 });
    const second = (await (await site.request("GET", `/admin/bridge-events?limit=1&cursor=${first.next}`, { token: reader })).json()) as any;
    expect(second.events[0]).toMatchObject({ event: "evt_c_buy", outcome: "applied", license: id, replays: 1 });
    expect(second.next).toBeNull();

    const writer = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "w", scopes: ["webhooks:read"] })).secret;
    expect((await site.request("GET", "/admin/bridge-events", { token: writer })).status).toBe(403);
  });
});

if (!PG_URL && process.env.CI !== "true") announceSkip("test/http/commerce-bridges.test.ts (PostgreSQL part)", "KEYTURN_TEST_POSTGRES_URL");
describe.skipIf(!PG_URL && process.env.CI !== "true")("on PostgreSQL", () => {
  test("the same purchase delivered twice at once, and a refund twice at once: one licence, one revocation", async () => {
    const schema = await freshSchema();
    const clock = testClock(Date.now());
    const pg = await testSite("alpha", {
      clock,
      settings: { database: schema.url, "stripe-webhook-secret": STRIPE_SECRET, "bridge-products": JSON.stringify(PRODUCTS) },
    });
    try {
      const at = clock();
      const buy = stripe.event(
        "evt_pg_buy",
        "checkout.session.completed",
        stripe.checkout({ session: "cs_pg", product: "prod_desktop", paymentIntent: "pi_pg" }),
        at,
      );
      const header = { "stripe-signature": await stripeHeader(buy, at) };
      const deliver = (body: string, h: Record<string, string>) =>
        pg.app
          .handle(new Request(`${BASE}/hooks/stripe`, { method: "POST", headers: { "content-type": "application/json", ...h }, body }))
          .then(async (r) => ({ status: r.status, answer: (await r.json()) as any }));
      const both = await Promise.all([deliver(buy, header), deliver(buy, header)]);
      expect(both.map((b) => b.status)).toEqual([200, 200]);
      expect(both.map((b) => b.answer.outcome).sort()).toEqual(["applied", "replayed"]);
      expect(await pg.composed.store.listLicenses()).toHaveLength(1);
      const refund = stripe.event("evt_pg_refund", "charge.refunded", stripe.charge({ charge: "ch_pg", paymentIntent: "pi_pg", refunded: true }), at);
      const rh = { "stripe-signature": await stripeHeader(refund, at) };
      const refunds = await Promise.all([deliver(refund, rh), deliver(refund, rh)]);
      expect(refunds.map((b) => b.answer.outcome).sort()).toEqual(["applied", "replayed"]);
      const audit = await pg.composed.store.listAudit({ licenseId: both[0]!.answer.license, limit: 10 });
      expect(audit.filter((a) => a.action === "license-revoke")).toHaveLength(1);
    } finally {
      await pg.close();
      await schema.drop();
    }
  });
});
