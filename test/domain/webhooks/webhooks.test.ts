import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { silentLogger } from "../../../src/config/log";
import { VARIANTS } from "../../../src/config/variants";
import { CLI_CALLER, type AdminDeps } from "../../../src/domain/admin/deps";
import { createLicense, revokeLicense } from "../../../src/domain/admin/licenses";
import {
  addWebhookEndpoint,
  listDeliveries,
  retryDelivery,
  rotateWebhookSecret,
  setWebhookEndpointEnabled,
  showDelivery,
} from "../../../src/domain/webhooks/endpoints";
import { RETRY_DELAYS_MS, WebhookWorker } from "../../../src/domain/webhooks/worker";
import { testClock, testSite, type TestSite } from "../../helpers";
import { closedPort, startReceiver, type Receiver } from "../../webhook-receiver";

let site: TestSite;
let d: AdminDeps;
let receiver: Receiver;
let clock: ReturnType<typeof testClock>;
const body = (extra: Record<string, unknown> = {}) => ({
  licensee: "Ada",
  organization: "AE",
  plan: "pro",
  planTitle: "Pro",
  seats: 1,
  channels: ["stable"],
  ...extra,
});
// The receivers are on loopback: allowed as an operator would allow an internal receiver.
const destinations = { allowHosts: ["127.0.0.1"] };
const worker = (timeoutMs?: number) => new WebhookWorker({ store: d.store, clock, log: silentLogger, timeoutMs, destinations });
const verify = (secret: string, r: { headers: Record<string, string>; body: string }) => new Webhook(secret).verify(r.body, r.headers);

beforeEach(async () => {
  // Near the real time: standardwebhooks checks the timestamp against its own clock.
  clock = testClock(Date.now());
  site = await testSite("alpha", { clock });
  d = { variant: VARIANTS.alpha, store: site.composed.store, clock, tokenTtlSeconds: 3600, webhookDestinations: destinations };
  receiver = startReceiver();
});
afterEach(async () => {
  await receiver.stop();
  await site.close();
});

describe("webhooks out", () => {
  test("each delivery verifies with the standardwebhooks package (signature, id = event id, timestamp); a tampered body or an old timestamp fails there", async () => {
    const { secret } = await addWebhookEndpoint(d, CLI_CALLER, { url: receiver.url, events: ["license.created", "license.revoked"] });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const { license } = await createLicense(d, CLI_CALLER, body());
    await revokeLicense(d, CLI_CALLER, license.id);
    expect(await worker().tick()).toEqual({ fannedOut: 2, attempted: 2 });
    const events = await d.store.listEvents({ after: 0, limit: 10 });
    expect(receiver.received.map((r) => r.headers["webhook-id"]).sort()).toEqual(events.map((e) => e.id).sort());
    for (const r of receiver.received) {
      const payload = verify(secret, r) as { type: string; timestamp: string; data: { license: { id: string } } };
      expect(payload.data.license.id).toBe(license.id);
      expect(r.headers["webhook-timestamp"]).toBe(String(Math.floor(clock() / 1000)));
      expect(r.headers["content-type"]).toBe("application/json");
      expect(() => verify(secret, { ...r, body: r.body.replace(license.id, "lic_other") })).toThrow();
      expect(() => verify(secret, { ...r, headers: { ...r.headers, "webhook-id": "evt_other" } })).toThrow();
      expect(() => verify("whsec_" + Buffer.alloc(24, 1).toString("base64"), r)).toThrow();
    }
    const created = receiver.received.find((r) => JSON.parse(r.body).type === "license.created")!;
    expect(JSON.parse(created.body)).toEqual({
      type: "license.created",
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/),
      data: { license: expect.objectContaining({ id: license.id }) },
    });
    const { deliveries } = await listDeliveries(d, CLI_CALLER, {});
    expect(deliveries.map((x) => [x.status, x.attempts])).toEqual([
      ["delivered", 1],
      ["delivered", 1],
    ]);
    const shown = await showDelivery(d, CLI_CALLER, deliveries[0]!.id);
    expect(shown.attempts).toEqual([expect.objectContaining({ attempt: 1, statusCode: 204, error: null })]);

    // signed ten minutes in the past: the verifier refuses the timestamp
    clock.advance(-10 * 60_000);
    await createLicense(d, CLI_CALLER, body());
    await worker().tick();
    expect(() => verify(secret, receiver.received.at(-1)!)).toThrow(/timestamp/i);
  });

  test("after a secret rotation, deliveries (a retry of one made before included) verify with the new secret only", async () => {
    receiver.mode = "error";
    const added = await addWebhookEndpoint(d, CLI_CALLER, { url: receiver.url, events: ["license.created"] });
    await createLicense(d, CLI_CALLER, body());
    const w = worker();
    expect((await w.tick()).attempted).toBe(1);
    expect(() => verify(added.secret, receiver.received.at(-1)!)).not.toThrow();
    const rotated = await rotateWebhookSecret(d, CLI_CALLER, added.endpoint.id);
    expect(rotated.secret).not.toBe(added.secret);
    receiver.mode = "ok";
    clock.advance(RETRY_DELAYS_MS[0]!);
    expect((await w.tick()).attempted).toBe(1);
    const retried = receiver.received.at(-1)!;
    expect(() => verify(rotated.secret, retried)).not.toThrow();
    expect(() => verify(added.secret, retried)).toThrow();
    await expect(rotateWebhookSecret(d, CLI_CALLER, "whe_unknown")).rejects.toMatchObject({ code: "not_found" });
  });

  test("a receiver answering 500 is retried on the schedule (clock moved, no sleeping), every attempt kept, then failed; retried by hand it is delivered with the same webhook-id", async () => {
    receiver.mode = "error";
    await addWebhookEndpoint(d, CLI_CALLER, { url: receiver.url, events: ["license.created"] });
    await createLicense(d, CLI_CALLER, body());
    const w = worker();
    expect((await w.tick()).attempted).toBe(1);
    for (const delay of RETRY_DELAYS_MS) {
      clock.advance(delay - 1);
      expect((await w.tick()).attempted).toBe(0); // not yet due
      clock.advance(1);
      expect((await w.tick()).attempted).toBe(1);
    }
    const [failed] = (await listDeliveries(d, CLI_CALLER, { status: "failed" })).deliveries;
    expect(failed).toMatchObject({ status: "failed", attempts: RETRY_DELAYS_MS.length + 1, nextAttempt: null });
    const { attempts } = await showDelivery(d, CLI_CALLER, failed!.id);
    expect(attempts.map((a) => [a.attempt, a.statusCode, a.error])).toEqual(attempts.map((_, i) => [i + 1, 500, "answered 500"]));
    clock.advance(86_400_000);
    expect((await w.tick()).attempted).toBe(0);
    receiver.mode = "ok";
    expect((await retryDelivery(d, CLI_CALLER, failed!.id)).status).toBe("pending");
    expect((await w.tick()).attempted).toBe(1);
    expect((await showDelivery(d, CLI_CALLER, failed!.id)).delivery.status).toBe("delivered");
    expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(receiver.received.length).toBe(RETRY_DELAYS_MS.length + 2);
    expect(await retryDelivery(d, CLI_CALLER, failed!.id).catch((e) => e.code)).toBe("invalid_request");
  });

  test("a receiver that is down: the refused connection is recorded and retried 5 s later", async () => {
    const url = `http://127.0.0.1:${await closedPort()}/hooks`;
    await addWebhookEndpoint(d, CLI_CALLER, { url, events: ["license.created"] });
    await createLicense(d, CLI_CALLER, body());
    await worker().tick();
    const [delivery] = (await listDeliveries(d, CLI_CALLER, {})).deliveries;
    expect(delivery).toMatchObject({ status: "pending", attempts: 1 });
    expect(Date.parse(delivery!.nextAttempt!)).toBe(Math.floor((clock() + 5_000) / 1000) * 1000);
    const [attempt] = (await showDelivery(d, CLI_CALLER, delivery!.id)).attempts;
    expect(attempt).toMatchObject({ statusCode: null, error: "connection refused" });
  });

  test("a slow receiver: the attempt ends at the timeout (shortened for the test) and is retried", async () => {
    receiver.mode = "slow";
    await addWebhookEndpoint(d, CLI_CALLER, { url: receiver.url, events: ["license.created"] });
    await createLicense(d, CLI_CALLER, body());
    const [received, answered] = [receiver.received.length, receiver.answered];
    await worker(150).tick();
    // Order, not elapsed time: the attempt reached the receiver and ended while it still held its answer.
    expect(receiver.received.length).toBe(received + 1);
    expect(receiver.answered).toBe(answered);
    const [delivery] = (await listDeliveries(d, CLI_CALLER, {})).deliveries;
    expect(delivery).toMatchObject({ status: "pending", attempts: 1 });
    const [attempt] = (await showDelivery(d, CLI_CALLER, delivery!.id)).attempts;
    expect(attempt).toMatchObject({ statusCode: null, error: "timeout" });
    expect(attempt!.durationMs).toBeGreaterThanOrEqual(140);
  });

  test("410 Gone disables the endpoint: that delivery fails, later events wait; enabled again, they are delivered", async () => {
    receiver.mode = "gone";
    const { endpoint } = await addWebhookEndpoint(d, CLI_CALLER, { url: receiver.url, events: ["license.created"] });
    await createLicense(d, CLI_CALLER, body());
    const w = worker();
    await w.tick();
    const [gone] = (await listDeliveries(d, CLI_CALLER, {})).deliveries;
    expect(gone).toMatchObject({ status: "failed", attempts: 1 });
    expect((await d.store.getWebhookEndpoint(endpoint.id))!).toMatchObject({ enabled: false, disabledReason: expect.stringContaining("410 Gone") });
    await createLicense(d, CLI_CALLER, body());
    expect(await w.tick()).toEqual({ fannedOut: 1, attempted: 0 });
    expect(receiver.received.length).toBe(1);
    receiver.mode = "ok";
    await setWebhookEndpointEnabled(d, CLI_CALLER, endpoint.id, true);
    await createLicense(d, CLI_CALLER, body());
    expect((await w.tick()).attempted).toBe(1);
    expect(receiver.received.length).toBe(2);
  });

  test("an endpoint gets only the types it subscribed to, and only events after it was added", async () => {
    await createLicense(d, CLI_CALLER, body());
    const revoked = startReceiver();
    try {
      await addWebhookEndpoint(d, CLI_CALLER, { url: receiver.url, events: ["license.created"] });
      await addWebhookEndpoint(d, CLI_CALLER, { url: revoked.url, events: ["license.revoked"] });
      const { license } = await createLicense(d, CLI_CALLER, body());
      await revokeLicense(d, CLI_CALLER, license.id);
      await worker().tick();
      expect(receiver.received.map((r) => JSON.parse(r.body).type)).toEqual(["license.created"]);
      expect(JSON.parse(receiver.received[0]!.body).data.license.id).toBe(license.id);
      expect(revoked.received.map((r) => JSON.parse(r.body).type)).toEqual(["license.revoked"]);
    } finally {
      await revoked.stop();
    }
  });

  test("the deliveries cursor is bound to its query (endpoint, status): with another query, or a bare delivery id, it is invalid_request", async () => {
    receiver.mode = "ok";
    const other = startReceiver();
    try {
      const { endpoint: a } = await addWebhookEndpoint(d, CLI_CALLER, { url: receiver.url, events: ["license.created"] });
      const { endpoint: b } = await addWebhookEndpoint(d, CLI_CALLER, { url: other.url, events: ["license.created"] });
      for (let i = 0; i < 3; i++) await createLicense(d, CLI_CALLER, body());
      await worker().tick();
      const first = await listDeliveries(d, CLI_CALLER, { endpoint: a.id, limit: "2" });
      expect(first.deliveries.map((x) => x.endpoint)).toEqual([a.id, a.id]);
      const rest = await listDeliveries(d, CLI_CALLER, { endpoint: a.id, limit: "2", cursor: first.next! });
      expect(rest.deliveries.length).toBe(1);
      expect(rest.next).toBeNull();
      const code = (q: Record<string, unknown>) =>
        listDeliveries(d, CLI_CALLER, q).then(
          () => "ok",
          (e: { code: string }) => e.code,
        );
      expect(await code({ endpoint: b.id, cursor: first.next! })).toBe("invalid_request");
      expect(await code({ endpoint: a.id, status: "failed", cursor: first.next! })).toBe("invalid_request");
      expect(await code({ cursor: first.next! })).toBe("invalid_request");
      expect(await code({ endpoint: a.id, cursor: first.deliveries[1]!.id })).toBe("invalid_request");
    } finally {
      await other.stop();
    }
  });
});
