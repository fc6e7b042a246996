import { at, count, id, ids, list, obj, text, unixTime, type Json } from "./payload";
import { ignoredEvent, saleEvent, type SaleAction, type SaleEvent, type SaleItem } from "./sale-event";

/**
 * Stripe's events as sale events (https://docs.stripe.com/api/events/types). Webhook events do not
 * carry a Checkout Session's line items, so:
 * - a subscription is bought by its first paid invoice (`invoice.paid`, billing_reason
 *   `subscription_create`): its lines name the prices and quantities, its period and the buyer;
 *   later paid invoices of the subscription renew it;
 * - a one-off purchase is a paid Checkout Session (`checkout.session.completed`, or
 *   `checkout.session.async_payment_succeeded` for delayed payment methods) whose metadata names
 *   the product (`keyturn_product`, a price or product id of the mapping; `seats` optional);
 * - `invoice_payment.paid` ties a payment (payment intent, charge) to its invoice;
 * - `charge.refunded` of the whole amount is a refund, `charge.dispute.created` a dispute, of the
 *   payment (payment intent) that bought or renewed a licence;
 * - `customer.subscription.updated` carries quantities; `customer.subscription.deleted` is the end.
 * Both the API versions from 2025-03-31 on (invoice `parent`, `payments`, line `pricing`) and the
 * older fields (`subscription`, `payment_intent`, line `price`) are read.
 */
export function stripeEvent(payload: Json): SaleEvent {
  const eventId = id(payload.id);
  const type = text(payload.type) ?? "";
  if (eventId === null || type === "") throw new Error("not a Stripe event (no id or type)");
  const o = obj(at(payload, "data", "object")) ?? {};
  const ignore = (why: string) => ignoredEvent("stripe", eventId, type, why);
  const act = (action: SaleAction) => saleEvent("stripe", eventId, type, action);
  switch (type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded": {
      if (o.mode === "subscription") return ignore("a subscription's licence is made by its first paid invoice (invoice.paid)");
      if (o.payment_status === "unpaid") return ignore("the session awaits its payment (checkout.session.async_payment_succeeded follows)");
      const product = id(at(o, "metadata", "keyturn_product"));
      if (product === null) return ignore("the session's metadata names no keyturn_product");
      const seats = Number(text(at(o, "metadata", "seats")) ?? "1");
      const details = obj(o.customer_details) ?? {};
      return act({
        kind: "purchase",
        references: ids(o.id, o.payment_intent),
        subscription: null,
        items: [{ ids: [product], quantity: count(seats) ?? 1 }],
        buyer: { email: text(details.email), name: text(details.name), organization: text(details.business_name) },
        periodEnd: null,
      });
    }
    case "invoice.paid": {
      const subscription = id(at(o, "parent", "subscription_details", "subscription")) ?? id(o.subscription);
      if (subscription === null) return ignore("the invoice is not a subscription's");
      const lines = list(at(o, "lines", "data"))
        .map(obj)
        .filter((l): l is Json => l !== null);
      const items = lines.map(lineItem).filter((i): i is SaleItem => i !== null);
      const ends = lines.map((l) => unixTime(at(l, "period", "end"))).filter((t): t is number => t !== null);
      const periodEnd = ends.length > 0 ? Math.max(...ends) : null;
      const payments = ids(...list(at(o, "payments", "data")).map((p) => at(p, "payment", "payment_intent")), o.payment_intent, o.charge);
      if (o.billing_reason === "subscription_create")
        return act({
          kind: "purchase",
          references: [subscription, ...ids(o.id), ...payments],
          subscription,
          items,
          buyer: { email: text(o.customer_email), name: text(o.customer_name), organization: null },
          periodEnd,
        });
      return act({ kind: "subscription", subscription, references: [], periodEnd, items: null, payments: [...ids(o.id), ...payments] });
    }
    case "invoice_payment.paid": {
      // From API 2025-03-31 an invoice no longer names its payment intent (its `payments` are not in
      // webhook events): this event ties the payment to the invoice, so its refund finds the licence.
      const invoice = id(o.invoice);
      const payments = ids(at(o, "payment", "payment_intent"), at(o, "payment", "charge"));
      if (invoice === null || payments.length === 0) return ignore("no invoice or payment named");
      return act({ kind: "payment", of: invoice, payments });
    }
    case "customer.subscription.updated": {
      const subscription = id(o.id);
      if (subscription === null) return ignore("no subscription id");
      const items = list(at(o, "items", "data"))
        .map((i): SaleItem | null => {
          const price = obj(at(i, "price")) ?? {};
          const quantity = count(at(i, "quantity"));
          return quantity === null ? null : { ids: ids(price.id, price.product), quantity };
        })
        .filter((i): i is SaleItem => i !== null);
      const created = typeof payload.created === "number" && Number.isSafeInteger(payload.created) ? payload.created * 1000 : null;
      return act({ kind: "subscription", subscription, references: [], periodEnd: null, items, payments: [], changedAt: created });
    }
    case "customer.subscription.deleted": {
      const subscription = id(o.id);
      if (subscription === null) return ignore("no subscription id");
      return act({ kind: "cancellation", subscription });
    }
    case "charge.refunded":
      if (o.refunded !== true) return ignore("a partial refund: the licence is kept");
      return act({ kind: "refund", references: ids(o.payment_intent, o.id, o.invoice) });
    case "charge.dispute.created":
      return act({ kind: "dispute", references: ids(o.payment_intent, o.charge) });
    default:
      return ignore("an event type the bridge does not act on");
  }
}

/** An invoice line's price and product (`pricing.price_details` from API 2025-03-31, `price` before) and quantity. */
function lineItem(line: Json): SaleItem | null {
  const details = obj(at(line, "pricing", "price_details")) ?? {};
  const price = obj(line.price) ?? {};
  const found = ids(details.price, price.id, details.product, price.product);
  return found.length === 0 ? null : { ids: found, quantity: count(line.quantity) ?? 1 };
}
