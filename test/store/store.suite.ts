import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { newEvent } from "../../src/domain/events";
import { bucketOf } from "../../src/domain/releases/rollout";
import type { ActivateInput, AuditRecord, LicenseRecord, Store } from "../../src/store/types";

/** Fresh, empty, migrated records, and a way to open more connections to the very same records. */
export interface StoreBackend {
  fresh(): Promise<{ open(): Promise<Store>; drop(): Promise<void> }>;
}

const T0 = Date.parse("2026-11-21T12:00:00Z");
const rnd = () => randomBytes(6).toString("hex");

export function license(extra: Partial<LicenseRecord> = {}): LicenseRecord {
  return {
    id: `lic_${rnd()}`,
    kind: "license",
    keyHash: rnd() + rnd(),
    licensee: "Ada Lovelace",
    organization: "Analytical Engines Ltd",
    plan: "pro",
    planTitle: "Professional",
    channels: ["stable", "preview"],
    seats: 2,
    issued: T0,
    expires: null,
    revoked: null,
    email: null,
    metadata: {},
    tokenTtl: null,
    ...extra,
  };
}

export function seat(licenseId: string, extra: Partial<ActivateInput> = {}): ActivateInput {
  const hash = rnd();
  return {
    licenseId,
    kind: "license",
    installation: hash,
    deviceHash: hash,
    product: null,
    name: "Office PC",
    platform: "win-x64",
    version: "1.0.0",
    newId: `act_${rnd()}`,
    now: T0,
    ...extra,
  };
}

export function auditLine(extra: Partial<AuditRecord> = {}): AuditRecord {
  return {
    ref: `ref_${rnd()}`,
    time: T0,
    address: "203.0.113.7",
    action: "activate",
    activationId: null,
    licenseId: null,
    outcome: "ok",
    error: null,
    actor: null,
    ...extra,
  };
}

/** The whole Store contract, run against one back end. */
export function storeSuite(label: string, backend: StoreBackend): void {
  describe(`Store contract: ${label}`, () => {
    let records: Awaited<ReturnType<StoreBackend["fresh"]>>;
    let store: Store;
    const opened: Store[] = [];
    /** Another connection (pool) to the same records, as a second keyturn process would have. */
    const another = async () => {
      const s = await records.open();
      opened.push(s);
      return s;
    };

    beforeEach(async () => {
      records = await backend.fresh();
      store = await another();
    });
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close().catch(() => {});
      await records.drop();
    });

    test("licenses: create, get, find by key hash, list in issue order, revoke once", async () => {
      const a = license({ issued: T0 + 1000, expires: T0 + 86_400_000 });
      const b = license({ issued: T0 });
      await store.createLicense(a);
      await store.createLicense(b);
      expect(await store.getLicense(a.id)).toEqual(a);
      expect(await store.findLicenseByKeyHash(b.keyHash!)).toEqual(b);
      expect(await store.getLicense("lic_none")).toBeNull();
      expect(await store.findLicenseByKeyHash("nope")).toBeNull();
      expect((await store.listLicenses()).map((l) => l.id)).toEqual([b.id, a.id]);
      expect(await store.revokeLicense(a.id, T0 + 5)).toBe(true);
      expect(await store.revokeLicense(a.id, T0 + 9)).toBe(false);
      expect(await store.revokeLicense("lic_none", T0)).toBe(false);
      expect((await store.getLicense(a.id))!.revoked).toBe(T0 + 5);
    });

    test("a key hash belongs to one license only", async () => {
      const a = license();
      await store.createLicense(a);
      await expect(store.createLicense(license({ keyHash: a.keyHash }))).rejects.toThrow();
    });

    test("staff upsert creates the row, then updates names, channels and seats but keeps the rest", async () => {
      const first = license({ id: "staff:alice", kind: "staff", keyHash: null, licensee: "Alice", seats: 5 });
      expect(await store.upsertStaffLicense(first)).toEqual(first);
      const again = await store.upsertStaffLicense({
        ...first,
        licensee: "Alice Smith",
        organization: "Ops",
        channels: ["stable"],
        seats: 3,
        issued: T0 + 999,
        plan: "other",
      });
      expect(again).toEqual({ ...first, licensee: "Alice Smith", organization: "Ops", channels: ["stable"], seats: 3 });
      expect(await store.getLicense("staff:alice")).toEqual(again);
    });

    test("activate: created, then reused for the same installation (device fields updated), then seat_limit with the holders", async () => {
      const lic = license({ seats: 2 });
      await store.createLicense(lic);
      const one = seat(lic.id, { now: T0 + 1 });
      const r1 = await store.activate(one);
      expect(r1.outcome).toBe("created");
      if (r1.outcome === "seat_limit") throw new Error();
      expect(r1.seatsUsed).toBe(1);
      expect(r1.activation).toEqual({
        id: one.newId,
        licenseId: lic.id,
        kind: "license",
        installation: one.installation,
        deviceHash: one.deviceHash,
        product: null,
        name: "Office PC",
        platform: "win-x64",
        version: "1.0.0",
        created: T0 + 1,
        lastSeen: T0 + 1,
        deactivated: null,
        tokenExp: null,
      });

      const r2 = await store.activate({ ...one, newId: "act_unused", name: "Renamed", version: "2.0.0", now: T0 + 50 });
      expect(r2.outcome).toBe("reused");
      if (r2.outcome === "seat_limit") throw new Error();
      expect(r2.seatsUsed).toBe(1);
      expect(r2.activation).toMatchObject({ id: one.newId, name: "Renamed", version: "2.0.0", created: T0 + 1, lastSeen: T0 + 50 });
      expect(await store.getActivation("act_unused")).toBeNull();

      const two = seat(lic.id, { now: T0 + 2 });
      expect(await store.activate(two)).toMatchObject({ outcome: "created", seatsUsed: 2 });
      const r3 = await store.activate(seat(lic.id, { now: T0 + 3 }));
      expect(r3.outcome).toBe("seat_limit");
      if (r3.outcome !== "seat_limit") throw new Error();
      expect(r3.holders.map((h) => h.id)).toEqual([one.newId, two.newId]);
    });

    test("deactivate gives the seat back once; the installation can take a new seat", async () => {
      const lic = license({ seats: 1 });
      await store.createLicense(lic);
      const one = seat(lic.id);
      await store.activate(one);
      expect(await store.deactivate(one.newId, T0 + 10)).toBe(true);
      expect(await store.deactivate(one.newId, T0 + 11)).toBe(false);
      expect(await store.deactivate("act_none", T0 + 11)).toBe(false);
      expect((await store.getActivation(one.newId))!.deactivated).toBe(T0 + 10);
      expect(await store.countActiveSeats(lic.id)).toBe(0);
      const back = await store.activate({ ...one, newId: `act_${rnd()}`, now: T0 + 20 });
      expect(back).toMatchObject({ outcome: "created", seatsUsed: 1 });
    });

    test("activationStatus reads deactivation, license revocation and expiry; null when unknown", async () => {
      const lic = license({ expires: T0 + 1e6 });
      await store.createLicense(lic);
      const one = seat(lic.id);
      await store.activate(one);
      expect(await store.activationStatus("act_none")).toBeNull();
      expect(await store.activationStatus(one.newId)).toEqual({ deactivated: null, licenseRevoked: null, licenseExpires: T0 + 1e6 });
      await store.revokeLicense(lic.id, T0 + 7);
      await store.deactivate(one.newId, T0 + 8);
      expect(await store.activationStatus(one.newId)).toEqual({ deactivated: T0 + 8, licenseRevoked: T0 + 7, licenseExpires: T0 + 1e6 });
    });

    test("touchActivation records device fields and last-seen; list and count see active and deactivated rows", async () => {
      const lic = license({ seats: 3 });
      await store.createLicense(lic);
      const a = seat(lic.id, { now: T0 + 1, product: "studio" });
      const b = seat(lic.id, { now: T0 + 2 });
      await store.activate(a);
      await store.activate(b);
      await store.touchActivation(a.newId, { deviceHash: a.deviceHash, product: "viewer", name: "Laptop", platform: "mac-arm64", version: "3.1.0" }, T0 + 99);
      expect(await store.getActivation(a.newId)).toMatchObject({
        product: "viewer",
        name: "Laptop",
        platform: "mac-arm64",
        version: "3.1.0",
        lastSeen: T0 + 99,
        created: T0 + 1,
      });
      await store.deactivate(b.newId, T0 + 100);
      expect((await store.listActivations(lic.id)).map((x) => [x.id, x.deactivated])).toEqual([
        [a.newId, null],
        [b.newId, T0 + 100],
      ]);
      expect(await store.listActivations("lic_none")).toEqual([]);
      expect(await store.countActiveSeats(lic.id)).toBe(1);
      expect(await store.countActiveSeats("lic_none")).toBe(0);
    });

    test("getActivationWithLicense reads the activation, its whole license and the active seats at once", async () => {
      const lic = license({ seats: 4, expires: T0 + 1e6, channels: ["stable", "beta"], tokenTtl: 300 * 86_400 });
      await store.createLicense(lic);
      const a = seat(lic.id);
      const b = seat(lic.id, { installation: "other", deviceHash: "h2" });
      await store.activate(a);
      await store.activate(b);
      const got = await store.getActivationWithLicense(a.newId);
      expect(got!.activation).toEqual((await store.getActivation(a.newId))!);
      expect(got!.license).toEqual(lic);
      expect(got!.seatsUsed).toBe(2);
      await store.deactivate(b.newId, T0 + 5);
      await store.revokeLicense(lic.id, T0 + 6);
      const later = await store.getActivationWithLicense(a.newId);
      expect(later!.seatsUsed).toBe(1);
      expect(later!.license.revoked).toBe(T0 + 6);
      expect(await store.getActivationWithLicense("act_none")).toBeNull();
    });

    test("a maintenance window and features (migration 15): kept whole, read back by every read, changed and cleared by a patch; absent when unused", async () => {
      const lic = license({ updatesUntil: T0 + 365 * 86_400_000, features: ["export-pdf", "max-projects=50"] });
      const plain = license();
      await store.createLicense(lic);
      await store.createLicense(plain);
      expect(await store.getLicense(lic.id)).toEqual(lic);
      expect(await store.findLicenseByKeyHash(lic.keyHash!)).toEqual(lic);
      const a = seat(lic.id);
      await store.activate(a);
      expect((await store.getActivationWithLicense(a.newId))!.license).toEqual(lic);
      const found = (await store.searchLicenses({ now: T0, limit: 10 })).map((r) => r.license);
      expect(found.find((l) => l.id === lic.id)).toEqual(lic);
      // A licence that uses neither reads back exactly as before: no field at all.
      const back = (await store.getLicense(plain.id))!;
      expect("updatesUntil" in back || "features" in back).toBe(false);
      const changed = await store.updateLicense(lic.id, { updatesUntil: T0, features: ["ai"] }, {});
      expect(changed.outcome === "updated" && [changed.license.updatesUntil, changed.license.features]).toEqual([T0, ["ai"]]);
      await store.updateLicense(lic.id, { updatesUntil: null, features: [] }, {});
      const cleared = (await store.getLicense(lic.id))!;
      expect("updatesUntil" in cleared || "features" in cleared).toBe(false);
    });

    test("a granted seat's audit line is written with it, carrying the seat's activation id; a refused one writes none", async () => {
      const lic = license({ seats: 1 });
      await store.createLicense(lic);
      const line = (ref: string) => ({
        ref,
        time: T0,
        address: "192.0.2.1",
        action: "activate" as const,
        licenseId: lic.id,
        outcome: "ok" as const,
        error: null,
      });
      const refs = [`ref_${rnd()}`, `ref_${rnd()}`, `ref_${rnd()}`];
      const first = seat(lic.id, { audit: line(refs[0]!) });
      await store.activate(first);
      const again = await store.activate({ ...first, newId: `act_${rnd()}`, audit: line(refs[1]!) });
      expect(again.outcome).toBe("reused");
      const refused = await store.activate(seat(lic.id, { installation: "other", audit: line(refs[2]!) }));
      expect(refused.outcome).toBe("seat_limit");
      const lines = await store.listAudit({ licenseId: lic.id });
      expect(lines.map((l) => l.activationId)).toEqual([first.newId, first.newId]);
      expect(lines.map((l) => l.ref).sort()).toEqual([refs[0]!, refs[1]!].sort());
    });

    test("a licence's audit lines, granted seats (held and ended) and every other kind, newest first and page by page; no other licence's", async () => {
      const lic = license({ seats: 2 });
      const other = license();
      await store.createLicense(lic);
      await store.createLicense(other);
      const granted = (t: number) => ({
        ref: `ref_${rnd()}`,
        time: T0 + t,
        address: "192.0.2.1",
        action: "activate" as const,
        licenseId: lic.id,
        outcome: "ok" as const,
        error: null,
      });
      const held = seat(lic.id, { now: T0 + 1, audit: granted(1) });
      const ended = seat(lic.id, { now: T0 + 2, audit: granted(2) });
      await store.activate(held);
      await store.activate(ended);
      await store.deactivate(ended.newId, T0 + 3);
      await store.activate({ ...held, newId: `act_${rnd()}`, now: T0 + 4, audit: granted(4) }); // its seat again
      await store.writeAudit(auditLine({ time: T0 + 5, action: "deactivate", licenseId: lic.id, activationId: ended.newId }));
      await store.writeAudit(auditLine({ time: T0 + 6, licenseId: lic.id, outcome: "refused", error: "seat_limit" }));
      // A refused activate line naming an activation this store does not hold: still found by the licence.
      await store.writeAudit(
        auditLine({ time: T0 + 7, action: "activate", licenseId: lic.id, activationId: "act_elsewhere", outcome: "refused", error: "rate_limited" }),
      );
      await store.activate(seat(other.id, { now: T0 + 8, audit: { ...granted(8), licenseId: other.id } }));
      await store.writeAudit(auditLine({ time: T0 + 9, action: "deactivate", licenseId: other.id, activationId: held.newId }));
      const all = await store.listAudit({ licenseId: lic.id });
      expect(all.map((l) => l.time - T0)).toEqual([7, 6, 5, 4, 2, 1]);
      expect(all.map((l) => l.activationId)).toEqual(["act_elsewhere", null, ended.newId, held.newId, ended.newId, held.newId]);
      const first = await store.listAudit({ licenseId: lic.id, limit: 4 });
      const rest = await store.listAudit({ licenseId: lic.id, limit: 4, after: { time: first.at(-1)!.time, ref: first.at(-1)!.ref } });
      expect([...first, ...rest].map((l) => l.ref)).toEqual(all.map((l) => l.ref));
      expect((await store.listAudit({ licenseId: lic.id, since: T0 + 2, until: T0 + 6 })).map((l) => l.time - T0)).toEqual([5, 4, 2]);
      expect((await store.listAudit({ licenseId: lic.id, error: "seat_limit" })).map((l) => l.time - T0)).toEqual([6]);
    });

    test("N parallel activations through two connections with k free seats take exactly k", async () => {
      const lic = license({ seats: 5 });
      await store.createLicense(lic);
      await store.activate(seat(lic.id));
      await store.activate(seat(lic.id));
      const other = await another();
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? store : other).activate(seat(lic.id, { now: T0 + i }))));
      expect(results.filter((r) => r.outcome === "created")).toHaveLength(3);
      expect(results.filter((r) => r.outcome === "seat_limit")).toHaveLength(13);
      expect(await store.countActiveSeats(lic.id)).toBe(5);
      const used = results.flatMap((r) => (r.outcome === "created" ? [r.seatsUsed] : [])).sort();
      expect(used).toEqual([3, 4, 5]);
    });

    test("one installation activating in parallel gets one seat, reused by the others", async () => {
      const lic = license({ seats: 3 });
      await store.createLicense(lic);
      const other = await another();
      const same = seat(lic.id);
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? store : other).activate({ ...same, newId: `act_${rnd()}` })));
      expect(results.filter((r) => r.outcome === "created")).toHaveLength(1);
      expect(results.filter((r) => r.outcome === "reused")).toHaveLength(7);
      expect(await store.countActiveSeats(lic.id)).toBe(1);
    });

    test("challenges: consumed once, then used; unknown nonces; prune removes the expired", async () => {
      const c = { nonceHash: rnd(), installation: "inst", created: T0, expires: T0 + 300_000, used: null };
      await store.createChallenge(c);
      expect(await store.findChallenge(c.nonceHash)).toEqual(c);
      expect(await store.findChallenge(c.nonceHash)).toEqual(c); // reading it does not use it
      expect(await store.findChallenge("nope")).toBeNull();
      expect(await store.consumeChallenge(c.nonceHash, T0 + 5)).toEqual({ outcome: "consumed", challenge: { ...c, used: T0 + 5 } });
      expect(await store.findChallenge(c.nonceHash)).toEqual({ ...c, used: T0 + 5 });
      expect(await store.consumeChallenge(c.nonceHash, T0 + 6)).toEqual({ outcome: "used" });
      expect(await store.consumeChallenge("nope", T0)).toEqual({ outcome: "unknown" });
      const later = { ...c, nonceHash: rnd(), expires: T0 + 900_000 };
      await store.createChallenge(later);
      expect(await store.pruneChallenges(T0 + 300_001)).toBe(1);
      expect(await store.consumeChallenge(c.nonceHash, T0 + 7)).toEqual({ outcome: "unknown" });
      expect((await store.consumeChallenge(later.nonceHash, T0 + 8)).outcome).toBe("consumed");
    });

    test("a challenge consumed by many racing callers on two connections goes to exactly one", async () => {
      const c = { nonceHash: rnd(), installation: "inst", created: T0, expires: T0 + 300_000, used: null };
      await store.createChallenge(c);
      const other = await another();
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? store : other).consumeChallenge(c.nonceHash, T0 + i)));
      expect(results.filter((r) => r.outcome === "consumed")).toHaveLength(1);
      expect(results.filter((r) => r.outcome === "used")).toHaveLength(11);
    });

    test("audit: written lines come back newest first, by each filter, limited; prune removes the old", async () => {
      const lines = [
        // Not a granted seat's line: those are written with the seat they name (the test above).
        auditLine({ time: T0 + 1, action: "refresh", licenseId: "lic_a", activationId: "act_1" }),
        auditLine({ time: T0 + 2, licenseId: "lic_a", activationId: "act_2", outcome: "refused", error: "seat_limit" }),
        auditLine({ time: T0 + 3, licenseId: "lic_b", activationId: null, address: null, action: "license-create" }),
        auditLine({ time: T0 + 4, outcome: "refused", error: "rate_limited" }),
      ];
      for (const l of lines) await store.writeAudit(l);
      const refs = (xs: AuditRecord[]) => xs.map((x) => x.ref);
      const [l1, l2, l3, l4] = lines.map((l) => l.ref) as [string, string, string, string];
      expect(await store.listAudit({})).toEqual([...lines].reverse());
      expect(refs(await store.listAudit({ licenseId: "lic_a" }))).toEqual([l2, l1]);
      expect(refs(await store.listAudit({ activationId: "act_1" }))).toEqual([l1]);
      expect(refs(await store.listAudit({ error: "seat_limit" }))).toEqual([l2]);
      expect(refs(await store.listAudit({ since: T0 + 3 }))).toEqual([l4, l3]);
      expect(refs(await store.listAudit({ until: T0 + 2 }))).toEqual([l1]);
      expect(refs(await store.listAudit({ since: T0 + 2, until: T0 + 4 }))).toEqual([l3, l2]);
      expect(refs(await store.listAudit({ limit: 2 }))).toEqual([l4, l3]);
      expect(refs(await store.listAudit({ licenseId: "lic_a", error: "seat_limit", since: T0 }))).toEqual([l2]);
      expect(await store.pruneAudit(T0 + 3)).toBe(2);
      expect(refs(await store.listAudit({}))).toEqual([l4, l3]);
    });

    /** Polls until `f` is true (another process's view may lag by the store's stated bound), at most 3 s. */
    const eventually = async (f: () => Promise<boolean>) => {
      for (let i = 0; i < 300 && !(await f()); i++) await Bun.sleep(10);
      return f();
    };

    test("release controls: halt, resume (the halt's length kept), withdraw, restore; a repeat changes nothing; another connection sees the generation move", async () => {
      const key = { lane: "alpha/stable/win-x64", version: "2.0.0" };
      const other = await another();
      const g0 = await other.releaseControlsGeneration();
      const halted = await store.applyReleaseControl(key, "halt", T0);
      expect(halted).toEqual({ changed: true, control: { ...key, halted: T0, haltedMs: 0, withdrawn: null, updated: T0, haltRule: null } });
      expect((await store.applyReleaseControl(key, "halt", T0 + 5)).changed).toBe(false);
      expect(await eventually(async () => (await other.releaseControlsGeneration()) !== g0)).toBe(true);
      const resumed = await store.applyReleaseControl(key, "resume", T0 + 60_000);
      expect(resumed.control).toMatchObject({ halted: null, haltedMs: 60_000 });
      await store.applyReleaseControl(key, "halt", T0 + 100_000);
      expect((await store.applyReleaseControl(key, "resume", T0 + 110_000)).control.haltedMs).toBe(70_000);
      const g1 = await other.releaseControlsGeneration();
      expect((await other.applyReleaseControl(key, "withdraw", T0 + 200_000)).control).toMatchObject({ withdrawn: T0 + 200_000, haltedMs: 70_000 });
      expect(await eventually(async () => (await store.releaseControlsGeneration()) !== g1)).toBe(true);
      expect((await store.applyReleaseControl(key, "withdraw", T0 + 300_000)).changed).toBe(false);
      expect(await store.listReleaseControls()).toEqual([
        { ...key, halted: null, haltedMs: 70_000, withdrawn: T0 + 200_000, updated: T0 + 200_000, haltRule: null },
      ]);
      expect((await store.applyReleaseControl(key, "restore", T0 + 400_000)).control.withdrawn).toBeNull();
      expect((await store.applyReleaseControl({ ...key, version: "1.0.0" }, "resume", T0)).changed).toBe(false);
      expect((await store.listReleaseControls()).length).toBe(1);
    });

    test("a halt made by a rule keeps the rule until resumed; another connection reads it", async () => {
      const key = { lane: "stable/win-x64", version: "3.0.0" };
      const halted = await store.applyReleaseControl(key, "halt", T0, {}, "autoHalt: 3 of 4 failed");
      expect(halted.control.haltRule).toBe("autoHalt: 3 of 4 failed");
      const other = await another();
      expect((await other.listReleaseControls()).find((c) => c.version === "3.0.0")?.haltRule).toBe("autoHalt: 3 of 4 failed");
      // A second halt (a person's) changes nothing: the rule stays.
      expect((await other.applyReleaseControl(key, "halt", T0 + 1)).changed).toBe(false);
      expect((await store.applyReleaseControl(key, "resume", T0 + 2)).control.haltRule).toBeNull();
      expect((await store.applyReleaseControl(key, "halt", T0 + 3)).control.haltRule).toBeNull();
    });

    test("install reports: the latest per installation and release; health in a window, counts per day, the installations running a release", async () => {
      const lic = license({ seats: 10 });
      await store.createLicense(lic);
      const [a, b, c, d] = [seat(lic.id), seat(lic.id), seat(lic.id), seat(lic.id, { version: "2.0.0" })];
      for (const s of [a, b, c, d]) await store.activate(s);
      const lane = "stable/win-x64";
      const report = (s: typeof a, outcome: "installed" | "failed" | "rolled-back", reported: number, version = "2.0.0") => ({
        activationId: s.newId,
        deviceHash: s.deviceHash,
        lane,
        version,
        from: "1.0.0",
        outcome,
        code: outcome === "installed" ? null : "E1",
        reported,
      });
      const day = 86_400_000;
      await store.recordInstallReports([report(a, "failed", T0 - day), report(b, "failed", T0), report(c, "rolled-back", T0 + 1)]);
      // a retried and installed it: its one row says so now; a report older than the row changes nothing.
      await store.recordInstallReports([report(a, "installed", T0 + 2)]);
      await store.recordInstallReports([report(a, "failed", T0 - 2 * day)]);
      expect(await store.releaseHealth({ lane, version: "2.0.0" }, T0 - 3 * day)).toEqual({ reports: 3, failed: 2 });
      expect(await store.releaseHealth({ lane, version: "2.0.0" }, T0 + 1)).toEqual({ reports: 2, failed: 1 });
      const dayOf = Math.floor(T0 / day) * day;
      expect(await store.installReportsPerDay(T0 - 3 * day)).toEqual([
        { lane, version: "2.0.0", day: dayOf, outcome: "failed", installations: 1 },
        { lane, version: "2.0.0", day: dayOf, outcome: "installed", installations: 1 },
        { lane, version: "2.0.0", day: dayOf, outcome: "rolled-back", installations: 1 },
      ]);
      // Running 2.0.0: a (installed report; its activation moved to 2.0.0) and d (activated at it); c rolled back to 1.0.0.
      expect((await store.releaseRunners({ lane, version: "2.0.0" }, 100)).sort()).toEqual([a.deviceHash, d.deviceHash].sort());
      expect((await store.getActivation(a.newId))?.version).toBe("2.0.0");
      expect((await store.getActivation(c.newId))?.version).toBe("1.0.0");
      await store.deactivate(d.newId, T0 + 5);
      expect(await store.releaseRunners({ lane, version: "2.0.0" }, 100)).toEqual([a.deviceHash]);

      // One device is one installation: b deactivated, then b's device activated again and failed
      // again, counts once; a deactivated installation's report no longer counts at all.
      const again = seat(lic.id, { deviceHash: b.deviceHash, installation: b.deviceHash });
      await store.deactivate(b.newId, T0 + 6);
      await store.activate(again);
      await store.recordInstallReports([report(again, "failed", T0 + 7)]);
      expect(await store.releaseHealth({ lane, version: "2.0.0" }, T0 - 3 * day)).toEqual({ reports: 3, failed: 2 });
      await store.deactivate(c.newId, T0 + 8);
      expect(await store.releaseHealth({ lane, version: "2.0.0" }, T0 - 3 * day)).toEqual({ reports: 2, failed: 1 });

      // A licence marked in its metadata (a trial's, release-health.ts) is left out when asked, and only then.
      const trial = license({ metadata: { trial: "true" } });
      await store.createLicense(trial);
      const tried = seat(trial.id);
      await store.activate(tried);
      await store.recordInstallReports([report(tried, "failed", T0 + 9)]);
      expect(await store.releaseHealth({ lane, version: "2.0.0" }, T0 - 3 * day)).toEqual({ reports: 3, failed: 2 });
      expect(await store.releaseHealth({ lane, version: "2.0.0" }, T0 - 3 * day, "trial")).toEqual({ reports: 2, failed: 1 });
    });

    test("racing halts of one release on two connections: exactly one changes it", async () => {
      const key = { lane: "stable/win-x64", version: "9.9.9" };
      const other = await another();
      const results = await Promise.all([store.applyReleaseControl(key, "halt", T0), other.applyReleaseControl(key, "halt", T0 + 1)]);
      expect(results.filter((r) => r.changed).length).toBe(1);
    });

    test("known releases: the first recording is the baseline (none new, no event); after it only the first recording of a release reports it new, on any connection", async () => {
      const a = { lane: "alpha/stable/win-x64", version: "1.0.0" };
      const b = { lane: "alpha/stable/win-x64", version: "1.1.0" };
      const c = { lane: "alpha/stable/win-x64", version: "1.2.0" };
      const published = (r: { lane: string; version: string }) => newEvent("release.published", { release: r }, T0);
      // Records that never recorded a release (a first start, or the first after the upgrade that brought release events): what the tree holds was published before.
      expect(await store.recordKnownReleases([], T0)).toEqual([]);
      expect(await store.recordKnownReleases([a], T0, published)).toEqual([]);
      expect(await store.listEvents({ after: 0, limit: 10 })).toEqual([]);
      expect(await store.recordKnownReleases([a, b], T0 + 1, published)).toEqual([b]);
      const other = await another();
      expect(await other.recordKnownReleases([a, b, c], T0 + 1, published)).toEqual([c]);
      expect(await store.recordKnownReleases([a, b, c], T0 + 2, published)).toEqual([]);
      expect((await store.listEvents({ after: 0, limit: 10 })).map((e) => (JSON.parse(e.data) as { release: { version: string } }).release.version)).toEqual([
        "1.1.0",
        "1.2.0",
      ]);
      expect(await other.listKnownReleases()).toEqual([a, b, c]);
    });

    test("sightings move last_seen forward only and record the lane; adoption counts by product, lane and version", async () => {
      const lic = license({ seats: 10 });
      await store.createLicense(lic);
      const one = seat(lic.id, { product: "alpha", version: "1.0.0" });
      const two = seat(lic.id, { product: "alpha", version: "2.0.0" });
      const old = seat(lic.id, { product: "alpha", version: "2.0.0", now: T0 - 40 * 86_400_000 });
      for (const s of [one, two, old]) await store.activate(s);
      await store.recordSightings([
        { activationId: one.newId, lastSeen: T0 + 1000, lane: "alpha/stable/win-x64" },
        { activationId: two.newId, lastSeen: T0 - 5, lane: "alpha/preview/win-x64" },
      ]);
      await store.recordSightings([{ activationId: one.newId, lastSeen: T0 + 2000, lane: null }]);
      expect(await store.getActivation(one.newId)).toMatchObject({ lastSeen: T0 + 2000 });
      expect(await store.getActivation(two.newId)).toMatchObject({ lastSeen: T0 });
      const seen = await store.installationsSeen(T0 - 30 * 86_400_000);
      expect(seen).toEqual([
        { product: "alpha", lane: "alpha/preview/win-x64", version: "2.0.0", installations: 1 },
        { product: "alpha", lane: "alpha/stable/win-x64", version: "1.0.0", installations: 1 },
      ]);
      expect(await store.devicesOnLane("alpha/stable/win-x64", T0 - 30 * 86_400_000, 100)).toEqual([{ deviceHash: one.deviceHash, kind: "license" }]);
      await store.deactivate(one.newId, T0 + 3000);
      expect(await store.devicesOnLane("alpha/stable/win-x64", T0 - 30 * 86_400_000, 100)).toEqual([]);
    });

    test("activations and seat_limit refusals per UTC day; licenses expiring in a window", async () => {
      const day = 86_400_000;
      const d0 = Math.floor(T0 / day) * day;
      for (const l of [
        auditLine({ time: d0 + 1 }),
        auditLine({ time: d0 + 2, action: "sign-in" }),
        auditLine({ time: d0 + 3, outcome: "refused", error: "seat_limit" }),
        auditLine({ time: d0 + day + 5 }),
        auditLine({ time: d0 + day + 6, action: "refresh" }),
        auditLine({ time: d0 - 40 * day }),
      ])
        await store.writeAudit(l);
      expect(await store.activationsPerDay(d0 - 30 * day)).toEqual([
        { day: d0, activations: 2, seatLimitRefusals: 1 },
        { day: d0 + day, activations: 1, seatLimitRefusals: 0 },
      ]);
      const soon = license({ expires: T0 + 10 * day });
      const later = license({ expires: T0 + 40 * day });
      const revoked = license({ expires: T0 + 5 * day, revoked: T0 });
      const past = license({ expires: T0 - day });
      for (const l of [soon, later, revoked, past]) await store.createLicense(l);
      expect((await store.licensesExpiring(T0, T0 + 30 * day, 100)).map((l) => l.id)).toEqual([soon.id]);
      // For reminders: only with an address, and without the metadata key named (a subscription's mark).
      const mailed = license({ expires: T0 + 11 * day, email: "a@example.org" });
      const renewing = license({ expires: T0 + 12 * day, email: "b@example.org", metadata: { bridge_subscription: "sub_1" } });
      const ended = license({ expires: T0 + 13 * day, email: "c@example.org", metadata: { bridge_subscription: "sub_2", bridge_subscription_ended: "x" } });
      for (const l of [mailed, renewing, ended]) await store.createLicense(l);
      expect((await store.licensesExpiring(T0, T0 + 30 * day, 100)).map((l) => l.id)).toEqual([soon.id, mailed.id, renewing.id, ended.id]);
      const mailable = { without: "bridge_subscription", unless: "bridge_subscription_ended" };
      expect((await store.licensesExpiring(T0, T0 + 30 * day, 100, mailable)).map((l) => l.id)).toEqual([mailed.id, ended.id]);
    });

    test("stats counted a slice at a time (seats from the kept counts, rollout reach from buckets stored once) equal a full recount after activations, deactivations, revocations", async () => {
      const day = 86_400_000;
      const lane = "alpha/stable/win-x64";
      const version = "2.0.0";
      const leased = license({ seats: 10, seatLease: 10 * 60_000 });
      const plain = license({ seats: 10 });
      const doomed = license({ seats: 10 });
      const staff = license({ kind: "staff", keyHash: null, seats: 10 });
      for (const l of [leased, plain, doomed, staff]) await store.createLicense(l);
      const seats = [
        ...[0, 1, 2].map(() => seat(leased.id, { product: "alpha" })),
        ...[0, 1, 2, 3].map(() => seat(plain.id, { product: "alpha", version: "1.1.0" })),
        ...[0, 1].map(() => seat(doomed.id, { product: "alpha" })),
        seat(staff.id, { kind: "staff", product: "alpha" }),
        seat(plain.id, { product: "alpha", now: T0 - 40 * day }),
      ];
      for (const s of seats) await store.activate(s);
      await store.recordSightings(seats.slice(0, 10).map((s, i) => ({ activationId: s.newId, lastSeen: T0 + i, lane })));
      await store.recordSightings([{ activationId: seats[10]!.newId, lastSeen: T0 - 40 * day, lane }]);
      // Two releases on the lane, counted together: the second admits a third of what the first does.
      const releases = [
        { lane, version },
        { lane, version: "2.1.0" },
      ];
      const thresholds = (threshold: bigint) => [threshold, threshold / 3n];

      /** Every statement over slices of two rows, the buckets found missing hashed and stored, as GET /admin/stats does. */
      const sliced = async (now: number, threshold: bigint) => {
        const since = now - 30 * day;
        const { numbers } = await store.rolloutReleaseNumbers(releases, 1000);
        const queries = releases.map((_release, i) => ({ no: numbers[i]!, lane, threshold: thresholds(threshold)[i]! }));
        const installations = new Map<string, number>();
        const reach = releases.map(() => ({ seen: 0, admitted: 0 }));
        let hashed = 0;
        let seatsNow = { inUse: 0, lapsed: 0 };
        for (const table of ["activations", "licenses"] as const) {
          let from: string | null = null;
          for (;;) {
            const to = await store.sliceEnd(table, from, 2);
            if (table === "licenses") {
              const part = await store.seatCountsIn({ from, to }, now);
              seatsNow = { inUse: seatsNow.inUse + part.inUse, lapsed: seatsNow.lapsed + part.lapsed };
            } else {
              for (const c of await store.installationsSeenIn({ from, to }, since))
                installations.set(`${c.lane} ${c.version}`, (installations.get(`${c.lane} ${c.version}`) ?? 0) + c.installations);
              const parts = await store.rolloutReachIn({ from, to }, queries, since);
              for (const [i, part] of parts.entries()) {
                const buckets = part.unbucketed.map((u) => ({ activationId: u.activationId, bucket: bucketOf(u.deviceHash, lane, releases[i]!.version) }));
                await store.storeRolloutBuckets(queries[i]!.no, buckets);
                reach[i]!.seen += part.seen;
                reach[i]!.admitted += part.admitted + buckets.filter((b) => b.bucket < queries[i]!.threshold).length;
                hashed += buckets.length;
              }
            }
            if (to === null) break;
            from = to;
          }
        }
        return { installations: Object.fromEntries(installations), reach, seats: seatsNow, hashed };
      };
      /** The same figures from the records one row at a time. */
      const recount = async (now: number, threshold: bigint) => {
        const since = now - 30 * day;
        const installations: Record<string, number> = {};
        for (const c of await store.installationsSeen(since)) installations[`${c.lane} ${c.version}`] = c.installations;
        const onLane = await store.devicesOnLane(lane, since, 1000);
        const reach = releases.map((r, i) => ({
          seen: onLane.length,
          admitted: onLane.filter((x) => x.kind === "staff" || bucketOf(x.deviceHash, lane, r.version) < thresholds(threshold)[i]!).length,
        }));
        const seatsNow = { inUse: 0, lapsed: 0 };
        for (const l of await store.listLicenses()) {
          if (l.kind !== "license" || l.revoked !== null) continue;
          for (const a of await store.listActivations(l.id)) {
            if (a.deactivated !== null) continue;
            if (l.seatLease != null && a.lastSeen < now - l.seatLease) seatsNow.lapsed++;
            else seatsNow.inUse++;
          }
        }
        return { installations, reach, seats: seatsNow };
      };
      const same = async (now: number, threshold: bigint) => {
        const full = await recount(now, threshold);
        const first = await sliced(now, threshold);
        expect({ ...first, hashed: 0 }).toEqual({ ...full, hashed: 0 });
        // Counted again: from the stored buckets alone, nothing hashed.
        expect(await sliced(now, threshold)).toEqual({ ...full, hashed: 0 });
        return { full, hashedFirst: first.hashed };
      };

      const half = 1n << 63n;
      const start = await same(T0 + 1000, half);
      expect(start.full.seats).toEqual({ inUse: 10, lapsed: 0 });
      expect(start.full.reach.map((r) => r.seen)).toEqual([10, 10]);
      expect(start.hashedFirst).toBe(18); // the staff seat is admitted without a bucket
      await store.activate(seat(plain.id, { product: "alpha", now: T0 + 2000 }));
      expect(await store.deactivate(seats[3]!.newId, T0 + 3000)).toBe(true);
      expect(await store.revokeLicense(doomed.id, T0 + 4000)).toBe(true);
      const later = await same(T0 + 20 * 60_000, (half * 3n) / 2n);
      expect(later.full.seats).toEqual({ inUse: 5, lapsed: 3 });
      expect(later.full.reach.map((r) => r.seen)).toEqual([9, 9]);
      expect(later.hashedFirst).toBe(0);
      // A release no longer counted has its buckets dropped; counted again, they are stored again.
      // 18 buckets stored; the deactivated installation's two went with it.
      expect((await store.rolloutReleaseNumbers([], 1000)).dropped).toBe(16);
      expect((await same(T0 + 20 * 60_000, half)).hashedFirst).toBe(16);
    });

    test("ping answers", async () => {
      expect(await store.ping()).toBeUndefined();
    });

    test("reopening the records keeps them (migrations are not applied twice)", async () => {
      const lic = license();
      await store.createLicense(lic);
      const again = await another();
      expect(await again.getLicense(lic.id)).toEqual(lic);
    });

    test("a full license with a seat lease reclaims the OLDEST lapsed seat by last sighting (not by creation or id), one per activation", async () => {
      const day = 86_400_000;
      const lic = license({ seats: 3, seatLease: day });
      await store.createLicense(lic);
      const taken: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await store.activate(seat(lic.id, { now: T0 + i * 1000 }));
        expect(r.outcome).toBe("created");
        if (r.outcome === "created") taken.push(r.activation.id);
      }
      const [first, second, third] = taken as [string, string, string];
      // Last seen: second at T0+1s (the oldest), third at T0+2s, first at T0+5s (the newest, though created first).
      await store.touchActivation(first, seat(lic.id), T0 + 5000);
      const later = T0 + 2 * day;
      const reclaimedBy = async (n: number) => {
        const r = await store.activate(seat(lic.id, { now: later + n }));
        expect(r.outcome).toBe("created");
        return r.outcome === "created" ? r.reclaimed?.id : undefined;
      };
      expect(await reclaimedBy(1)).toBe(second);
      expect(await reclaimedBy(2)).toBe(third);
      expect(await reclaimedBy(3)).toBe(first);
      // Every seat now seen within the lease: the next is refused with the holders.
      expect((await store.activate(seat(lic.id, { now: later + 4 }))).outcome).toBe("seat_limit");
    });

    test("revokeLicense and updateLicense with endsPortalSessions end that license's portal sessions in their transaction, no others", async () => {
      const a = license();
      const b = license();
      await store.createLicense(a);
      await store.createLicense(b);
      const portal = (idHash: string, licenseId: string) => ({
        idHash,
        kind: "portal" as const,
        tokenId: null,
        subject: null,
        licenseId,
        name: "Ada",
        scopes: [],
        detail: null,
        created: T0,
        expires: T0 + 1_800_000,
        revoked: null,
      });
      for (const [hash, id] of [
        ["pa1", a.id],
        ["pa2", a.id],
        ["pb1", b.id],
      ] as const)
        await store.createConsoleSession(portal(hash, id));
      const revokedAt = async (hash: string) => (await store.findConsoleSession(hash))!.revoked;
      // Without the field nothing ends (an ordinary update).
      await store.updateLicense(a.id, { licensee: "Ada L." }, {});
      expect(await revokedAt("pa1")).toBeNull();
      // A rekey: a new key hash, the sessions opened with the old key end.
      expect((await store.updateLicense(a.id, { keyHash: rnd() + rnd() }, { endsPortalSessions: T0 + 7 })).outcome).toBe("updated");
      expect([await revokedAt("pa1"), await revokedAt("pa2"), await revokedAt("pb1")]).toEqual([T0 + 7, T0 + 7, null]);
      await store.createConsoleSession(portal("pb2", b.id));
      expect(await store.revokeLicense(b.id, T0 + 9, { endsPortalSessions: T0 + 9 })).toBe(true);
      expect([await revokedAt("pb1"), await revokedAt("pb2"), await revokedAt("pa1")]).toEqual([T0 + 9, T0 + 9, T0 + 7]);
    });
  });
}
