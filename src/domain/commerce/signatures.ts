import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The three providers' webhook signature schemes, checked over the raw body as received. Each is
 * HMAC-SHA256 with the endpoint's signing secret; the compare is timing-safe. Stripe and Paddle sign
 * a timestamp with the body: a signature older (or newer) than the tolerance is refused, so a
 * captured request cannot be sent again later. Lemon Squeezy signs the body alone.
 *
 * - Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]` over "<t>.<body>"
 *   (https://docs.stripe.com/webhooks#verify-manually); several v1 while a secret is rolled.
 * - Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]` over "<ts>:<body>"
 *   (https://developer.paddle.com/webhooks/signature-verification).
 * - Lemon Squeezy: `X-Signature: <hex>` over the body (https://docs.lemonsqueezy.com/help/webhooks/signing-requests).
 */

/** How far a signed timestamp may be from the site's clock: Stripe's own libraries' default. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;
/** A signature header longer than this is not one (a few signatures during a secret's rotation fit). */
const HEADER_MAX = 1024;

export function verifyStripeSignature(header: string | null, body: Uint8Array, secret: string, nowMs: number): boolean {
  const fields = headerFields(header, ",");
  if (fields === null) return false;
  return timedCheck(fields.get("t"), fields.get("v1") ?? [], ".", body, secret, nowMs);
}

export function verifyPaddleSignature(header: string | null, body: Uint8Array, secret: string, nowMs: number): boolean {
  const fields = headerFields(header, ";");
  if (fields === null) return false;
  return timedCheck(fields.get("ts"), fields.get("h1") ?? [], ":", body, secret, nowMs);
}

export function verifyLemonSqueezySignature(header: string | null, body: Uint8Array, secret: string): boolean {
  if (header === null || header.length > HEADER_MAX) return false;
  return sameHex(header.trim(), hmacHex(secret, body));
}

function timedCheck(
  timestamps: readonly string[] | undefined,
  signatures: readonly string[],
  separator: string,
  body: Uint8Array,
  secret: string,
  nowMs: number,
): boolean {
  if (timestamps?.length !== 1 || !/^\d{1,12}$/.test(timestamps[0]!)) return false;
  const seconds = Number(timestamps[0]);
  if (Math.abs(nowMs / 1000 - seconds) > SIGNATURE_TOLERANCE_SECONDS) return false;
  const expected = hmacHex(secret, body, `${seconds}${separator}`);
  let match = false;
  // Every candidate is compared, so the time taken does not tell which one matched.
  for (const s of signatures) match = sameHex(s, expected) || match;
  return match;
}

/** `k=v` pairs split by `separator`, the values of a repeated key kept in order; null when the header is missing or too long. */
function headerFields(header: string | null, separator: string): Map<string, string[]> | null {
  if (header === null || header.length > HEADER_MAX) return null;
  const fields = new Map<string, string[]>();
  for (const part of header.split(separator)) {
    const at = part.indexOf("=");
    if (at < 1) continue;
    const key = part.slice(0, at).trim();
    fields.set(key, [...(fields.get(key) ?? []), part.slice(at + 1).trim()]);
  }
  return fields;
}

function hmacHex(secret: string, body: Uint8Array, prefix = ""): string {
  return createHmac("sha256", secret).update(prefix).update(body).digest("hex");
}

function sameHex(given: string, expected: string): boolean {
  if (!/^[0-9a-f]{64}$/i.test(given)) return false;
  return timingSafeEqual(Buffer.from(given.toLowerCase(), "latin1"), Buffer.from(expected, "latin1"));
}
