import { describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { openPostgresStore } from "../../src/store/postgres";
import { openSqliteStore } from "../../src/store/sqlite";
import type { BridgeWrite, LicenseRecord, Store } from "../../src/store/types";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { tempDir } from "../helpers";

/**
 * Migration 18 in both dialects: a bridge event's row written in its change's transaction makes a
 * second delivery of the same event fail as a whole (the licence is not created twice, even by two
 * writers at once); links lead to a licence directly or through an alias.
 */
if (!PG_URL && process.env.CI !== "true") announceSkip("test/store/bridge-events.test.ts (PostgreSQL part)", "KEYTURN_TEST_POSTGRES_URL");

const backends: { name: string; open: () => Promise<{ store: Store; done: () => Promise<void> }> }[] = [
  {
    name: "SQLite",
    async open() {
      const dir = tempDir();
      const store = openSqliteStore(dir);
      return { store, done: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
];
if (PG_URL || process.env.CI === "true")
  backends.push({
    name: "PostgreSQL",
    async open() {
      const schema = await freshSchema();
      const store = await openPostgresStore(schema.url, { max: 4 });
      return { store, done: async () => (await store.close(), await schema.drop()) };
    },
  });

const license = (id: string): LicenseRecord => ({
  id,
  kind: "license",
  keyHash: `hash-${id}`,
  licensee: "Ada",
  organization: "",
  plan: "pro",
  planTitle: "Pro",
  channels: ["stable"],
  seats: 1,
  issued: 1_000,
  expires: null,
  revoked: null,
});
const write = (eventId: string, licenseId: string | null, links: BridgeWrite["links"] = []): BridgeWrite => ({
  event: { provider: "stripe", eventId, type: "invoice.paid", received: 2_000, outcome: licenseId ? "applied" : "ignored", detail: "d", licenseId },
  links,
});

for (const backend of backends)
  describe(`bridge events on ${backend.name}`, () => {
    test("an event recorded with its licence in one transaction: the same event again, even at once, creates nothing", async () => {
      const { store, done } = await backend.open();
      try {
        const attempts = await Promise.allSettled(
          ["lic_a", "lic_b"].map((id) =>
            store.createLicense(license(id), { bridge: (l) => write("evt_1", l.id, [{ provider: "stripe", reference: "sub_1", licenseId: l.id }]) }),
          ),
        );
        expect(attempts.filter((a) => a.status === "fulfilled")).toHaveLength(1);
        expect(await store.listLicenses()).toHaveLength(1);
        const recorded = await store.getBridgeEvent("stripe", "evt_1");
        expect(recorded?.licenseId).toBe((await store.listLicenses())[0]!.id);
        expect(await store.findBridgeLink("stripe", ["nope", "sub_1"])).toBe(recorded!.licenseId);
        // An event that changes nothing is recorded once; the second try says so.
        expect(await store.recordBridgeEvent(write("evt_2", null))).toBe(true);
        expect(await store.recordBridgeEvent(write("evt_2", null))).toBe(false);
        await store.countBridgeReplay("stripe", "evt_2");
        expect((await store.getBridgeEvent("stripe", "evt_2"))?.replays).toBe(1);
      } finally {
        await done();
      }
    });

    test("a payment noted before its invoice's licence leads to it once the invoice is linked; a link is not moved to another licence", async () => {
      const { store, done } = await backend.open();
      try {
        await store.recordBridgeEvent(write("evt_pay", null, [{ provider: "stripe", reference: "pi_1", licenseId: null, alias: "in_1" }]));
        expect(await store.findBridgeLink("stripe", ["pi_1"])).toBeNull();
        await store.createLicense(license("lic_x"), { bridge: (l) => write("evt_buy", l.id, [{ provider: "stripe", reference: "in_1", licenseId: l.id }]) });
        expect(await store.findBridgeLink("stripe", ["pi_1"])).toBe("lic_x");
        await store.recordBridgeEvent(write("evt_other", null, [{ provider: "stripe", reference: "in_1", licenseId: "lic_y" }]));
        expect(await store.findBridgeLink("stripe", ["in_1"])).toBe("lic_x");
        expect(await store.findBridgeLink("paddle", ["in_1"])).toBeNull();
      } finally {
        await done();
      }
    });

    test("a customer's e-mail: the newest update wins, per provider", async () => {
      const { store, done } = await backend.open();
      try {
        await store.rememberBridgeCustomer("paddle", "ctm_1", "new@example.com", 2_000);
        await store.rememberBridgeCustomer("paddle", "ctm_1", "old@example.com", 1_000);
        expect(await store.bridgeCustomerEmail("paddle", "ctm_1")).toBe("new@example.com");
        await store.rememberBridgeCustomer("paddle", "ctm_1", "newer@example.com", 3_000);
        expect(await store.bridgeCustomerEmail("paddle", "ctm_1")).toBe("newer@example.com");
        expect(await store.bridgeCustomerEmail("stripe", "ctm_1")).toBeNull();
      } finally {
        await done();
      }
    });

    test("listed newest first, a page at a time", async () => {
      const { store, done } = await backend.open();
      try {
        for (let i = 0; i < 5; i++) await store.recordBridgeEvent({ event: { ...write(`evt_${i}`, null).event, received: 1_000 + (i % 3) }, links: [] });
        const first = await store.listBridgeEvents({ limit: 3 });
        expect(first.map((e) => e.eventId)).toEqual(["evt_2", "evt_4", "evt_1"]);
        const last = first.at(-1)!;
        const rest = await store.listBridgeEvents({ before: { received: last.received, provider: last.provider, eventId: last.eventId }, limit: 3 });
        expect(rest.map((e) => e.eventId)).toEqual(["evt_3", "evt_0"]);
      } finally {
        await done();
      }
    });
  });
