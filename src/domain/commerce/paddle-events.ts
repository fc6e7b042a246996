import { at, count, id, ids, isoTime, list, obj, text, type Json } from "./payload";
import { ignoredEvent, saleEvent, type SaleAction, type SaleEvent, type SaleItem } from "./sale-event";

/**
 * Paddle Billing's events as sale events (https://developer.paddle.com/webhooks/overview):
 * - `transaction.completed` of a checkout (any origin but a subscription's own renewals and
 *   changes) is a purchase: its items name prices (`price.id`) and products (`price.product_id`);
 *   one with origin `subscription_recurring` (or `subscription_update`, `subscription_payment_method_change`)
 *   is a renewal of its subscription, to its `billing_period.ends_at`;
 * - `subscription.updated` carries quantities; `subscription.canceled` is the end;
 * - an approved `adjustment.created`/`adjustment.updated` with action `refund` of type `full` is a
 *   refund, with action `chargeback` a dispute, of the transaction it names.
 * Paddle's transactions name the customer by id only: the buyer's e-mail is the transaction's
 * `custom_data.email` when the checkout passed one, else the e-mail of the customer's
 * `customer.created`/`customer.updated` event (Paddle sends it when the checkout makes the
 * customer, before the transaction completes), else the licence has none.
 */
export function paddleEvent(payload: Json): SaleEvent {
  const eventId = id(payload.event_id);
  const type = text(payload.event_type) ?? "";
  if (eventId === null || type === "") throw new Error("not a Paddle event (no event_id or event_type)");
  const o = obj(payload.data) ?? {};
  const ignore = (why: string) => ignoredEvent("paddle", eventId, type, why);
  const act = (action: SaleAction) => saleEvent("paddle", eventId, type, action);
  switch (type) {
    case "transaction.completed": {
      const transaction = id(o.id);
      if (transaction === null) return ignore("no transaction id");
      const subscription = id(o.subscription_id);
      const periodEnd = isoTime(at(o, "billing_period", "ends_at"));
      const items = list(o.items)
        .map(transactionItem)
        .filter((i): i is SaleItem => i !== null);
      const origin = text(o.origin);
      if (subscription !== null && origin !== null && origin.startsWith("subscription_"))
        return act({ kind: "subscription", subscription, references: [], periodEnd, items: null, payments: [transaction] });
      const custom = obj(o.custom_data) ?? {};
      return act({
        kind: "purchase",
        references: ids(transaction, subscription),
        subscription,
        items,
        buyer: { email: text(custom.email), name: text(custom.name), organization: text(custom.organization), customer: id(o.customer_id) },
        periodEnd: subscription === null ? null : periodEnd,
      });
    }
    case "customer.created":
    case "customer.updated": {
      const customer = id(o.id);
      const email = text(o.email);
      if (customer === null || email === null) return ignore("no customer id or e-mail");
      const updated = isoTime(o.updated_at) ?? isoTime(payload.occurred_at) ?? 0;
      return act({ kind: "customer", customer, email, updated });
    }
    case "subscription.updated": {
      const subscription = id(o.id);
      if (subscription === null) return ignore("no subscription id");
      const items = list(o.items)
        .map(transactionItem)
        .filter((i): i is SaleItem => i !== null);
      const changedAt = isoTime(o.updated_at) ?? isoTime(payload.occurred_at);
      return act({ kind: "subscription", subscription, references: [], periodEnd: null, items, payments: [], changedAt });
    }
    case "subscription.canceled": {
      const subscription = id(o.id);
      if (subscription === null) return ignore("no subscription id");
      return act({ kind: "cancellation", subscription });
    }
    case "adjustment.created":
    case "adjustment.updated": {
      const references = ids(o.transaction_id);
      if (o.action === "chargeback") return act({ kind: "dispute", references });
      if (o.action !== "refund") return ignore(`an adjustment of action ${JSON.stringify(text(o.action))}`);
      if (o.status !== "approved") return ignore(`a refund not approved (status ${JSON.stringify(text(o.status))})`);
      if (o.type === "partial") return ignore("a partial refund: the licence is kept");
      return act({ kind: "refund", references });
    }
    default:
      return ignore("an event type the bridge does not act on");
  }
}

function transactionItem(v: unknown): SaleItem | null {
  const price = obj(at(v, "price")) ?? {};
  const found = ids(price.id, at(v, "price_id"), price.product_id);
  return found.length === 0 ? null : { ids: found, quantity: count(at(v, "quantity")) ?? 1 };
}
