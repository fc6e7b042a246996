import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { MeterRecord, MeterUse } from "../../src/store/meter-types";
import type { Store } from "../../src/store/types";
import { auditLine, license, seat, type StoreBackend } from "./store.suite";

const T0 = Date.parse("2026-11-21T12:00:00Z");
const DAY = 86_400_000;

/** A use of `amount` that fits or is refused, rolling nothing (the domain's rules are src/domain/meters.ts's). */
function use(licenseId: string, meter: string, amount: number, key: string, now = T0): MeterUse {
  return {
    licenseId,
    meter,
    amount,
    key,
    now,
    apply: (m: MeterRecord) => (m.used + amount > m.limit ? null : { ...m, used: m.used + amount }),
    journal: (_before, after) => ({
      answer: JSON.stringify({ remaining: after.limit - after.used }),
      audit: auditLine({ action: "usage", licenseId }),
      events: [],
    }),
  };
}

/** The meters' and trials' part of the Store contract (migration 16), run against one back end. */
export function meterTrialStoreSuite(label: string, backend: StoreBackend): void {
  describe(`Store contract, meters and trials: ${label}`, () => {
    let records: Awaited<ReturnType<StoreBackend["fresh"]>>;
    let store: Store;

    beforeEach(async () => {
      records = await backend.fresh();
      store = await records.open();
    });
    afterEach(async () => {
      await store.close().catch(() => {});
      await records.drop();
    });

    test("meters are written with their licence, replaced whole: kept by name keep their use unless the period changed", async () => {
      const l = license();
      await store.createLicense(l, {
        meters: {
          licenseId: l.id,
          now: T0,
          meters: [
            { name: "credits", limit: 5, period: null },
            { name: "exports", limit: 10, period: 30 * DAY },
          ],
        },
      });
      expect(await store.listMeters(l.id)).toEqual([
        { licenseId: l.id, name: "credits", limit: 5, period: null, windowStart: T0, used: 0 },
        { licenseId: l.id, name: "exports", limit: 10, period: 30 * DAY, windowStart: T0, used: 0 },
      ]);
      expect((await store.useMeter(use(l.id, "exports", 4, "a"))).outcome).toBe("used");
      expect((await store.useMeter(use(l.id, "credits", 2, "b"))).outcome).toBe("used");
      const later = T0 + DAY;
      const changed = await store.updateLicense(
        l.id,
        {},
        {
          audit: auditLine({ action: "license-update", licenseId: l.id }),
          meters: {
            licenseId: l.id,
            now: later,
            meters: [
              { name: "credits", limit: 9, period: 7 * DAY },
              { name: "exports", limit: 20, period: 30 * DAY },
            ],
          },
        },
      );
      expect(changed.outcome).toBe("updated");
      expect(await store.listMeters(l.id)).toEqual([
        { licenseId: l.id, name: "credits", limit: 9, period: 7 * DAY, windowStart: later, used: 0 },
        { licenseId: l.id, name: "exports", limit: 20, period: 30 * DAY, windowStart: T0, used: 4 },
      ]);
      // The change with meters only still writes its audit line.
      expect((await store.listAudit({ licenseId: l.id })).map((a) => a.action)).toContain("license-update");
      await store.updateLicense(l.id, {}, { meters: { licenseId: l.id, now: later, meters: [] } });
      expect(await store.listMeters(l.id)).toEqual([]);
    });

    test("a use: written with its answer, refused past the limit, replayed by its key, unknown meter; old keys pruned", async () => {
      const l = license();
      await store.createLicense(l, { meters: { licenseId: l.id, now: T0, meters: [{ name: "exports", limit: 10, period: null }] } });
      expect(await store.useMeter(use(l.id, "exports", 7, "k1"))).toEqual({ outcome: "used", answer: '{"remaining":3}' });
      expect(await store.useMeter(use(l.id, "exports", 7, "k1"))).toEqual({ outcome: "replayed", answer: '{"remaining":3}', meter: "exports", amount: 7 });
      const refused = await store.useMeter(use(l.id, "exports", 4, "k2"));
      expect(refused).toMatchObject({ outcome: "refused", meter: { used: 7, limit: 10 } });
      expect(await store.useMeter(use(l.id, "imports", 1, "k3"))).toEqual({ outcome: "unknown" });
      expect((await store.listMeters(l.id))[0]!.used).toBe(7);
      expect((await store.listAudit({ licenseId: l.id })).filter((a) => a.action === "usage")).toHaveLength(1);
      expect(await store.pruneIdempotency(T0 + 1)).toBeGreaterThanOrEqual(1);
      expect((await store.useMeter(use(l.id, "exports", 3, "k1", T0 + 2))).outcome).toBe("used");
    });

    test("meter totals: use in current periods by name, a period that ended counts none, revoked licences left out", async () => {
      const [a, b, c] = [license(), license(), license()];
      for (const l of [a, b, c])
        await store.createLicense(l, { meters: { licenseId: l.id, now: T0, meters: [{ name: "exports", limit: 10, period: l === b ? DAY : null }] } });
      await store.useMeter(use(a.id, "exports", 10, "1"));
      await store.useMeter(use(b.id, "exports", 3, "2"));
      await store.useMeter(use(c.id, "exports", 5, "3"));
      await store.revokeLicense(c.id, T0);
      expect(await store.meterTotals(T0 + 1000)).toEqual([{ name: "exports", licenses: 2, used: 13, limit: 20, exhausted: 1 }]);
      expect(await store.meterTotals(T0 + 2 * DAY)).toEqual([{ name: "exports", licenses: 2, used: 10, limit: 20, exhausted: 1 }]);
    });

    test("trials: one per device, found by a second start; a conversion ends the licence and its seats once", async () => {
      const first = license({ id: "lic_trial1" });
      const started = await store.startTrial({ deviceHash: "dev-1", licenseId: first.id, started: T0, converted: null, convertedTo: null }, first, {
        audit: auditLine({ action: "trial-start", licenseId: first.id }),
        meters: { licenseId: first.id, now: T0, meters: [{ name: "exports", limit: 3, period: null }] },
      });
      expect(await store.listMeters(first.id)).toEqual([{ licenseId: first.id, name: "exports", limit: 3, period: null, windowStart: T0, used: 0 }]);
      expect(started).toEqual({ outcome: "started", trial: { deviceHash: "dev-1", licenseId: first.id, started: T0, converted: null, convertedTo: null } });
      const second = license({ id: "lic_trial2" });
      const again = await store.startTrial({ deviceHash: "dev-1", licenseId: second.id, started: T0 + 5, converted: null, convertedTo: null }, second, {});
      expect(again).toEqual({ outcome: "existing", trial: started.trial });
      expect(await store.getLicense(second.id)).toBeNull();
      await store.activate(seat(first.id, { deviceHash: "dev-1", installation: "dev-1" }));

      const bought = license({ id: "lic_bought" });
      await store.createLicense(bought);
      const ended: string[] = [];
      const converted = await store.convertTrial("dev-1", bought.id, T0 + DAY, (trial, l, seats) => {
        ended.push(...seats.map((s) => s.id), String(l.expires));
        return { audit: auditLine({ action: "trial-convert", licenseId: trial.licenseId }), events: [] };
      });
      expect(converted).toMatchObject({ deviceHash: "dev-1", converted: T0 + DAY, convertedTo: bought.id });
      expect(ended).toHaveLength(2);
      expect(ended[1]).toBe(String(T0 + DAY));
      expect(await store.countActiveSeats(first.id)).toBe(0);
      expect((await store.getLicense(first.id))!.expires).toBe(T0 + DAY);
      expect(await store.convertTrial("dev-1", bought.id, T0 + 2 * DAY, () => ({ events: [] }))).toBeNull();
      expect(await store.findTrial("dev-1")).toEqual(converted);
      expect(await store.getTrialOfLicense(first.id)).toEqual(converted);
      expect(await store.findTrial("dev-none")).toBeNull();
      expect(await store.trialCounts()).toEqual({ started: 1, converted: 1 });
    });

    test("trials list newest first, a page at a time", async () => {
      for (let i = 0; i < 5; i++) {
        const l = license();
        await store.startTrial({ deviceHash: `d${i}`, licenseId: l.id, started: T0 + (i % 3) * 1000, converted: null, convertedTo: null }, l, {});
      }
      const all = await store.listTrials({ limit: 10 });
      expect(all.map((t) => t.deviceHash)).toEqual(["d2", "d1", "d4", "d0", "d3"]);
      const page = await store.listTrials({ limit: 2, after: { started: all[1]!.started, deviceHash: all[1]!.deviceHash } });
      expect(page.map((t) => t.deviceHash)).toEqual(["d4", "d0"]);
    });
  });
}
