import { afterAll, beforeAll, expect, test } from "bun:test";
import { MAX_BRIDGE_BODY } from "../../src/domain/commerce/bridge";
import { STRIPE_SECRET } from "../commerce-signers";
import { BASE, testSite, type TestSite } from "../helpers";

// A provider's event is read as its bytes, within MAX_BRIDGE_BODY, declared or streamed (chunked):
// past it, 413 payload_too_large before any signature is checked.
let site: TestSite;
beforeAll(async () => {
  site = await testSite("alpha", { settings: { "stripe-webhook-secret": STRIPE_SECRET } });
});
afterAll(() => site.close());

/** A body sent in 16 KiB chunks with no Content-Length, as a chunked request arrives. */
function streamed(size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) return controller.close();
      const n = Math.min(16 * 1024, size - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
}

const hook = (body: ReadableStream<Uint8Array> | Uint8Array, headers: Record<string, string> = {}) =>
  site.app.handle(
    new Request(`${BASE}/hooks/stripe`, { method: "POST", headers: { "content-type": "application/json", "stripe-signature": "t=1,v1=00", ...headers }, body }),
  );

test("a streamed event past the limit: 413 payload_too_large; one within it reaches the signature check", async () => {
  const over = await hook(streamed(MAX_BRIDGE_BODY + 1));
  expect(over.status).toBe(413);
  expect(((await over.json()) as { error: string }).error).toBe("payload_too_large");
  const within = await hook(streamed(MAX_BRIDGE_BODY));
  expect(within.status).toBe(400);
  expect(((await within.json()) as { error: string }).error).toBe("invalid_request");
});

test("a declared length past the limit: 413 before the body is read", async () => {
  const over = await hook(new Uint8Array(MAX_BRIDGE_BODY + 1).fill(0x20), { "content-length": String(MAX_BRIDGE_BODY + 1) });
  expect(over.status).toBe(413);
});
