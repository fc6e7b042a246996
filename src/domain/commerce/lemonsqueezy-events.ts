import { createHash } from "node:crypto";
import { at, count, id, ids, isoTime, obj, text, type Json } from "./payload";
import { ignoredEvent, saleEvent, type SaleAction, type SaleEvent } from "./sale-event";

/**
 * Lemon Squeezy's events as sale events (https://docs.lemonsqueezy.com/help/webhooks/event-types):
 * - `order_created` of a paid order is a purchase (`first_order_item`: variant and product);
 * - `subscription_created` ties the subscription to the order's licence, and it and
 *   `subscription_updated` carry the paid period (`renews_at`, while the subscription is active)
 *   and the quantity (`first_subscription_item.quantity`); `subscription_expired` is the end
 *   (`subscription_cancelled` only stops renewals: the licence runs to its end);
 * - `order_refunded` of the whole order, and `subscription_payment_refunded`, are refunds.
 * Lemon Squeezy has no chargeback event (its list: the SDK's `Events` type,
 * @lemonsqueezy/lemonsqueezy.js): a dispute reaches keyturn only as the refund it ends in.
 * Its events carry no id of their own: the id here is a hash of the signed body, which a retry of
 * the same delivery repeats (a later event about the same order has another `updated_at`).
 */
export function lemonSqueezyEvent(payload: Json, rawBody: Uint8Array): SaleEvent {
  const type = text(at(payload, "meta", "event_name")) ?? "";
  if (type === "" || obj(payload.data) === null) throw new Error("not a Lemon Squeezy event (no meta.event_name or data)");
  const eventId = `ls_${createHash("sha256").update(rawBody).digest("hex").slice(0, 40)}`;
  const data = obj(payload.data)!;
  const a = obj(data.attributes) ?? {};
  const ignore = (why: string) => ignoredEvent("lemonsqueezy", eventId, type, why);
  const act = (action: SaleAction) => saleEvent("lemonsqueezy", eventId, type, action);
  const custom = obj(at(payload, "meta", "custom_data")) ?? {};
  switch (type) {
    case "order_created": {
      const order = id(data.id);
      if (order === null) return ignore("no order id");
      if (a.status !== "paid") return ignore(`the order is ${JSON.stringify(text(a.status))}, not paid`);
      const item = obj(a.first_order_item) ?? {};
      return act({
        kind: "purchase",
        references: [`order:${order}`],
        subscription: null,
        items: [{ ids: ids(item.variant_id, item.product_id), quantity: count(item.quantity) ?? 1 }],
        buyer: { email: text(a.user_email), name: text(a.user_name), organization: text(custom.organization) },
        periodEnd: null,
      });
    }
    case "subscription_created":
    case "subscription_updated": {
      const subscription = id(data.id);
      if (subscription === null) return ignore("no subscription id");
      const active = a.status === "active" || a.status === "on_trial";
      const quantity = count(at(a, "first_subscription_item", "quantity"));
      const order = id(a.order_id);
      return act({
        kind: "subscription",
        subscription: `subscription:${subscription}`,
        references: order === null ? [] : [`order:${order}`],
        periodEnd: active ? isoTime(a.renews_at) : null,
        items: quantity === null ? null : [{ ids: ids(a.variant_id, a.product_id), quantity }],
        payments: [],
        changedAt: isoTime(a.updated_at),
      });
    }
    case "subscription_expired": {
      const subscription = id(data.id);
      if (subscription === null) return ignore("no subscription id");
      return act({ kind: "cancellation", subscription: `subscription:${subscription}` });
    }
    case "order_refunded": {
      const order = id(data.id);
      if (order === null) return ignore("no order id");
      if (a.status !== "refunded") return ignore("a partial refund: the licence is kept");
      return act({ kind: "refund", references: [`order:${order}`] });
    }
    case "subscription_payment_refunded": {
      const subscription = id(a.subscription_id);
      if (subscription === null) return ignore("no subscription id");
      return act({ kind: "refund", references: [`subscription:${subscription}`] });
    }
    default:
      return ignore("an event type the bridge does not act on");
  }
}
