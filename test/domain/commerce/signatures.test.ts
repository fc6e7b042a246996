import { expect, test } from "bun:test";
import Stripe from "stripe";
import {
  SIGNATURE_TOLERANCE_SECONDS,
  verifyLemonSqueezySignature,
  verifyPaddleSignature,
  verifyStripeSignature,
} from "../../../src/domain/commerce/signatures";
import { paddle as paddle_ } from "../../commerce-events";
import { LEMON_SECRET, lemonHeader, PADDLE_SECRET, paddle, paddleHeader, STRIPE_SECRET, stripeHeader } from "../../commerce-signers";

const bytes = (s: string) => new TextEncoder().encode(s);
const body = JSON.stringify({ id: "evt_1", type: "invoice.paid", data: { object: { note: "Zürich ✓" } } });

test("Stripe: what Stripe's SDK signs is accepted, what its verifier refuses is refused", async () => {
  const now = Date.now();
  const header = await stripeHeader(body, now);
  expect(verifyStripeSignature(header, bytes(body), STRIPE_SECRET, now)).toBe(true);
  // Stripe's own verifier agrees on the same header.
  expect((await Stripe.webhooks.constructEventAsync(body, header, STRIPE_SECRET)).id).toBe("evt_1");
  const tampered = body.replace("evt_1", "evt_2");
  expect(verifyStripeSignature(header, bytes(tampered), STRIPE_SECRET, now)).toBe(false);
  await expect(Stripe.webhooks.constructEventAsync(tampered, header, STRIPE_SECRET)).rejects.toThrow();
  expect(verifyStripeSignature(header, bytes(body), STRIPE_SECRET + "x", now)).toBe(false);
  // Older than the tolerance: a captured delivery sent again later.
  const late = now + (SIGNATURE_TOLERANCE_SECONDS + 1) * 1000;
  expect(verifyStripeSignature(header, bytes(body), STRIPE_SECRET, late)).toBe(false);
  await expect(Stripe.webhooks.constructEventAsync(body, header, STRIPE_SECRET, SIGNATURE_TOLERANCE_SECONDS, undefined, late)).rejects.toThrow();
  // During a secret's roll Stripe sends two v1 signatures: one good one suffices.
  const [t, v1] = header.split(",");
  expect(verifyStripeSignature(`${t},v1=${"0".repeat(64)},${v1}`, bytes(body), STRIPE_SECRET, now)).toBe(true);
  for (const bad of [null, "", "t=abc,v1=00", `${v1}`, `${t}`, `${t},${t},${v1}`, "x".repeat(5000)])
    expect(verifyStripeSignature(bad, bytes(body), STRIPE_SECRET, now)).toBe(false);
});

test("Paddle: the signature the Paddle SDK verifies is accepted; a changed body, secret or time is refused by both", async () => {
  const header = await paddleHeader(body);
  const sdk = paddle.webhooks;
  expect(await sdk.isSignatureValid(body, PADDLE_SECRET, header)).toBe(true);
  expect(verifyPaddleSignature(header, bytes(body), PADDLE_SECRET, Date.now())).toBe(true);
  const tampered = body.replace("Zürich", "Zurich");
  expect(await sdk.isSignatureValid(tampered, PADDLE_SECRET, header)).toBe(false);
  expect(verifyPaddleSignature(header, bytes(tampered), PADDLE_SECRET, Date.now())).toBe(false);
  expect(await sdk.isSignatureValid(body, PADDLE_SECRET + "x", header)).toBe(false);
  expect(verifyPaddleSignature(header, bytes(body), PADDLE_SECRET + "x", Date.now())).toBe(false);
  // The SDK's unmarshal reads the same event keyturn reads.
  const paddleEvent = paddle_.event(
    "evt_01p",
    "subscription.canceled",
    paddle_.subscription({ subscription: "sub_01", price: "pri_01", product: "pro_01", quantity: 1 }),
    Date.now(),
  );
  const unmarshalled = await sdk.unmarshal(paddleEvent, PADDLE_SECRET, await paddleHeader(paddleEvent));
  expect(unmarshalled.eventId).toBe("evt_01p");
  // Too old for keyturn's tolerance.
  const old = await paddleHeader(body, Date.now() - (SIGNATURE_TOLERANCE_SECONDS + 5) * 1000);
  expect(verifyPaddleSignature(old, bytes(body), PADDLE_SECRET, Date.now())).toBe(false);
  expect(verifyPaddleSignature(`ts=${Math.floor(Date.now() / 1000)}`, bytes(body), PADDLE_SECRET, Date.now())).toBe(false);
});

test("Lemon Squeezy: openssl's HMAC of the body is accepted, in either case of hex; another body or secret is not", () => {
  const header = lemonHeader(body);
  expect(header).toMatch(/^[0-9a-f]{64}$/);
  expect(verifyLemonSqueezySignature(header, bytes(body), LEMON_SECRET)).toBe(true);
  expect(verifyLemonSqueezySignature(header.toUpperCase(), bytes(body), LEMON_SECRET)).toBe(true);
  expect(verifyLemonSqueezySignature(header, bytes(body + " "), LEMON_SECRET)).toBe(false);
  expect(verifyLemonSqueezySignature(lemonHeader(body, "another"), bytes(body), LEMON_SECRET)).toBe(false);
  expect(verifyLemonSqueezySignature(null, bytes(body), LEMON_SECRET)).toBe(false);
  expect(verifyLemonSqueezySignature(header.slice(1), bytes(body), LEMON_SECRET)).toBe(false);
});
