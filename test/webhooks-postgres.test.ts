import { describe, expect, test } from "bun:test";
import { silentLogger } from "../src/config/log";
import { newEvent } from "../src/domain/events";
import { WebhookWorker } from "../src/domain/webhooks/worker";
import { openPostgresStore } from "../src/store/postgres";
import { announceSkip, freshSchema, PG_URL } from "./databases";
import { testClock } from "./helpers";

if (!PG_URL) announceSkip("test/webhooks-postgres.test.ts", "KEYTURN_TEST_POSTGRES_URL");

describe.skipIf(!PG_URL)("webhook workers sharing one PostgreSQL", () => {
  test("two workers (two connection pools, as two processes): every event delivered, no delivery attempted by both at once", async () => {
    const schema = await freshSchema();
    const [one, two] = await Promise.all([openPostgresStore(schema.url, { max: 4 }), openPostgresStore(schema.url, { max: 4 })]);
    const inFlight = new Set<string>();
    const seen = new Map<string, number>();
    let overlaps = 0;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        const id = request.headers.get("webhook-id")!;
        if (inFlight.has(id)) overlaps++;
        inFlight.add(id);
        const n = (seen.get(id) ?? 0) + 1;
        seen.set(id, n);
        await Bun.sleep(5);
        inFlight.delete(id);
        // every third event fails its first attempt, so retries are shared between the workers too
        const fail = n === 1 && Number(id.slice(-1).charCodeAt(0)) % 3 === 0;
        return new Response(null, { status: fail ? 503 : 200 });
      },
    });
    try {
      const clock = testClock(Date.now());
      await one.createWebhookEndpoint({
        id: "whe_pg",
        url: `http://127.0.0.1:${server.port}/h`,
        types: ["license.created"],
        secret: "whsec_" + Buffer.alloc(24, 7).toString("base64"),
        enabled: true,
        disabledReason: null,
        created: clock(),
      });
      const ids: string[] = [];
      for (let i = 0; i < 60; i++) {
        const e = newEvent("license.created", { n: i }, clock());
        ids.push(e.id);
        await (i % 2 ? one : two).appendEvent(e);
      }
      const workers = [
        new WebhookWorker({ store: one, clock, log: silentLogger, concurrency: 4, destinations: { allowHosts: ["127.0.0.1"] } }),
        new WebhookWorker({ store: two, clock, log: silentLogger, concurrency: 4, destinations: { allowHosts: ["127.0.0.1"] } }),
      ];
      for (let round = 0; round < 2; round++) {
        await Promise.all(workers.map((w) => w.tick()));
        await Promise.all(workers.map((w) => w.tick()));
        clock.advance(5_000);
      }
      expect(overlaps).toBe(0);
      expect([...seen.keys()].sort()).toEqual([...ids].sort());
      const delivered = await one.listDeliveries({ status: "delivered", limit: 1000 });
      expect(delivered.length).toBe(60);
      for (const dl of delivered) {
        const attempts = await two.listAttempts(dl.id);
        expect(attempts.length).toBe(seen.get(dl.eventId)!);
        expect(attempts.at(-1)!.statusCode).toBe(200);
      }
      expect((await one.listDeliveries({ status: "pending", limit: 10 })).length).toBe(0);
      expect([...seen.values()].some((n) => n === 2)).toBe(true);
    } finally {
      await server.stop(true);
      await Promise.all([one.close(), two.close()]);
      await schema.drop();
    }
  });
});
