import { afterAll, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateKeyFiles } from "../src/domain/keys";
import { lemon, paddle, stripe } from "./commerce-events";
import { LEMON_SECRET, lemonHeader, PADDLE_SECRET, paddleHeader, STRIPE_SECRET, stripeHeader } from "./commerce-signers";
import { executable, untilListening } from "./executable";
import { tempDir } from "./helpers";

/**
 * The bridges in the compiled executable, configured as an operator would (secrets in the
 * environment, products and plans in the TOML file): each provider's purchase, renewal and refund
 * arrive, the process is killed (-9) and started again, and every event sent again changes nothing.
 */
const dir = tempDir("keyturn-bridge-exe-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DAY = 24 * 3600 * 1000;

const CONFIG = `
variant = "gamma"
base-url = "https://licenses.example.com"
data = "${join(dir, "data")}"
keys = "${join(dir, "keys")}"
releases = "${join(dir, "releases")}"
port = 0

[plans.pro]
title = "Professional"
seats = 1
channels = ["stable"]

[bridge-products.stripe."price_pro"]
plan = "pro"

[bridge-products.paddle."pri_pro"]
plan = "pro"

[bridge-products.lemonsqueezy."501"]
plan = "pro"
`;

async function serve(exe: string) {
  const proc = Bun.spawn([exe, "serve", "--config", join(dir, "keyturn.toml")], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: {
      ...process.env,
      KEYTURN_STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      KEYTURN_PADDLE_WEBHOOK_SECRET: PADDLE_SECRET,
      KEYTURN_LEMONSQUEEZY_WEBHOOK_SECRET: LEMON_SECRET,
    },
  });
  const reader = proc.stderr.getReader();
  const started = await untilListening(reader);
  const url = started.url;
  let err = started.log;
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return err;
      err += new TextDecoder().decode(value);
    }
  })();
  return { proc, url, log: () => rest };
}

async function licenses(exe: string): Promise<any[]> {
  const out = Bun.spawnSync([exe, "license", "list", "--json", "--config", join(dir, "keyturn.toml")], { env: { ...process.env } });
  expect(out.exitCode).toBe(0);
  return JSON.parse(out.stdout.toString()).licenses ?? JSON.parse(out.stdout.toString());
}

test("purchases, renewals and refunds through each bridge of the executable; after kill -9 and a restart, replays create nothing", async () => {
  const exe = await executable();
  mkdirSync(join(dir, "releases"));
  generateKeyFiles(join(dir, "keys"), "gamma-license-2026-09");
  writeFileSync(join(dir, "keyturn.toml"), CONFIG);
  const now = Date.now();
  const periodEnd = now + 30 * DAY;
  const events: { provider: string; body: string }[] = [
    {
      provider: "stripe",
      body: stripe.event(
        "evt_e_buy",
        "invoice.paid",
        stripe.invoicePaid({
          invoice: "in_e1",
          subscription: "sub_e",
          reason: "subscription_create",
          price: "price_pro",
          product: "prod_e",
          quantity: 2,
          periodEnd,
        }),
        now,
      ),
    },
    {
      provider: "stripe",
      body: stripe.event(
        "evt_e_renew",
        "invoice.paid",
        stripe.invoicePaid({
          invoice: "in_e2",
          subscription: "sub_e",
          reason: "subscription_cycle",
          price: "price_pro",
          product: "prod_e",
          quantity: 2,
          periodEnd: periodEnd + 30 * DAY,
        }),
        now,
      ),
    },
    {
      provider: "stripe",
      body: stripe.event("evt_e_payment", "invoice_payment.paid", stripe.invoicePayment({ invoice: "in_e2", paymentIntent: "pi_e2", charge: "ch_e2" }), now),
    },
    {
      provider: "stripe",
      body: stripe.event("evt_e_refund", "charge.refunded", stripe.charge({ charge: "ch_e2", paymentIntent: "pi_e2", refunded: true }), now),
    },
    {
      provider: "paddle",
      body: paddle.event(
        "evt_pe_buy",
        "transaction.completed",
        paddle.transaction({
          transaction: "txn_e1",
          subscription: "sub_pe",
          origin: "web",
          price: "pri_pro",
          product: "pro_e",
          quantity: 1,
          periodEnd,
          email: "p@example.com",
        }),
        now,
      ),
    },
    {
      provider: "paddle",
      body: paddle.event(
        "evt_pe_renew",
        "transaction.completed",
        paddle.transaction({
          transaction: "txn_e2",
          subscription: "sub_pe",
          origin: "subscription_recurring",
          price: "pri_pro",
          product: "pro_e",
          quantity: 1,
          periodEnd: periodEnd + 30 * DAY,
        }),
        now,
      ),
    },
    {
      provider: "paddle",
      body: paddle.event("evt_pe_cb", "adjustment.created", paddle.adjustment({ adjustment: "adj_e", transaction: "txn_e2", action: "chargeback" }), now),
    },
    {
      provider: "lemonsqueezy",
      body: lemon.event("order_created", "orders", "2001", lemon.order({ order: "2001", variant: 501, product: 50, updatedAt: "2026-01-01T00:00:00Z" })),
    },
    {
      provider: "lemonsqueezy",
      body: lemon.event(
        "subscription_created",
        "subscriptions",
        "88",
        lemon.subscription({ order: "2001", variant: 501, product: 50, quantity: 1, renewsAt: periodEnd, updatedAt: "2026-01-01T00:00:01Z" }),
      ),
    },
    {
      provider: "lemonsqueezy",
      body: lemon.event(
        "order_refunded",
        "orders",
        "2001",
        lemon.order({ order: "2001", variant: 501, product: 50, status: "refunded", updatedAt: "2026-01-02T00:00:00Z" }),
      ),
    },
  ];
  const send = async (url: string, e: { provider: string; body: string }) => {
    const header: Record<string, string> =
      e.provider === "stripe"
        ? { "stripe-signature": await stripeHeader(e.body, Date.now()) }
        : e.provider === "paddle"
          ? { "paddle-signature": await paddleHeader(e.body) }
          : { "x-signature": lemonHeader(e.body) };
    const res = await fetch(`${url}/api/v1/hooks/${e.provider}`, { method: "POST", headers: { "content-type": "application/json", ...header }, body: e.body });
    expect(res.status).toBe(200);
    return ((await res.json()) as { outcome: string }).outcome;
  };

  const first = await serve(exe);
  const outcomes: string[] = [];
  for (const e of events) outcomes.push(await send(first.url, e));
  // The payment's event ties it to its invoice's licence and changes nothing itself.
  expect(outcomes.filter((o) => o !== "applied")).toEqual(["ignored"]);
  first.proc.kill("SIGKILL");
  await first.proc.exited;
  const before = await licenses(exe);
  expect(before).toHaveLength(3);
  expect(before.every((l) => l.revoked !== null)).toBe(true);
  expect(before.map((l) => l.seats.total).sort()).toEqual([1, 1, 2]);

  const second = await serve(exe);
  const replays: string[] = [];
  for (const e of events) replays.push(await send(second.url, e));
  expect(replays).toEqual(Array(events.length).fill("replayed"));
  second.proc.kill("SIGTERM");
  expect(await second.proc.exited).toBe(0);
  expect(await licenses(exe)).toEqual(before);

  // The signing secrets never reach the log.
  const log = (await first.log()) + (await second.log());
  for (const secret of [STRIPE_SECRET, PADDLE_SECRET, LEMON_SECRET]) expect(log).not.toContain(secret);
  expect(log).toContain("/api/v1/hooks/stripe");
}, 120_000);
