/**
 * A Stripe webhook receiver that sells keyturn licences: copy it, set the environment variables at
 * the end, point a Stripe webhook endpoint at it (events checkout.session.completed,
 * checkout.session.async_payment_succeeded, charge.refunded, invoice.paid). Documented in
 * docs/admin-api.md#selling-through-stripe; test/stripe-bridge.test.ts runs it against a real site.
 *
 * - A paid Checkout Session creates a licence (POST /api/v1/admin/licenses) with the Stripe event
 *   id as Idempotency-Key, and hands the key to `deliverKey` (your e-mail, your receipt page).
 * - A fully refunded charge revokes the licence bought with that payment: the checkout's own, or
 *   any paid invoice of the licence's subscription.
 * - A paid subscription invoice moves the licence's expiry to the end of the paid period plus grace.
 * - A session of no plan known here (another product sold through the same Stripe account) is
 *   answered 200 and ignored, so Stripe does not send it again for days.
 * - The buyer's name and organisation are cut to keyturn's 200 characters (control characters
 *   become spaces); an e-mail keyturn would refuse is left out: a paid order always gets its licence.
 *
 * The licence remembers its Stripe ids in its metadata (stripe_event, stripe_session,
 * stripe_customer, stripe_payment_intent, stripe_subscription, and stripe_payment_intents: the
 * payments of its subscription's invoices, newest first); a refund or an invoice finds it again by them.
 * Any other failure answers 500, so Stripe sends the event again later (for up to three days).
 */
import Stripe from "stripe";

export interface PlanTemplate {
  readonly title: string;
  readonly channels: readonly string[];
  /** Seats when neither the session's metadata.seats nor the line item's quantity says. */
  readonly seats?: number;
}

export interface LicenseView {
  readonly id: string;
  readonly licensee: string;
  readonly plan: string;
  readonly seats: number;
  readonly issued: string;
  readonly expires: string | null;
  readonly revoked: string | null;
  readonly email: string | null;
  readonly metadata: Readonly<Record<string, string>>;
}

export interface KeyDelivery {
  readonly key: string;
  readonly license: LicenseView;
  readonly session: Stripe.Checkout.Session;
}

export interface StripeBridgeOptions {
  /** The keyturn site, e.g. https://licenses.example.com. */
  readonly keyturnUrl: string;
  /** An admin token with the scopes licenses:read and licenses:write. */
  readonly adminToken: string;
  /** The signing secret (whsec_…) of the Stripe webhook endpoint that calls this receiver. */
  readonly stripeWebhookSecret: string;
  /** keyturn plans by name: what a purchase of that plan grants. */
  readonly plans: Readonly<Record<string, PlanTemplate>>;
  /** Stripe price id → plan name, for sessions without metadata.plan. */
  readonly prices?: Readonly<Record<string, string>>;
  /**
   * The session's line items (webhook events do not carry them). Default: none, so the plan must
   * be in the session's metadata; with a Stripe client: `(id) => stripe.checkout.sessions.listLineItems(id).then((l) => l.data)`.
   */
  readonly lineItems?: (sessionId: string) => Promise<readonly Pick<Stripe.LineItem, "price" | "quantity">[]>;
  /** Sends the key to the buyer. Throwing makes Stripe retry the event; the replay answers the same key. */
  readonly deliverKey: (delivery: KeyDelivery) => Promise<void>;
  /** Days a subscription licence stays valid past the paid period (a late renewal payment). */
  readonly renewalGraceDays?: number;
  readonly log?: (message: string) => void;
  /** The time in milliseconds; keyturn's idea of it, for the 24 h window. */
  readonly now?: () => number;
}

/** keyturn's limits on a licence's texts (docs/admin-api.md): longer ones are refused, so they are fitted here. */
const NAME_MAX = 200;
const EMAIL_MAX = 254;
const QUERY_MAX = 200;
const METADATA_VALUE_MAX = 500;

/** keyturn keeps an Idempotency-Key's first answer this long; older retries must not create again. */
const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;

class KeyturnCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`keyturn ${status} ${code}: ${message}`);
  }
}

/** The receiver: give it Stripe's request, answer what it returns. */
export function stripeBridge(o: StripeBridgeOptions): (request: Request) => Promise<Response> {
  const log = o.log ?? ((m: string) => console.log(m));
  const api = adminClient(o.keyturnUrl, o.adminToken);

  async function handle(event: Stripe.Event): Promise<string> {
    switch (event.type) {
      case "checkout.session.completed":
      case "checkout.session.async_payment_succeeded":
        return issue(event.id, event.data.object);
      case "charge.refunded":
        return refund(event.data.object);
      case "invoice.paid":
        return renew(event.data.object);
      default:
        return `ignored ${event.type}`;
    }
  }

  async function issue(eventId: string, session: Stripe.Checkout.Session): Promise<string> {
    // Delayed payment methods complete the session unpaid; async_payment_succeeded follows.
    if (session.payment_status === "unpaid") return `session ${session.id} awaits payment`;
    // Within 24 h the Idempotency-Key answers a retry with the same licence and key; past them (or
    // for a second event of the session) the licence found by its metadata stops a second one.
    const earlier = await api.findLicense(session.customer_details?.email, (m) => m.stripe_session === session.id);
    if (earlier && (earlier.metadata.stripe_event !== eventId || (o.now ?? Date.now)() - Date.parse(earlier.issued) >= IDEMPOTENCY_WINDOW_MS))
      return `session ${session.id} already has ${earlier.id}; its key was handed over when it was made`;
    const body = await licenseFor(eventId, session);
    if (body === null) return `session ${session.id} is for no plan known here (another product?); ignored`;
    const created = await api.call<{ license: LicenseView; key: string }>("POST", "/licenses", body, { "idempotency-key": eventId });
    await o.deliverKey({ key: created.key, license: created.license, session });
    return `licence ${created.license.id} for session ${session.id}`;
  }

  async function licenseFor(eventId: string, session: Stripe.Checkout.Session) {
    const meta = session.metadata ?? {};
    const items = meta.plan && meta.seats ? [] : ((await o.lineItems?.(session.id)) ?? []);
    const priceId = (p: Pick<Stripe.LineItem, "price">["price"]) => (typeof p === "string" ? p : p?.id);
    const item = items.find((i) => o.prices?.[priceId(i.price) ?? ""] !== undefined) ?? items[0];
    const plan = meta.plan ?? o.prices?.[priceId(item?.price ?? null) ?? ""];
    const template = plan === undefined ? undefined : o.plans[plan];
    if (!plan || !template) return null;
    const seats = meta.seats ? Number(meta.seats) : (item?.quantity ?? template.seats ?? 1);
    if (!Number.isInteger(seats) || seats < 1) throw new Error(`session ${session.id}: seats ${JSON.stringify(meta.seats)} is not a whole number`);
    const customer = session.customer_details;
    const name = fit(customer?.name, NAME_MAX) ?? fit(customer?.email, NAME_MAX) ?? "Stripe customer";
    const email = usableEmail(customer?.email);
    const ids: Record<string, string | null> = {
      stripe_event: eventId,
      stripe_session: session.id,
      stripe_customer: idOf(session.customer),
      stripe_payment_intent: idOf(session.payment_intent),
      stripe_subscription: idOf(session.subscription),
    };
    return {
      licensee: name,
      organization: fit(customer?.business_name, NAME_MAX) ?? fit(meta.organization, NAME_MAX) ?? name,
      plan,
      planTitle: template.title,
      seats,
      channels: template.channels,
      // A subscription's expiry comes with its first paid invoice (invoice.paid).
      expires: null,
      ...(email ? { email } : {}),
      metadata: Object.fromEntries(Object.entries(ids).filter((e): e is [string, string] => e[1] !== null)),
    };
  }

  // Stripe's "refund" is charge.refunded (refunded: true once the whole amount is back); a partial refund keeps the licence.
  async function refund(charge: Stripe.Charge): Promise<string> {
    const paymentIntent = idOf(charge.payment_intent);
    if (!charge.refunded || paymentIntent === null) return `charge ${charge.id} is not fully refunded`;
    const license = await api.findLicense(
      charge.billing_details?.email ?? charge.receipt_email,
      (m) => m.stripe_payment_intent === paymentIntent || (m.stripe_payment_intents ?? "").split(" ").includes(paymentIntent),
    );
    if (!license) return `no licence was bought with ${paymentIntent}`;
    try {
      await api.call("POST", `/licenses/${encodeURIComponent(license.id)}/revoke`);
    } catch (e) {
      if (!(e instanceof KeyturnCallError && e.code === "license_revoked")) throw e;
    }
    return `licence ${license.id} revoked (refund of ${charge.id})`;
  }

  async function renew(invoice: Stripe.Invoice): Promise<string> {
    const legacy = (invoice as unknown as { subscription?: string | { id: string } | null }).subscription;
    const subscription = idOf(invoice.parent?.subscription_details?.subscription ?? legacy ?? null);
    if (subscription === null) return `invoice ${invoice.id} is not a subscription's`;
    const license = await api.findLicense(invoice.customer_email, (m) => m.stripe_subscription === subscription);
    // The first invoice can arrive before checkout.session.completed made the licence: Stripe will retry.
    if (!license) throw new Error(`no licence yet for subscription ${subscription}`);
    if (invoice.lines.data.length === 0) return `invoice ${invoice.id} has no lines`;
    const periodEnd = Math.max(...invoice.lines.data.map((l) => l.period.end)) * 1000;
    const expires = periodEnd + (o.renewalGraceDays ?? 3) * DAY_MS;
    const extend = license.expires === null || Date.parse(license.expires) < expires;
    // The invoice's payments, so that a refund of one finds this licence (the checkout of a subscription has none of its own).
    const known = (license.metadata.stripe_payment_intents ?? "").split(" ").filter(Boolean);
    const paid = invoicePaymentIntents(invoice).filter((pi) => !known.includes(pi));
    if (!extend && paid.length === 0) return `licence ${license.id} already runs to ${license.expires}`;
    const change: { expires?: string; metadata?: Record<string, string> } = {};
    if (extend) change.expires = new Date(expires).toISOString().replace(/\.\d+Z$/, "Z");
    if (paid.length > 0) change.metadata = { ...license.metadata, stripe_payment_intents: newestFitting([...paid, ...known]) };
    await api.call("PATCH", `/licenses/${encodeURIComponent(license.id)}`, change);
    return `licence ${license.id} runs to ${change.expires ?? license.expires}`;
  }

  return async (request) => {
    if (request.method !== "POST") return new Response("POST only\n", { status: 405 });
    const payload = await request.text();
    let event: Stripe.Event;
    try {
      event = await Stripe.webhooks.constructEventAsync(payload, request.headers.get("stripe-signature") ?? "", o.stripeWebhookSecret);
    } catch {
      return new Response("bad signature\n", { status: 400 });
    }
    try {
      const outcome = await handle(event);
      log(`${event.id} ${event.type}: ${outcome}`);
      return Response.json({ received: true, outcome });
    } catch (e) {
      log(`${event.id} ${event.type} failed, Stripe will retry: ${e instanceof Error ? e.message : String(e)}`);
      return Response.json({ received: false }, { status: 500 });
    }
  };
}

function idOf(v: string | { id: string } | null | undefined): string | null {
  return v === null || v === undefined ? null : typeof v === "string" ? v : v.id;
}

/** The payment intents that paid an invoice: `payments` (API 2025-03-31 on), or the older `payment_intent`. */
function invoicePaymentIntents(invoice: Stripe.Invoice): string[] {
  const legacy = (invoice as unknown as { payment_intent?: string | { id: string } | null }).payment_intent;
  const paid = (invoice.payments?.data ?? []).map((p) => idOf(p.payment?.payment_intent));
  return [...paid, idOf(legacy)].filter((pi): pi is string => pi !== null);
}

/** Space-separated ids, the newest first, as many as fit in one metadata value. */
function newestFitting(ids: readonly string[]): string {
  let out = "";
  for (const id of ids) {
    const next = out ? `${out} ${id}` : id;
    if (next.length > METADATA_VALUE_MAX) break;
    out = next;
  }
  return out;
}

/**
 * A buyer's text as keyturn takes it: control characters as spaces, runs of spaces as one, cut at
 * `max` characters (never inside a character that takes two); null when nothing is left.
 */
function fit(text: string | null | undefined, max: number): string | null {
  let t = (text ?? "")
    .replace(/[\x00-\x1f\x7f]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (t.length > max) t = t.slice(0, /[\ud800-\udbff]/.test(t[max - 1]!) ? max - 1 : max).trim();
  return t.length > 0 ? t : null;
}

/** The e-mail as keyturn accepts it, or null (the licence is made without one). */
function usableEmail(email: string | null | undefined): string | null {
  return email && email.length <= EMAIL_MAX && /^[^\s@\x00-\x1f\x7f]+@[^\s@\x00-\x1f\x7f]+$/.test(email) ? email : null;
}

/** The admin API calls the bridge makes. */
function adminClient(keyturnUrl: string, token: string) {
  const base = keyturnUrl.replace(/\/+$/, "") + "/api/v1/admin";
  async function call<T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const answer = (await res.json().catch(() => ({}))) as { ok?: boolean; error?: string; message?: string };
    if (!res.ok || answer.ok !== true) throw new KeyturnCallError(res.status, answer.error ?? "no_json", answer.message ?? res.statusText);
    return answer as T;
  }
  /**
   * The licence whose metadata matches. The search (`query`) covers licensee, organisation, e-mail
   * and id, not metadata: the buyer's e-mail narrows it to their licences and the metadata is
   * compared here; without an e-mail (or when it changed), every licence is read a page at a time.
   */
  async function findLicense(email: string | null | undefined, match: (metadata: Readonly<Record<string, string>>) => boolean): Promise<LicenseView | null> {
    // keyturn's search takes at most 200 characters: a longer e-mail narrows nothing.
    for (const query of email && email.length <= QUERY_MAX ? [email, undefined] : [undefined]) {
      let cursor: string | null = null;
      do {
        const params = new URLSearchParams({ limit: "200" });
        if (query) params.set("query", query);
        if (cursor) params.set("cursor", cursor);
        const page: { licenses: LicenseView[]; next: string | null } = await call("GET", `/licenses?${params}`);
        const found = page.licenses.find((l) => match(l.metadata));
        if (found) return found;
        cursor = page.next;
      } while (cursor);
    }
    return null;
  }
  return { call, findLicense };
}

if (import.meta.main) {
  const need = (name: string) => process.env[name] ?? (console.error(`set ${name}`), process.exit(2));
  const bridge = stripeBridge({
    keyturnUrl: need("KEYTURN_URL"),
    adminToken: need("KEYTURN_ADMIN_TOKEN"),
    stripeWebhookSecret: need("STRIPE_WEBHOOK_SECRET"),
    plans: JSON.parse(need("PLANS")) as Record<string, PlanTemplate>,
    deliverKey: async ({ key, license }) => console.log(`send ${key} to ${license.email ?? license.licensee}`),
  });
  const server = Bun.serve({ port: Number(process.env.PORT ?? 8787), fetch: bridge });
  console.log(`Stripe bridge on ${server.url}`);
}
