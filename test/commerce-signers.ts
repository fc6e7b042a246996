import { Environment, Paddle } from "@paddle/paddle-node-sdk";
import { createHmac } from "node:crypto";
import Stripe from "stripe";

/**
 * Signed provider deliveries for the tests. Stripe's are made by Stripe's own SDK. Paddle's SDK and
 * Lemon Squeezy's SDK make no signatures: Paddle's are made here by the scheme its documentation
 * gives and every one is checked with the Paddle SDK's own verifier before use (`Webhooks.isSignatureValid`);
 * Lemon Squeezy's SDK has no verifier, so its signatures are made with `openssl dgst -hmac`, an
 * implementation independent of keyturn's.
 */
export const STRIPE_SECRET = "whsec_" + Buffer.from("keyturn-bridge-test-stripe").toString("base64");
export const PADDLE_SECRET = "pdl_ntfset_01jtestsecretkeyturnbridge_abcdef";
export const LEMON_SECRET = "lemon-bridge-test-secret";

export function stripeHeader(payload: string, nowMs: number): Promise<string> {
  return Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: STRIPE_SECRET, timestamp: Math.floor(nowMs / 1000) });
}

/** The Paddle SDK as a vendor's server makes it (its runtime is set up by the constructor; no request is sent). */
export const paddle = new Paddle("pdl_sdbx_apikey_01jtestkeyturnbridgetestkey", { environment: Environment.sandbox });

/** Paddle-Signature for `payload` at `nowMs`, proved good by the Paddle SDK (which checks against the real clock). */
export async function paddleHeader(payload: string, nowMs: number = Date.now()): Promise<string> {
  const ts = Math.floor(nowMs / 1000);
  const header = `ts=${ts};h1=${createHmac("sha256", PADDLE_SECRET).update(`${ts}:${payload}`).digest("hex")}`;
  if (Math.abs(Date.now() - nowMs) < 4000 && !(await paddle.webhooks.isSignatureValid(payload, PADDLE_SECRET, header)))
    throw new Error("the Paddle SDK refuses the test's signature");
  return header;
}

/** X-Signature for `payload`, computed by openssl. */
export function lemonHeader(payload: string, secret = LEMON_SECRET): string {
  const out = Bun.spawnSync(["openssl", "dgst", "-sha256", "-hmac", secret, "-r"], { stdin: Buffer.from(payload) });
  if (out.exitCode !== 0) throw new Error(`openssl failed: ${out.stderr.toString()}`);
  return out.stdout.toString().split(" ")[0]!.trim();
}
