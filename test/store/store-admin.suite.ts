import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { ActivateResult, ActivationRecord, LicenseRecord, NewEvent, Store } from "../../src/store/types";
import { license, seat, type StoreBackend } from "./store.suite";

const T0 = Date.parse("2026-11-21T12:00:00Z");
let n = 0;
/** An event the store always writes (a feed type's, as far as the store knows). */
const ev = (type: string, data: unknown = {}, feed = true): NewEvent => ({
  id: `evt_${++n}_${Math.random().toString(36).slice(2)}`,
  type,
  time: T0,
  data: JSON.stringify(data),
  feed,
});

/** The store contract of admin-core (migration 3): outbox events, idempotency, license admin, admin tokens, webhooks. */
export function adminStoreSuite(label: string, backend: StoreBackend): void {
  describe(`Store contract (admin): ${label}`, () => {
    let records: Awaited<ReturnType<StoreBackend["fresh"]>>;
    let store: Store;
    const opened: Store[] = [];
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

    test("a change and its event commit together; a failed change writes no event; events come back in seq order, filtered", async () => {
      const a = license();
      await store.createLicense(a, { event: (l) => ev("license.created", { id: l.id }) });
      // the same key hash again: the insert fails, and so must its event
      await expect(store.createLicense(license({ keyHash: a.keyHash }), { event: () => ev("license.created", { id: "never" }) })).rejects.toThrow();
      const onActivate = (r: ActivateResult) => ev(r.outcome === "seat_limit" ? "activation.refused" : "activation.created", { outcome: r.outcome });
      const one = await store.activate({ ...seat(a.id), event: onActivate });
      await store.activate({ ...seat(a.id), event: onActivate });
      expect((await store.activate({ ...seat(a.id), event: onActivate })).outcome).toBe("seat_limit");
      if (one.outcome === "seat_limit") throw new Error("seat expected");
      let deactivated: ActivationRecord | null = null;
      expect(await store.deactivate(one.activation.id, T0 + 5, { event: (x) => ((deactivated = x), ev("activation.deactivated", { id: x.id })) })).toBe(true);
      expect(deactivated!.deactivated).toBe(T0 + 5);
      expect(await store.deactivate(one.activation.id, T0 + 6, { event: () => ev("activation.deactivated") })).toBe(false);
      expect(await store.revokeLicense(a.id, T0 + 7, { event: (l) => ev("license.revoked", { revoked: l.revoked }) })).toBe(true);
      expect(await store.revokeLicense(a.id, T0 + 8, { event: () => ev("license.revoked") })).toBe(false);

      const all = await store.listEvents({ after: 0, limit: 100 });
      expect(all.map((e) => e.type)).toEqual([
        "license.created",
        "activation.created",
        "activation.created",
        "activation.refused",
        "activation.deactivated",
        "license.revoked",
      ]);
      expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((x, y) => x - y));
      expect(JSON.parse(all[0]!.data)).toEqual({ id: a.id });
      expect(JSON.parse(all[5]!.data)).toEqual({ revoked: T0 + 7 });
      expect((await store.listEvents({ after: all[2]!.seq, limit: 2 })).map((e) => e.type)).toEqual(["activation.refused", "activation.deactivated"]);
      expect((await store.listEvents({ after: 0n, limit: 10, types: ["license.revoked", "license.created"] })).map((e) => e.type)).toEqual([
        "license.created",
        "license.revoked",
      ]);
      expect(await store.listEvents({ after: all[5]!.seq, limit: 10 })).toEqual([]);
    });

    test("an event outside the feed is written only while a webhook endpoint (enabled or not) subscribes to its type", async () => {
      const a = license({ seats: 10 });
      await store.createLicense(a);
      const created = (r: ActivateResult) => ev("activation.created", { outcome: r.outcome }, false);
      await store.activate({ ...seat(a.id), event: created });
      expect(await store.listEvents({ after: 0, limit: 10 })).toEqual([]);
      const hook = await store.createWebhookEndpoint({
        id: "whe_sub",
        url: "https://hooks.example/k",
        types: ["activation.created"],
        secret: "whsec_x",
        enabled: true,
        disabledReason: null,
        created: T0,
      });
      await store.activate({ ...seat(a.id), event: created });
      expect((await store.listEvents({ after: 0, limit: 10 })).map((e) => e.type)).toEqual(["activation.created"]);
      await store.setWebhookEndpointEnabled(hook.id, false, "test");
      await store.activate({ ...seat(a.id), event: created });
      expect((await store.listEvents({ after: 0, limit: 10 })).length).toBe(2);
      await store.activate({ ...seat(a.id), event: () => ev("activation.refused", {}, false) });
      expect((await store.listEvents({ after: 0, limit: 10 })).length).toBe(2);
    });

    test("idempotent create: racing creates with one key make one license, the others are answered its record; an expired record does not count", async () => {
      const second = await another();
      const idem = (i: number) => ({ scope: "tok_a", key: "k1", requestHash: "h", answer: `answer ${i}`, created: T0 });
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (i % 2 ? second : store).createLicenseIdempotent(license(), idem(i), { event: () => ev("license.created") }, T0 - 1),
        ),
      );
      const created = results.filter((r) => r.outcome === "created");
      expect(created.length).toBe(1);
      const answers = new Set(results.map((r) => (r.outcome === "replayed" ? r.record.answer : "created")));
      expect(answers.size).toBe(2); // "created" and the one stored answer every replay got
      expect((await store.listLicenses()).length).toBe(1);
      expect((await store.listEvents({ after: 0, limit: 10 })).length).toBe(1);
      // another scope (token) with the same key is its own
      expect((await store.createLicenseIdempotent(license(), { ...idem(9), scope: "tok_b" }, {}, T0 - 1)).outcome).toBe("created");
      // past its window the record is gone: the key creates again
      const later = await store.createLicenseIdempotent(license(), { ...idem(10), created: T0 + 86_400_001 }, {}, T0 + 1);
      expect(later.outcome).toBe("created");
      expect(await store.pruneIdempotency(T0 + 86_400_000)).toBe(1); // tok_b's; k1's is the new one
    });

    test("updateLicense applies the patch with its audit line and event; seats below those in use are refused in the transaction", async () => {
      const a = license({ seats: 3 });
      await store.createLicense(a);
      await store.activate(seat(a.id));
      await store.activate(seat(a.id));
      const refused = await store.updateLicense(a.id, { seats: 1 }, { event: () => ev("license.updated") });
      expect(refused).toEqual({ outcome: "seats_in_use", seatsUsed: 2 });
      const audit = {
        ref: "ref_upd",
        time: T0,
        address: null,
        action: "license-update",
        activationId: null,
        licenseId: a.id,
        outcome: "ok" as const,
        error: null,
        actor: "tok_x (ci)",
      };
      const done = await store.updateLicense(
        a.id,
        {
          seats: 2,
          plan: "team",
          channels: ["stable"],
          expires: T0 + 5000,
          email: "a@b.example",
          metadata: { crm: "42" },
          tokenTtl: 90 * 86_400,
          keyHash: "f".repeat(64),
        },
        { audit, event: (l) => ev("license.updated", { seats: l.seats }) },
      );
      if (done.outcome !== "updated") throw new Error(done.outcome);
      expect(done.seatsUsed).toBe(2);
      const stored = (await store.getLicense(a.id))!;
      expect(stored).toEqual({
        ...a,
        seats: 2,
        plan: "team",
        channels: ["stable"],
        expires: T0 + 5000,
        email: "a@b.example",
        metadata: { crm: "42" },
        tokenTtl: 90 * 86_400,
        keyHash: "f".repeat(64),
      });
      expect(await store.findLicenseByKeyHash(a.keyHash!)).toBeNull();
      expect(await store.listAudit({ licenseId: a.id })).toEqual([audit]);
      expect((await store.listEvents({ after: 0, limit: 10 })).map((e) => [e.type, JSON.parse(e.data)])).toEqual([["license.updated", { seats: 2 }]]);
      expect((await store.updateLicense("lic_none", { seats: 3 }, {})).outcome).toBe("unknown");
      expect((await store.updateLicense(a.id, { email: null }, {})).outcome).toBe("updated");
      expect((await store.getLicense(a.id))!.email).toBeNull();
      expect((await store.updateLicense(a.id, { tokenTtl: null }, {})).outcome).toBe("updated");
      expect((await store.getLicense(a.id))!.tokenTtl).toBeNull();
    });

    test("reinstate undoes a revocation once, with its event", async () => {
      const a = license();
      await store.createLicense(a);
      expect(await store.reinstateLicense(a.id, { event: () => ev("license.reinstated") })).toBeNull();
      await store.revokeLicense(a.id, T0);
      expect((await store.reinstateLicense(a.id, { event: () => ev("license.reinstated") }))!.revoked).toBeNull();
      expect((await store.listEvents({ after: 0, limit: 10 })).map((e) => e.type)).toEqual(["license.reinstated"]);
    });

    test("searchLicenses: text over licensee, organization, email and id (LIKE characters literal), status, keyset pages", async () => {
      const ls: LicenseRecord[] = [
        license({ issued: T0 + 1, licensee: "Ada 100%", email: "ada@x.example" }),
        license({ issued: T0 + 2, organization: "Babbage_Co", revoked: T0 }),
        license({ issued: T0 + 3, expires: T0 + 10 }),
        license({ issued: T0 + 3, licensee: "Grace", email: "grace@navy.example" }),
      ];
      for (const l of ls) await store.createLicense(l);
      const ids = (rs: { license: LicenseRecord }[]) => rs.map((r) => r.license.id);
      const q = (extra: object) => store.searchLicenses({ now: T0 + 100, limit: 10, ...extra });
      expect(ids(await q({}))).toEqual(
        ids(ls.map((license) => ({ license })))
          .slice(0, 2)
          .concat([ls[2]!.id, ls[3]!.id].sort()),
      );
      expect(ids(await q({ text: "100%" }))).toEqual([ls[0]!.id]);
      expect(ids(await q({ text: "%" }))).toEqual([ls[0]!.id]);
      expect(ids(await q({ text: "babbage_" }))).toEqual([ls[1]!.id]);
      expect(ids(await q({ text: "NAVY" }))).toEqual([ls[3]!.id]);
      expect(ids(await q({ text: ls[2]!.id.slice(4) }))).toEqual([ls[2]!.id]);
      expect(ids(await q({ status: "revoked" }))).toEqual([ls[1]!.id]);
      expect(ids(await q({ status: "expired" }))).toEqual([ls[2]!.id]);
      expect(new Set(ids(await q({ status: "active" })))).toEqual(new Set([ls[0]!.id, ls[3]!.id]));
      const all = ids(await q({}));
      const page1 = await q({ limit: 2 });
      const last = page1.at(-1)!.license;
      const page2 = await q({ limit: 2, after: { issued: last.issued, id: last.id } });
      expect([...ids(page1), ...ids(page2)]).toEqual(all);
      const used = await store.activate(seat(ls[0]!.id));
      expect(used.outcome).toBe("created");
      expect((await q({ text: "Ada 100" }))[0]!.seatsUsed).toBe(1);
    });

    test("admin tokens: create, find by secret hash, list, revoke once; last use written only when stale", async () => {
      const t = { id: "tok_1", name: "ci", secretHash: "ab".repeat(32), scopes: ["licenses:read"], created: T0, expires: null, revoked: null, lastUsed: null };
      await store.createAdminToken(t);
      expect(await store.findAdminTokenBySecretHash(t.secretHash)).toEqual(t);
      expect(await store.findAdminTokenBySecretHash("cd".repeat(32))).toBeNull();
      await store.touchAdminToken("tok_1", T0 + 10, T0 - 60_000);
      await store.touchAdminToken("tok_1", T0 + 20, T0 + 20 - 60_000);
      expect((await store.listAdminTokens())[0]!.lastUsed).toBe(T0 + 10);
      await store.touchAdminToken("tok_1", T0 + 70_011, T0 + 11);
      expect((await store.listAdminTokens())[0]!.lastUsed).toBe(T0 + 70_011);
      expect(await store.revokeAdminToken("tok_1", T0 + 1)).toBe(true);
      expect(await store.revokeAdminToken("tok_1", T0 + 2)).toBe(false);
      expect((await store.findAdminTokenBySecretHash(t.secretHash))!.revoked).toBe(T0 + 1);
    });

    test("console sessions (migration 10): kept by hash, revoked once, revoked with their admin token in its transaction, pruned once expired", async () => {
      await store.createAdminToken({
        id: "tok_2",
        name: "ops",
        secretHash: "ef".repeat(32),
        scopes: ["admin"],
        created: T0,
        expires: null,
        revoked: null,
        lastUsed: null,
      });
      const session = (idHash: string, tokenId: string | null, kind: "console" | "portal" | "pending" = "console") => ({
        idHash,
        kind,
        tokenId,
        subject: null,
        licenseId: kind === "portal" ? "lic_1" : null,
        name: "ops",
        scopes: ["admin"],
        staffGroups: null,
        detail: kind === "pending" ? '{"verifier":"v"}' : null,
        created: T0,
        expires: T0 + 3_600_000,
        revoked: null,
      });
      await store.createConsoleSession(session("h1", "tok_2"));
      await store.createConsoleSession(session("h2", "tok_2"));
      await store.createConsoleSession(session("h3", null, "portal"));
      await store.createConsoleSession(session("h4", null, "pending"));
      expect(await store.findConsoleSession("h1")).toEqual(session("h1", "tok_2"));
      expect(await store.findConsoleSession("h4")).toEqual(session("h4", null, "pending"));
      expect(await store.findConsoleSession("nope")).toBeNull();
      expect(await store.revokeConsoleSession("h1", T0 + 5)).toBe(true);
      expect(await store.revokeConsoleSession("h1", T0 + 6)).toBe(false);
      expect((await store.findConsoleSession("h1"))!.revoked).toBe(T0 + 5);
      expect(await store.revokeAdminToken("tok_2", T0 + 9)).toBe(true);
      expect((await store.findConsoleSession("h2"))!.revoked).toBe(T0 + 9);
      expect((await store.findConsoleSession("h3"))!.revoked).toBeNull();
      await store.createConsoleSession({ ...session("h5", null), expires: T0 + 10 });
      expect(await store.pruneConsoleSessions(T0 + 11)).toBe(1);
      expect(await store.findConsoleSession("h5")).toBeNull();
      expect(await store.findConsoleSession("h1")).not.toBeNull();
    });

    test("console sessions (migration 11): a staff session keeps its groups; the open console sessions are listed newest first", async () => {
      const staff = {
        idHash: "s1",
        kind: "console" as const,
        tokenId: null,
        subject: "grace",
        licenseId: null,
        name: "Grace",
        scopes: [],
        staffGroups: ["support", "ops"],
        detail: null,
        created: T0 + 2,
        expires: T0 + 3_600_000,
        revoked: null,
      };
      await store.createConsoleSession(staff);
      await store.createConsoleSession({ ...staff, idHash: "s2", subject: "ada", created: T0 + 3 });
      await store.createConsoleSession({ ...staff, idHash: "s3", created: T0 + 4, expires: T0 + 100 });
      await store.createConsoleSession({ ...staff, idHash: "s4", kind: "portal", staffGroups: null, licenseId: "lic_1", created: T0 + 5 });
      await store.createConsoleSession({ ...staff, idHash: "s5", created: T0 + 6 });
      expect(await store.revokeConsoleSession("s5", T0 + 7)).toBe(true);
      expect(await store.findConsoleSession("s1")).toEqual(staff);
      const open = await store.listConsoleSessions(T0 + 100, 10);
      expect(open.map((r) => r.idHash)).toEqual(["s2", "s1"]);
      expect(open[1]).toEqual(staff);
      expect((await store.listConsoleSessions(T0 + 100, 1)).map((r) => r.idHash)).toEqual(["s2"]);
    });

    test("webhooks: fan-out to enabled subscribers added before the event, leased once, attempts recorded under the lease only; 410 disables; retry; secret rotation", async () => {
      await store.appendEvent(ev("license.created")); // before any endpoint: goes nowhere
      const endpoint = (id: string, types: string[]) => ({
        id,
        url: "https://x.example/h",
        types,
        secret: "whsec_AAAA",
        enabled: true,
        disabledReason: null,
        created: T0,
      });
      const e1 = await store.createWebhookEndpoint(endpoint("whe_1", ["license.created", "license.revoked"]));
      await store.createWebhookEndpoint(endpoint("whe_2", ["license.revoked"]));
      expect(e1.afterSeq).toBeGreaterThan(0);
      await store.appendEvent(ev("license.created"));
      await store.appendEvent(ev("license.revoked"));
      await store.appendEvent(ev("activation.created"));
      let d = 0;
      expect(await store.fanOutEvents(T0, 100, () => `dlv_${++d}`)).toBe(4);
      expect(await store.fanOutEvents(T0, 100, () => `dlv_${++d}`)).toBe(0);
      const pending = await store.listDeliveries({ limit: 10 });
      expect(pending.map((p) => p.endpointId).sort()).toEqual(["whe_1", "whe_1", "whe_2"]);

      // one delivery per endpoint at a time: whe_1's second waits for its first
      const claimed = await store.claimDeliveries(T0, T0 + 1000, "w1", 10);
      expect(claimed.map((c) => [c.endpoint.id, c.event.type])).toEqual([
        ["whe_1", "license.created"],
        ["whe_2", "license.revoked"],
      ]);
      expect(claimed[0]!.endpoint.secret).toBe("whsec_AAAA");
      expect(await store.claimDeliveries(T0 + 500, T0 + 1500, "w2", 10)).toEqual([]); // leased
      const first = claimed[0]!.delivery;
      const attempt = { deliveryId: first.id, attempt: 1, time: T0, durationMs: 12, statusCode: 500, error: "answered 500" };
      expect(await store.recordAttempt(attempt, "w2", { status: "delivered" })).toBe(false); // not its lease
      expect(await store.recordAttempt(attempt, "w1", { status: "pending", nextAttempt: T0 + 5000 })).toBe(true);
      expect(await store.listAttempts(first.id)).toEqual([attempt]);
      expect((await store.getDelivery(first.id))!).toMatchObject({ status: "pending", attempts: 1, nextAttempt: T0 + 5000 });
      // whe_1's first is recorded (due again later), so its second is next; whe_2's lease ran out: another worker takes both
      const again = await store.claimDeliveries(T0 + 2000, T0 + 3000, "w2", 10);
      expect(again.map((c) => [c.endpoint.id, c.event.type]).sort()).toEqual([
        ["whe_1", "license.revoked"],
        ["whe_2", "license.revoked"],
      ]);
      expect(again.map((c) => c.delivery.id)).toContain(claimed[1]!.delivery.id);
      const toWhe2 = again.find((c) => c.endpoint.id === "whe_2")!;
      await store.recordAttempt({ ...attempt, deliveryId: toWhe2.delivery.id, statusCode: 410 }, "w2", { status: "failed", disableEndpoint: "410 Gone" });
      expect((await store.getWebhookEndpoint("whe_2"))!).toMatchObject({ enabled: false, disabledReason: "410 Gone" });
      expect((await store.listDeliveries({ status: "failed", limit: 10 })).map((x) => x.id)).toEqual([toWhe2.delivery.id]);
      expect((await store.listDeliveries({ endpointId: "whe_2", limit: 10 })).length).toBe(1);
      // retry: due now, but its endpoint is disabled, so it waits until enabled
      expect(await store.retryDelivery(toWhe2.delivery.id, T0 + 4000)).toBe(true);
      expect((await store.claimDeliveries(T0 + 4000, T0 + 5000, "w3", 10)).map((c) => c.delivery.id)).not.toContain(toWhe2.delivery.id);
      expect(await store.setWebhookEndpointEnabled("whe_2", true, null)).toBe(true);
      expect((await store.claimDeliveries(T0 + 4001, T0 + 5000, "w3", 10)).map((c) => c.delivery.id)).toContain(toWhe2.delivery.id);
      // A rotated secret replaces the old one, with its audit line in the same write; an unknown endpoint is false.
      const rotation = {
        ref: "ref_rotate",
        time: T0 + 4002,
        action: "webhook-rotate-secret",
        outcome: "ok" as const,
        error: null,
        licenseId: null,
        activationId: null,
        address: null,
        actor: "tok_x (ops)",
      };
      expect(await store.setWebhookEndpointSecret("whe_2", "whsec_NEW", rotation)).toBe(true);
      expect((await store.getWebhookEndpoint("whe_2"))!.secret).toBe("whsec_NEW");
      expect((await store.listAudit({ ref: "ref_rotate" })).map((l) => l.actor)).toEqual(["tok_x (ops)"]);
      expect(await store.setWebhookEndpointSecret("whe_unknown", "whsec_X")).toBe(false);
      expect(await store.removeWebhookEndpoint("whe_2")).toBe(true);
      expect(await store.getDelivery(toWhe2.delivery.id)).toBeNull();
      expect(await store.removeWebhookEndpoint("whe_2")).toBe(false);
    });

    test("pruneEvents keeps events not yet fanned out, with deliveries left, or the newest; removes finished old deliveries", async () => {
      const old = (type: string) => ({ ...ev(type), time: T0 - 10_000 });
      await store.createWebhookEndpoint({
        id: "whe_p",
        url: "https://x.example/h",
        types: ["license.revoked"],
        secret: "whsec_AAAA",
        enabled: true,
        disabledReason: null,
        created: T0,
      });
      for (const type of ["license.created", "license.revoked", "license.created"]) await store.appendEvent(old(type));
      // nothing fanned out yet: nothing may go
      expect(await store.pruneEvents(T0)).toEqual({ events: 0, deliveries: 0 });
      let dn = 0;
      await store.fanOutEvents(T0 - 10_000, 100, () => `dlv_p${++dn}`);
      await store.appendEvent(old("license.created")); // after the cursor
      const [claimed] = await store.claimDeliveries(T0, T0 + 100, "w", 10);
      const [, revoked, , afterCursor] = await store.listEvents({ after: 0, limit: 10 });
      // the two created events fanned out go; the revoked one has a delivery pending, the last is past the cursor
      expect(await store.pruneEvents(T0)).toEqual({ events: 2, deliveries: 0 });
      expect((await store.listEvents({ after: 0, limit: 10 })).map((e) => e.seq)).toEqual([revoked!.seq, afterCursor!.seq]);
      await store.recordAttempt({ deliveryId: claimed!.delivery.id, attempt: 1, time: T0, durationMs: 1, statusCode: 200, error: null }, "w", {
        status: "delivered",
      });
      expect(await store.pruneEvents(T0)).toEqual({ events: 1, deliveries: 1 });
      expect(await store.listAttempts(claimed!.delivery.id)).toEqual([]);
      await store.fanOutEvents(T0, 100, () => `dlv_p${++dn}`);
      // the newest always stays, so seqs never start again
      expect(await store.pruneEvents(T0)).toEqual({ events: 0, deliveries: 0 });
      await store.appendEvent(ev("license.created"));
      expect((await store.listEvents({ after: 0, limit: 10 })).map((e) => e.seq)).toEqual([afterCursor!.seq, afterCursor!.seq + 1]);
    });

    test("feed position: an epoch made with the records, the newest seq, and retention's watermark moved by pruneEvents", async () => {
      const start = await store.feedPosition();
      expect(start.epoch).toMatch(/^[0-9a-f]{24}$/);
      expect(start).toMatchObject({ newest: 0n, prunedThrough: 0n });
      await store.appendEvent({ ...ev("license.revoked"), time: T0 - 10_000 });
      await store.appendEvent({ ...ev("license.revoked"), time: T0 - 10_000 });
      await store.appendEvent(ev("license.revoked"));
      const [first, second, third] = await store.listEvents({ after: 0, limit: 10 });
      await store.fanOutEvents(T0, 100, () => "dlv_x");
      expect(await store.pruneEvents(T0)).toEqual({ events: 2, deliveries: 0 });
      const after = await store.feedPosition();
      expect(after).toEqual({ epoch: start.epoch, newest: BigInt(third!.seq), prunedThrough: BigInt(second!.seq) });
      expect(BigInt(first!.seq)).toBeLessThan(after.prunedThrough);
      // Other records (another file, another schema) have another epoch.
      const other = await backend.fresh();
      const o = await other.open();
      expect((await o.feedPosition()).epoch).not.toBe(start.epoch);
      await o.close();
      await other.drop();
    });

    test("token exp: recorded at activation, only growing on refresh; revocation reports the license's latest; snapshot sections list what is still refused", async () => {
      const lic = license({ seats: 3 });
      await store.createLicense(lic);
      const one = seat(lic.id, { tokenExp: T0 + 5_000 });
      const created = await store.activate(one);
      expect(created.outcome === "created" && created.activation.tokenExp).toBe(T0 + 5_000);
      await store.touchActivation(one.newId, one, T0 + 1, T0 + 9_000);
      await store.touchActivation(one.newId, one, T0 + 2, T0 + 7_000); // a lowered TTL does not shorten what was issued
      expect((await store.getActivation(one.newId))!.tokenExp).toBe(T0 + 9_000);
      const reused = await store.activate({ ...one, newId: "act_unused", tokenExp: T0 + 12_000 });
      expect(reused.outcome === "reused" && reused.activation.tokenExp).toBe(T0 + 12_000);
      const two = seat(lic.id, { tokenExp: T0 + 3_000 });
      await store.activate(two);
      let deactivatedExp: number | null | undefined;
      await store.deactivate(two.newId, T0 + 10, { event: (a) => ((deactivatedExp = a.tokenExp), null) });
      expect(deactivatedExp).toBe(T0 + 3_000);
      let tokensExpire = null as number | null;
      await store.revokeLicense(lic.id, T0 + 20, { event: (l) => ((tokensExpire = l.tokensExpire), null) });
      expect(tokensExpire).toBe(T0 + 12_000);

      const shortened = license({ expires: T0 + 1_000 });
      await store.createLicense(shortened);
      await store.activate(seat(shortened.id, { tokenExp: T0 + 8_000 }));
      const kept = license({ seats: 2 });
      await store.createLicense(kept);
      const three = seat(kept.id, { tokenExp: T0 + 4_000 });
      await store.activate(three);
      await store.deactivate(three.newId, T0 + 30, {});
      const q = { now: T0 + 100, after: null, limit: 10, fallbackTtlMs: 60_000 };
      // `two` is left out: the revocation of its licence stands for it (until T0 + 12,000, past its own end).
      expect(await store.listFeedState({ ...q, section: "activations" })).toEqual([{ id: three.newId, until: T0 + 4_000, license: kept.id }]);
      expect(await store.listFeedState({ ...q, section: "licenses" })).toEqual([{ id: lic.id, until: T0 + 12_000 }]);
      expect(await store.listFeedState({ ...q, section: "expiries" })).toEqual([{ id: shortened.id, until: T0 + 1_000 }]);
      // Once every token has expired there is nothing left to refuse.
      expect(await store.listFeedState({ ...q, now: T0 + 12_000, section: "licenses" })).toEqual([]);
      expect(await store.listFeedState({ ...q, section: "activations", after: three.newId })).toEqual([]);
    });

    test("concurrent claims from two connections never lease one delivery twice", async () => {
      const second = await another();
      for (let e = 0; e < 4; e++)
        await store.createWebhookEndpoint({
          id: `whe_c${e}`,
          url: "https://x.example/h",
          types: ["license.created"],
          secret: "whsec_AAAA",
          enabled: true,
          disabledReason: null,
          created: T0,
        });
      for (let i = 0; i < 10; i++) await store.appendEvent(ev("license.created"));
      let d = 0;
      await store.fanOutEvents(T0, 1000, () => `dlv_${String(++d).padStart(3, "0")}`);
      const seen: string[] = [];
      // each worker records what it claimed (ending its leases), which lets the endpoints' next deliveries be claimed
      await Promise.all(
        [store, second, store, second].map(async (s, w) => {
          for (let idle = 0; idle < 3; ) {
            const got = await s.claimDeliveries(T0, T0 + 60_000, `w${w}`, 3);
            if (got.length === 0) {
              idle++;
              await Bun.sleep(5);
              continue;
            }
            idle = 0;
            seen.push(...got.map((g) => g.delivery.id));
            for (const g of got)
              await s.recordAttempt({ deliveryId: g.delivery.id, attempt: 1, time: T0, durationMs: 1, statusCode: 200, error: null }, `w${w}`, {
                status: "delivered",
              });
          }
        }),
      );
      expect(seen.length).toBe(40);
      expect(new Set(seen).size).toBe(40);
    });
  });
}
