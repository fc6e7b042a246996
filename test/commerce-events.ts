/**
 * Provider events as the providers send them (the fields keyturn reads and those their SDKs need),
 * for the bridge tests. Shapes: Stripe API 2025-03-31 and later (invoice `parent`, `payments`,
 * line `pricing`), Paddle Billing notifications (parsed by @paddle/paddle-node-sdk in the tests),
 * Lemon Squeezy JSON:API webhooks.
 */
const seconds = (ms: number) => Math.floor(ms / 1000);
const iso = (ms: number) => new Date(ms).toISOString();

export const stripe = {
  event: (id: string, type: string, object: Record<string, unknown>, now: number) =>
    JSON.stringify({ id, object: "event", api_version: "2025-10-29.clover", created: seconds(now), livemode: false, type, data: { object } }),

  invoicePaid(o: {
    invoice: string;
    subscription: string;
    reason: "subscription_create" | "subscription_cycle" | "subscription_update";
    price: string;
    product: string;
    quantity: number;
    periodEnd: number;
    email?: string;
    name?: string;
  }) {
    return {
      id: o.invoice,
      object: "invoice",
      billing_reason: o.reason,
      customer: "cus_T1",
      customer_email: o.email ?? "ada@example.com",
      customer_name: o.name ?? "Ada Lovelace",
      status: "paid",
      parent: { type: "subscription_details", subscription_details: { subscription: o.subscription, metadata: {} } },
      // From API 2025-03-31 an invoice names no payment intent, and its `payments` are not in webhook
      // events: invoice_payment.paid (below) ties the payment to the invoice.
      lines: {
        object: "list",
        data: [
          {
            id: `il_${o.invoice}`,
            object: "line_item",
            quantity: o.quantity,
            period: { start: seconds(o.periodEnd) - 30 * 86400, end: seconds(o.periodEnd) },
            pricing: { type: "price_details", price_details: { price: o.price, product: o.product } },
          },
        ],
      },
    };
  },

  invoicePayment(o: { invoice: string; paymentIntent: string; charge: string }) {
    return {
      id: `inpay_${o.invoice}`,
      object: "invoice_payment",
      invoice: o.invoice,
      is_default: true,
      status: "paid",
      payment: { type: "payment_intent", payment_intent: o.paymentIntent, charge: o.charge },
    };
  },

  checkout(o: { session: string; product: string; paymentIntent: string; email?: string; seats?: string; paid?: boolean }) {
    return {
      id: o.session,
      object: "checkout.session",
      mode: "payment",
      payment_status: o.paid === false ? "unpaid" : "paid",
      payment_intent: o.paymentIntent,
      customer_details: { email: o.email ?? "grace@example.com", name: "Grace Hopper", business_name: "Navy Labs" },
      metadata: { keyturn_product: o.product, ...(o.seats ? { seats: o.seats } : {}) },
    };
  },

  subscription(o: { subscription: string; price: string; product: string; quantity: number; status?: string }) {
    return {
      id: o.subscription,
      object: "subscription",
      status: o.status ?? "active",
      items: { object: "list", data: [{ id: `si_${o.subscription}`, quantity: o.quantity, price: { id: o.price, product: o.product } }] },
    };
  },

  charge(o: { charge: string; paymentIntent: string; refunded: boolean }) {
    return { id: o.charge, object: "charge", payment_intent: o.paymentIntent, refunded: o.refunded, amount: 1000, amount_refunded: o.refunded ? 1000 : 400 };
  },

  dispute(o: { dispute: string; charge: string; paymentIntent: string }) {
    return { id: o.dispute, object: "dispute", charge: o.charge, payment_intent: o.paymentIntent, reason: "fraudulent", status: "needs_response" };
  },
};

const paddlePrice = (price: string, product: string) => ({
  id: price,
  product_id: product,
  description: "Monthly",
  type: "standard",
  name: "Monthly",
  billing_cycle: { interval: "month", frequency: 1 },
  trial_period: null,
  tax_mode: "account_setting",
  unit_price: { amount: "1000", currency_code: "USD" },
  unit_price_overrides: [],
  quantity: { minimum: 1, maximum: 100 },
  status: "active",
  custom_data: null,
  import_meta: null,
  created_at: "2026-01-01T00:00:00Z",
  updated_at: "2026-01-01T00:00:00Z",
});

export const paddle = {
  event: (eventId: string, type: string, data: Record<string, unknown>, now: number) =>
    JSON.stringify({ event_id: eventId, event_type: type, occurred_at: iso(now), notification_id: `ntf_${eventId}`, data }),

  transaction(o: {
    transaction: string;
    subscription: string | null;
    origin: "web" | "api" | "subscription_recurring";
    price: string;
    product: string;
    quantity: number;
    periodEnd: number | null;
    email?: string;
    customer?: string;
  }) {
    return {
      id: o.transaction,
      status: "completed",
      customer_id: o.customer ?? "ctm_01",
      address_id: "add_01",
      business_id: null,
      custom_data: o.email === undefined ? null : { email: o.email },
      currency_code: "USD",
      origin: o.origin,
      subscription_id: o.subscription,
      invoice_id: null,
      invoice_number: null,
      collection_mode: "automatic",
      discount_id: null,
      billing_details: null,
      billing_period: o.periodEnd === null ? null : { starts_at: iso(o.periodEnd - 30 * 86400_000), ends_at: iso(o.periodEnd) },
      items: [{ price: paddlePrice(o.price, o.product), quantity: o.quantity, proration: null }],
      details: null,
      payments: [],
      checkout: { url: null },
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      billed_at: "2026-01-01T00:00:00Z",
    };
  },

  subscription(o: { subscription: string; price: string; product: string; quantity: number; status?: string }) {
    return {
      id: o.subscription,
      status: o.status ?? "active",
      customer_id: "ctm_01",
      address_id: "add_01",
      business_id: null,
      currency_code: "USD",
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      started_at: "2026-01-01T00:00:00Z",
      first_billed_at: "2026-01-01T00:00:00Z",
      next_billed_at: null,
      paused_at: null,
      canceled_at: null,
      discount: null,
      collection_mode: "automatic",
      billing_details: null,
      current_billing_period: null,
      billing_cycle: { interval: "month", frequency: 1 },
      scheduled_change: null,
      items: [
        {
          status: "active",
          quantity: o.quantity,
          recurring: true,
          created_at: "2026-01-01T00:00:00Z",
          updated_at: "2026-01-01T00:00:00Z",
          previously_billed_at: null,
          next_billed_at: null,
          trial_dates: null,
          price: paddlePrice(o.price, o.product),
        },
      ],
      custom_data: null,
      import_meta: null,
    };
  },

  customer(o: { customer: string; email: string; name?: string; updatedAt: string }) {
    return {
      id: o.customer,
      name: o.name ?? null,
      email: o.email,
      marketing_consent: false,
      status: "active",
      custom_data: null,
      locale: "en",
      created_at: "2026-01-01T00:00:00Z",
      updated_at: o.updatedAt,
      import_meta: null,
    };
  },

  adjustment(o: { adjustment: string; transaction: string; action: "refund" | "chargeback" | "credit"; status?: string; type?: "full" | "partial" }) {
    return {
      id: o.adjustment,
      action: o.action,
      type: o.type ?? "full",
      transaction_id: o.transaction,
      subscription_id: null,
      customer_id: "ctm_01",
      reason: "requested by the customer",
      credit_applied_to_balance: null,
      currency_code: "USD",
      status: o.status ?? "approved",
      items: [],
      totals: { subtotal: "1000", tax: "0", total: "1000", fee: "50", earnings: "950", currency_code: "USD", retained_fee: "0" },
      payout_totals: null,
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
    };
  },
};

export const lemon = {
  event: (name: string, type: string, id: string, attributes: Record<string, unknown>) =>
    JSON.stringify({ meta: { event_name: name, test_mode: true, webhook_id: "wh_1" }, data: { type, id, attributes } }),

  order(o: { order: string; variant: number; product: number; quantity?: number; status?: string; email?: string; updatedAt: string }) {
    return {
      store_id: 1,
      customer_id: 9,
      identifier: `ident-${o.order}`,
      user_name: "Katherine Johnson",
      user_email: o.email ?? "katherine@example.com",
      status: o.status ?? "paid",
      refunded: o.status === "refunded",
      first_order_item: { id: 1, order_id: Number(o.order), product_id: o.product, variant_id: o.variant, quantity: o.quantity ?? 1 },
      updated_at: o.updatedAt,
    };
  },

  subscription(o: { order: string; variant: number; product: number; quantity: number; renewsAt: number; status?: string; updatedAt: string }) {
    return {
      store_id: 1,
      customer_id: 9,
      order_id: Number(o.order),
      product_id: o.product,
      variant_id: o.variant,
      status: o.status ?? "active",
      renews_at: iso(o.renewsAt),
      ends_at: null,
      first_subscription_item: { id: 5, subscription_id: 1, price_id: 7, quantity: o.quantity },
      user_email: "katherine@example.com",
      updated_at: o.updatedAt,
    };
  },
};
