import { expect, test } from "bun:test";
import { tomlFiles } from "./toml-files";

// design.md "From sale to key": products and prices are mapped to plans by configuration;
// secrets come from the environment (or a flag, or the file).
const { configOf, refusal } = tomlFiles();

test("a product takes its plan's seats and channels, its own fields win; updatesFor makes renewals extend the updates window", () => {
  const config = configOf(
    `
[plans.studio]
seats = 3
channels = ["preview"]
updatesFor = "365d"

[bridge-products.stripe."price_1"]
plan = "studio"

[bridge-products.paddle."pri_1"]
plan = "studio"
seats = 1
channels = ["stable"]
expiresAfter = "30d"
grace = "1d"
onRefund = "end-updates"
onDispute = "keep"
onCancel = "revoke"

[bridge-products.lemonsqueezy."42"]
plan = "unconfigured"
`,
    { KEYTURN_STRIPE_WEBHOOK_SECRET: "whsec_from_the_environment" },
  );
  expect(config.bridges.secrets).toEqual({ stripe: "whsec_from_the_environment" });
  expect(config.bridges.products.stripe.price_1).toMatchObject({
    plan: "studio",
    seats: 3,
    channels: ["preview"],
    renews: ["updatesUntil"],
    graceSeconds: 3 * 86_400,
    onRefund: "revoke",
    onCancel: "expire",
  });
  expect(config.bridges.products.paddle.pri_1).toMatchObject({
    seats: 1,
    channels: ["stable"],
    expiresAfter: 30 * 86_400,
    // Its own term on a plan with updates: each paid period renews both.
    renews: ["updatesUntil", "expires"],
    graceSeconds: 86_400,
    onRefund: "end-updates",
    onDispute: "keep",
    onCancel: "revoke",
  });
  // A plan only named (not configured): one seat, every channel of the site, renewals extend the expiry.
  expect(config.bridges.products.lemonsqueezy["42"]).toMatchObject({ seats: 1, channels: ["stable", "preview"], renews: ["expires"] });
});

test("each mistake in bridge-products is refused naming the product and the field", () => {
  expect(refusal(`[bridge-products.gumroad."x"]\nplan = "p"`)).toContain('unknown provider "gumroad"');
  expect(refusal(`[bridge-products.stripe."price_1"]\nplan = "p"\nprice = 3`)).toContain('bridge-products.stripe.price_1: unknown field "price"');
  expect(refusal(`[bridge-products.stripe."price_1"]\nseats = 1`)).toContain("plan must be a name");
  expect(refusal(`[bridge-products.stripe."price_1"]\nplan = "p"\nchannels = ["nightly"]`)).toContain('"nightly" is not one of the site\'s channels');
  expect(refusal(`[bridge-products.stripe."price_1"]\nplan = "p"\nonRefund = "refund"`)).toContain('onRefund must be "revoke" or "end-updates" or "keep"');
  expect(refusal(`[bridge-products.stripe."price_1"]\nplan = "p"\nseats = 0`)).toContain("seats must be a whole number");
  expect(refusal(`[bridge-products.stripe."price_1"]\nplan = "p"\ngrace = "3 days"`)).toContain("malformed duration");
  expect(refusal(`stripe-webhook-secret = "short"`)).toStartWith("stripe-webhook-secret: ");
});
