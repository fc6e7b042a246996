/**
 * Never lost: `keyturn serve` is killed with SIGKILL between licence changes and their deliveries
 * (once with attempts in flight, then right after the changes); restarted, every event committed
 * is delivered, with the webhook-id it was first sent with.
 */
import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { VARIANTS } from "../src/config/variants";
import { Admin } from "../src/domain/admin/operator";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { Audit } from "../src/domain/audit";
import { systemClock } from "../src/domain/clock";
import { addWebhookEndpoint } from "../src/domain/webhooks/endpoints";
import { openSqliteStore } from "../src/store/sqlite";
import { device, tempDir } from "./helpers";
import { siteArgs, siteDirs, startServe } from "./processes";

const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("SIGKILL between licence changes and their deliveries loses no event; redelivery keeps the webhook-id", async () => {
  const dirs = siteDirs(root, "alpha");
  const store = openSqliteStore(dirs.data);
  const admin = new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock));

  let slow = true;
  const received: string[] = [];
  const delivered = new Set<string>();
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const id = request.headers.get("webhook-id")!;
      received.push(id);
      if (slow) {
        await Bun.sleep(3_000); // still waiting when the process is killed
        return new Response(null, { status: 503 });
      }
      delivered.add(id);
      return new Response(null, { status: 204 });
    },
  });
  await addWebhookEndpoint(
    { variant: VARIANTS.alpha, store, clock: systemClock, tokenTtlSeconds: 3600, webhookDestinations: { allowHosts: ["127.0.0.1"] } },
    CLI_CALLER,
    {
      url: `http://127.0.0.1:${receiver.port}/hooks`,
      events: ["activation.created", "license.created"],
    },
  );
  const { key } = await admin.createLicense({ licensee: "L", organization: "O", plan: "p", planTitle: "P", seats: 1000, channels: ["stable"], expires: null });
  await store.close();

  try {
    const activations = async (url: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const r = await fetch(`${url}/api/v1/licenses/activate`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key, device: device("alpha") }),
        });
        expect(r.status).toBe(200);
      }
    };
    // Round 1: the worker's attempts are in flight (the receiver has not answered) when it dies.
    let serve = await startServe([...siteArgs("alpha", dirs), "--webhook-allow-hosts", "127.0.0.1"]);
    await activations(serve.url, 10);
    for (let i = 0; i < 100 && received.length === 0; i++) await Bun.sleep(50);
    expect(received.length).toBeGreaterThan(0);
    await serve.kill();
    const inFlightAtKill = [...received];
    slow = false;
    // Rounds 2-4: killed right after the changes, before the worker's next round.
    for (let round = 0; round < 3; round++) {
      serve = await startServe([...siteArgs("alpha", dirs), "--webhook-allow-hosts", "127.0.0.1"]);
      await activations(serve.url, 10);
      await serve.kill();
      expect(serve.proc.signalCode).toBe("SIGKILL");
    }
    const check = openSqliteStore(dirs.data);
    const committed = (await check.listEvents({ after: 0, limit: 1000, types: ["activation.created", "license.created"] })).map((e) => e.id);
    await check.close();
    expect(committed.length).toBe(41);

    serve = await startServe([...siteArgs("alpha", dirs), "--webhook-allow-hosts", "127.0.0.1"]);
    try {
      // the leases of round 1's attempts run out 15 s after they were taken; then they are retried
      for (let i = 0; i < 600 && delivered.size < committed.length; i++) await Bun.sleep(50);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
    expect(committed.filter((id) => !delivered.has(id))).toEqual([]);
    expect([...delivered].filter((id) => !committed.includes(id))).toEqual([]);
    // the deliveries attempted before the kill were sent again with the same id
    for (const id of inFlightAtKill) {
      expect(delivered.has(id)).toBe(true);
      expect(received.filter((x) => x === id).length).toBeGreaterThanOrEqual(2);
    }
  } finally {
    await receiver.stop(true);
  }
}, 90_000);
