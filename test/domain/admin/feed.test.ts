import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { VARIANTS } from "../../../src/config/variants";
import { CLI_CALLER, type AdminDeps } from "../../../src/domain/admin/deps";
import { readFeed, type EventsAnswer, type SnapshotAnswer } from "../../../src/domain/admin/feed";
import { createLicense, deactivateActivation, revokeLicense, updateLicense } from "../../../src/domain/admin/licenses";
import { ReleaseControls } from "../../../src/domain/releases/release-controls";
import type { ReleaseControlOp } from "../../../src/store/types";
import { device, testSite, type TestSite } from "../../helpers";

// Issue 21, items 1–4, at the vendor: the feed names its records, answers a snapshot where a cursor
// cannot be continued, states how long revoked tokens live from the tokens issued, and shows a
// feed:read token ids, times and controls only.

const DAY = 86_400_000;
let site: TestSite;
/** The admin deps as `keyturn license revoke` builds them without the server's config: another TTL than serve's. */
let d: AdminDeps;

beforeEach(async () => {
  site = await testSite("alpha", { settings: { "token-ttl": "30d" } });
  d = { variant: VARIANTS.alpha, store: site.composed.store, clock: site.clock, tokenTtlSeconds: 86_400 };
});
afterEach(() => site.close());

const control = (op: ReleaseControlOp, lane: string, version: string) =>
  new ReleaseControls(site.composed.store, site.clock, VARIANTS.alpha).apply(op, lane, version);

const body = {
  licensee: "Ada Lovelace",
  organization: "Analytical Engines Ltd",
  plan: "pro",
  planTitle: "Professional",
  seats: 3,
  channels: ["stable"],
  email: "ada@example.com",
  metadata: { crm: "A-17" },
};

async function activate(key: string, dev = device("alpha", { name: "Ada's laptop" })) {
  const res = await site.request("POST", "/licenses/activate", { body: { key, device: dev } });
  expect(res.status).toBe(200);
  return { ...((await res.json()) as { token: string; entitlement: { id: string; expires: string } }), dev };
}

async function eventsAfter(epochSeq: string): Promise<EventsAnswer> {
  const page = await readFeed(d, CLI_CALLER, { after: epochSeq });
  if (page.mode !== "events") throw new Error(`a ${page.mode} answer`);
  return page;
}

describe("tokensValidUntil is the latest exp issued, not the TTL of whoever revokes", () => {
  test("revoke and deactivate under a shorter TTL state the 30 days the tokens were issued for; a refresh moves it", async () => {
    const { epoch } = await readFeed(d, CLI_CALLER, {});
    const { license, key } = await createLicense(d, CLI_CALLER, body);
    const first = await activate(key);
    const issuedAt = site.clock();
    site.clock.advance(2 * DAY);
    const refreshed = await site.request("POST", "/entitlements/refresh", { token: first.token, body: { device: first.dev } });
    expect(refreshed.status).toBe(200);
    await activate(key, device("alpha", { name: "Ada's desktop" }));
    await deactivateActivation(d, CLI_CALLER, first.entitlement.id);
    await revokeLicense(d, CLI_CALLER, license.id);
    const page = await eventsAfter(`${epoch}.0`);
    const until = (type: string) => (page.events.find((e) => e.type === type)!.data as { tokensValidUntil: string }).tokensValidUntil;
    expect(Date.parse(until("activation.deactivated"))).toBe(issuedAt + 2 * DAY + 30 * DAY);
    expect(Date.parse(until("license.revoked"))).toBe(issuedAt + 2 * DAY + 30 * DAY);
    // A snapshot says the same in one entry: the licence's revocation stands for its deactivated installation.
    const snapshot = (await readFeed(d, CLI_CALLER, {})) as SnapshotAnswer;
    expect(snapshot.revocations.map((r) => [r.kind, Date.parse(r.tokensValidUntil)])).toEqual([["license", issuedAt + 32 * DAY]]);
  });
});

describe("a feed:read token sees ids, times and controls only", () => {
  test("no licensee, organization, e-mail, metadata, plan or device name in events or snapshot", async () => {
    const { epoch } = await readFeed(d, CLI_CALLER, {});
    const { license, key } = await createLicense(d, CLI_CALLER, body);
    const a = await activate(key);
    await deactivateActivation(d, CLI_CALLER, a.entitlement.id);
    await updateLicense(d, CLI_CALLER, license.id, { expires: "2026-12-01T00:00:00Z", licensee: "Ada King", email: "ada.king@example.com" });
    await revokeLicense(d, CLI_CALLER, license.id);
    await control("halt", "alpha/stable/win-x64", "1.0.0");
    const page = await eventsAfter(`${epoch}.0`);
    expect(page.events.map((e) => e.type)).toEqual(["activation.deactivated", "license.updated", "license.revoked", "release.halted"]);
    const snapshot = await readFeed(d, CLI_CALLER, {});
    for (const text of [JSON.stringify(page), JSON.stringify(snapshot)])
      for (const secret of ["Ada", "Analytical", "example.com", "A-17", "crm", "laptop", "Professional", '"pro"']) expect(text).not.toContain(secret);
    expect(page.events[0]!.data).toEqual({ activation: { id: a.entitlement.id, license: license.id }, tokensValidUntil: expect.any(String) });
    const updated = page.events[1]!.data as { license: unknown; changed: string[] };
    expect(Object.keys(updated)).toEqual(["license", "changed"]);
    expect(updated.license).toEqual({ id: license.id, expires: "2026-12-01T00:00:00+00:00" });
    expect(page.events[3]!.data).toMatchObject({ release: { lane: "alpha/stable/win-x64", version: "1.0.0" } });
  });
});

describe("the feed's epoch and snapshot", () => {
  test("every answer names the epoch; no cursor, another epoch, a cursor beyond the newest or behind retention: a snapshot", async () => {
    const start = (await readFeed(d, CLI_CALLER, {})) as SnapshotAnswer;
    expect(start).toMatchObject({ mode: "snapshot", reason: "start", next: null, revocations: [], expiries: [], releases: [] });
    const { epoch } = start;
    expect(start.cursor).toMatch(new RegExp(`^${epoch}\\.\\d+$`));
    const { license, key } = await createLicense(d, CLI_CALLER, body);
    await activate(key);
    await revokeLicense(d, CLI_CALLER, license.id);
    const page = await eventsAfter(start.cursor);
    expect(page).toMatchObject({ mode: "events", epoch });
    const newest = BigInt(page.cursor.split(".")[1]!);

    expect(await readFeed(d, CLI_CALLER, { after: `othe.${newest}` })).toMatchObject({ mode: "snapshot", reason: "epoch" });
    expect(await readFeed(d, CLI_CALLER, { after: String(newest) })).toMatchObject({ mode: "snapshot", reason: "epoch" });
    expect(await readFeed(d, CLI_CALLER, { after: `${epoch}.${newest + 1n}` })).toMatchObject({ mode: "snapshot", reason: "ahead" });
    const gapped = await readFeed(d, CLI_CALLER, { after: `${epoch}.0` });
    expect(gapped.mode).toBe("events");

    // Retention prunes the events (the newest stays): a cursor before them reads a snapshot, with the revocation.
    await site.composed.store.fanOutEvents(site.clock(), 1000, () => "dlv_x");
    site.clock.advance(DAY);
    await createLicense(d, CLI_CALLER, body);
    await revokeLicense(d, CLI_CALLER, (await createLicense(d, CLI_CALLER, body)).license.id);
    await site.composed.store.fanOutEvents(site.clock(), 1000, () => "dlv_y");
    expect((await site.composed.store.pruneEvents(site.clock() - 1000)).events).toBeGreaterThan(0);
    const gap = (await readFeed(d, CLI_CALLER, { after: `${epoch}.0` })) as SnapshotAnswer;
    expect(gap).toMatchObject({ mode: "snapshot", reason: "gap" });
    expect(gap.revocations.map((r) => r.id)).toEqual([license.id]);
  });

  test("a snapshot is paged: every page but the last is full, and the last gives the cursor the events go on from", async () => {
    const { epoch } = await readFeed(d, CLI_CALLER, {});
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { license, key } = await createLicense(d, CLI_CALLER, body);
      await activate(key);
      await revokeLicense(d, CLI_CALLER, license.id);
      ids.push(license.id);
    }
    await control("withdraw", "alpha/stable/win-x64", "1.0.0");
    const seen: string[] = [];
    let page = (await readFeed(d, CLI_CALLER, { limit: "3" })) as SnapshotAnswer;
    const pages = [page];
    while (page.next !== null) {
      page = (await readFeed(d, CLI_CALLER, { limit: "3", snapshot: page.next })) as SnapshotAnswer;
      pages.push(page);
    }
    for (const p of pages) seen.push(...p.revocations.map((r) => r.id), ...p.releases.map((r) => `${r.lane}@${r.version}`));
    expect(pages.map((p) => p.revocations.length + p.releases.length)).toEqual([3, 3, 2]);
    expect(seen).toEqual([...ids.sort(), "alpha/stable/win-x64@1.0.0"]);
    expect(pages.at(-1)!.releases[0]).toMatchObject({ halted: null, haltedMs: 0, withdrawn: expect.stringMatching(/\+00:00$/) });
    expect(new Set(pages.map((p) => p.cursor)).size).toBe(1);
    expect((await readFeed(d, CLI_CALLER, { after: page.cursor })).mode).toBe("events");
    // A snapshot begun on other records starts again; a forged place is refused.
    const forged = Buffer.from(JSON.stringify({ e: "other", r: "start", s: "licenses", k: null, q: "1" })).toString("base64url");
    expect(await readFeed(d, CLI_CALLER, { snapshot: forged })).toMatchObject({ mode: "snapshot", reason: "epoch", epoch });
    await expect(readFeed(d, CLI_CALLER, { snapshot: "bm90IGpzb24" })).rejects.toMatchObject({ code: "invalid_request" });
    await expect(readFeed(d, CLI_CALLER, { snapshot: "x", after: `${epoch}.0` })).rejects.toMatchObject({ code: "invalid_request" });
  });
});
