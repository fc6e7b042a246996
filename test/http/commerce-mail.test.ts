import { afterEach, expect, test } from "bun:test";
import { createLogger } from "../../src/config/log";
import { MailWorker } from "../../src/domain/mail/worker";
import { lemon, stripe } from "../commerce-events";
import { LEMON_SECRET, lemonHeader, STRIPE_SECRET, stripeHeader } from "../commerce-signers";
import { BASE, device, testClock, testSite, type TestSite } from "../helpers";
import { startSmtpReceiver, type SmtpReceiver } from "../smtp-receiver";

/**
 * Issue 30's "Done when": "a test buys ... through each bridge with correctly signed events, the
 * licence follows, the mail arrives at the real SMTP server with the key ... and nothing is created
 * or mailed twice under replays". A sale through a bridge is a licence made by createLicense, so
 * its key is mailed to the buyer from the outbox; a replayed event mails nothing.
 */
const open: Array<{ close(): Promise<void> } | { stop(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await ("close" in o ? o.close() : o.stop());
});

async function shop(smtp: SmtpReceiver): Promise<{ site: TestSite; worker: MailWorker; logLines: string[] }> {
  const logLines: string[] = [];
  const log = createLogger("json", "debug", (l) => logLines.push(l));
  // The real clock, moved only forward: the providers' signatures carry their time.
  const site = await testSite("alpha", {
    clock: testClock(Date.now()),
    log,
    settings: {
      "smtp-url": smtp.url,
      "mail-from": "Example Software <licences@example.com>",
      "stripe-webhook-secret": STRIPE_SECRET,
      "lemonsqueezy-webhook-secret": LEMON_SECRET,
      "bridge-products": JSON.stringify({
        stripe: { price_pro_monthly: { plan: "pro", planTitle: "Professional", seats: 1, channels: ["stable"] } },
        lemonsqueezy: { "600": { plan: "desktop", seats: 3, expiresAfter: "30d" } },
      }),
    },
  });
  open.push(site);
  const admin = site.composed.services.admin;
  const worker = new MailWorker({
    store: site.composed.store,
    mail: admin.mail!.d.store,
    outbox: admin.mail!,
    config: site.composed.config.mail!,
    clock: site.clock,
    log,
  });
  open.push(worker);
  return { site, worker, logLines };
}

const hook = async (site: TestSite, provider: string, body: string, headers: Record<string, string>) =>
  site.app.handle(new Request(`${BASE}/hooks/${provider}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }));

/** The licence key a mail carries (AL- and five groups), which must activate. */
const keyIn = (text: string) => text.match(/AL(?:-[0-9A-Z]{5}){5}/)?.[0];

test("a Stripe subscription bought: the key reaches the buyer's mailbox once, replays mail nothing, and the key activates", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker, logLines } = await shop(smtp);
  const now = site.clock();
  const buy = stripe.event(
    "evt_mail_buy",
    "invoice.paid",
    stripe.invoicePaid({
      invoice: "in_m1",
      subscription: "sub_m1",
      reason: "subscription_create",
      price: "price_pro_monthly",
      product: "prod_pro",
      quantity: 1,
      periodEnd: now + 30 * 86_400_000,
    }),
    now,
  );
  const bought = await hook(site, "stripe", buy, { "stripe-signature": await stripeHeader(buy, now) });
  expect(bought.status).toBe(200);
  const replayed = await hook(site, "stripe", buy, { "stripe-signature": await stripeHeader(buy, now) });
  expect(((await replayed.json()) as { outcome: string }).outcome).toBe("replayed");
  await worker.tick();
  await worker.tick();
  expect(smtp.received).toHaveLength(1);
  const [mail] = smtp.received;
  expect(mail!.envelopeTo).toEqual(["ada@example.com"]);
  expect(mail!.mail.subject).toBe("Your licence key for licenses.example.com");
  const key = keyIn(mail!.mail.text ?? "");
  expect(key).toBeDefined();
  const activated = await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
  expect(activated.status).toBe(200);
  expect(((await activated.json()) as { entitlement: { plan: string } }).entitlement.plan).toBe("pro");
  expect(logLines.join("\n")).not.toContain(key!);
});

test("a Lemon Squeezy order: the key reaches the address the order names, once", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker } = await shop(smtp);
  const order = lemon.event(
    "order_created",
    "orders",
    "2001",
    lemon.order({ order: "2001", variant: 600, product: 60, email: "grace@example.org", updatedAt: new Date(site.clock()).toISOString() }),
  );
  const headers = { "x-signature": lemonHeader(order), "x-event-name": "order_created" };
  expect((await hook(site, "lemonsqueezy", order, headers)).status).toBe(200);
  expect((await hook(site, "lemonsqueezy", order, headers)).status).toBe(200);
  await worker.tick();
  expect(smtp.received.map((r) => r.envelopeTo[0])).toEqual(["grace@example.org"]);
  const key = keyIn(smtp.received[0]!.mail.text ?? "");
  const activated = await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
  expect(activated.status).toBe(200);
  expect(((await activated.json()) as { entitlement: { seats: { total: number } } }).entitlement.seats.total).toBe(3);
});
