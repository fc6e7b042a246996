import { afterEach, beforeEach, expect, test } from "bun:test";
import { silentLogger } from "../../../src/config/log";
import { VARIANTS } from "../../../src/config/variants";
import { CLI_CALLER, type AdminDeps } from "../../../src/domain/admin/deps";
import { createLicense } from "../../../src/domain/admin/licenses";
import { addWebhookEndpoint } from "../../../src/domain/webhooks/endpoints";
import { WebhookWorker } from "../../../src/domain/webhooks/worker";
import { testClock, testSite, type TestSite } from "../../helpers";

// Issue 21, item 9: 32 slow receivers delayed a healthy endpoint by 21 s per event (two rounds of
// 16 attempts, each waiting for its slowest). Asserted by order, not elapsed time: with a timeout
// longer than the test's patience, the healthy endpoint, added last, gets both events while every
// slow attempt is still hanging (none has ended, so none was waited for).
const TIMEOUT_MS = 120_000;
const PATIENCE_MS = 20_000;
const SLOW = 32;

let site: TestSite;
let d: AdminDeps;
let clock: ReturnType<typeof testClock>;
beforeEach(async () => {
  clock = testClock(Date.now());
  site = await testSite("alpha", { clock });
  d = { variant: VARIANTS.alpha, store: site.composed.store, clock, tokenTtlSeconds: 3600, webhookDestinations: { allowHosts: ["127.0.0.1"] } };
});
afterEach(() => site.close());

test("32 receivers that never answer do not delay a healthy endpoint: each event reaches it while they all still hang", async () => {
  let release!: () => void;
  const hung = new Promise<void>((r) => (release = r));
  let slowHits = 0;
  const slow = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch() {
      slowHits++;
      await hung;
      return new Response(null, { status: 204 });
    },
  });
  const arrivals: number[] = [];
  const fast = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch() {
      arrivals.push(performance.now());
      return new Response(null, { status: 204 });
    },
  });
  const worker = new WebhookWorker({ store: d.store, clock, log: silentLogger, timeoutMs: TIMEOUT_MS, everyMs: 10, destinations: d.webhookDestinations });
  try {
    for (let i = 0; i < SLOW; i++) await addWebhookEndpoint(d, CLI_CALLER, { url: `http://127.0.0.1:${slow.port}/slow/${i}`, events: ["license.created"] });
    const healthy = await addWebhookEndpoint(d, CLI_CALLER, { url: `http://127.0.0.1:${fast.port}/fast`, events: ["license.created"] });
    worker.start();
    // Two events: the second while every slow attempt of the first is still hanging.
    for (let n = 1; n <= 2; n++) {
      const created = performance.now();
      await createLicense(d, CLI_CALLER, { licensee: "Ada", organization: "AE", plan: "pro", planTitle: "Pro", seats: 1, channels: ["stable"] });
      while (arrivals.length < n && performance.now() - created < PATIENCE_MS) await Bun.sleep(5);
      expect(arrivals.length).toBe(n);
    }
    expect(slowHits).toBe(SLOW); // every slow receiver was being attempted meanwhile
    // ... and none of those attempts has ended: the healthy endpoint waited for none of them.
    const slowAttempts = (await site.composed.store.listDeliveries({ limit: 1000 })).filter((x) => x.endpointId !== healthy.endpoint.id && x.attempts > 0);
    expect(slowAttempts).toEqual([]);
  } finally {
    release();
    await worker.stop();
    await Promise.all([slow.stop(true), fast.stop(true)]);
  }
});
