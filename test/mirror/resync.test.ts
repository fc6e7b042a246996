import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import { FeedServer, Vendor } from "./vendor";
import { mirrorSite } from "./mirror-site";

// Issue 21, items 1, 2, 6 and 7, against a vendor's feed played by FeedServer (real HTTP): a mirror
// never skips what its vendor revoked when the records behind the feed are replaced, and applies a
// page (release controls included) with its cursor or not at all, at the vendor's times.

const DAY = 86_400_000;
const LANE = "alpha/stable/win-x64";
let vendor: Vendor;
let manifestPath: string;

beforeAll(async () => {
  vendor = await new Vendor("alpha", "http://unused.example").init();
  const r = vendor.tree.add({ version: "1.2.0" });
  manifestPath = `/updates/${r.lane}/alpha-update.json`;
});
afterAll(() => vendor.remove());

async function code(res: Response): Promise<string | null> {
  if (res.status === 200) return null;
  return ((await res.json()) as { error: string }).error;
}

async function withMirror(run: (f: FeedServer, m: Awaited<ReturnType<typeof mirrorSite>>) => Promise<void>) {
  const f = new FeedServer().start();
  const m = await mirrorSite(vendor, f.url);
  try {
    await run(f, m);
  } finally {
    await m.close();
    f.stop();
  }
}

const dbOf = (m: Awaited<ReturnType<typeof mirrorSite>>) => (m.composed.store as unknown as { db: Database }).db;
const tokenOf = (f: FeedServer, m: Awaited<ReturnType<typeof mirrorSite>>, activation: string, license = "lic_r") =>
  vendor.token({ activation, license, nowMs: m.clock(), iss: f.url });

describe("a mirror resynchronises from a snapshot when the feed's records are not the ones its cursor is of", () => {
  test("records of another epoch (copied elsewhere): what the snapshot holds is refused though the new numbering is behind the cursor", async () => {
    await withMirror(async (f, m) => {
      for (let i = 0; i < 5; i++) f.add("release.published", { release: { lane: LANE, version: `0.${i}.0` } });
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect(m.follower["deps"].knowledge.status().cursor).toBe("e0.5");
      const token = tokenOf(f, m, "act_moved");
      expect((await m.get(manifestPath, token)).status).toBe(200);

      // The records move (keyturn copy): a new epoch, and the revocation is the records' state.
      f.epoch = "e1";
      f.deactivate("act_moved", m.clock() + 7 * DAY);
      expect(await m.follower.pollOnce()).toMatchObject({ ok: true, more: false });
      expect(f.requests.at(-1)).toMatchObject({ after: "e0.5" });
      expect(await code(await m.get(manifestPath, token))).toBe("entitlement_revoked");
      expect(m.follower["deps"].knowledge.status().cursor).toBe("e1.6");
      expect(m.lines.some((l) => l.msg === "mirror resynchronised from the vendor's snapshot")).toBe(true);
    });
  });

  test("a cursor beyond the vendor's newest event (a backup restored) and one behind its retention both read a snapshot", async () => {
    await withMirror(async (f, m) => {
      f.revoke("lic_gap", m.clock() + 7 * DAY);
      for (let i = 0; i < 3; i++) f.add("release.published", { release: { lane: LANE, version: `0.${i}.0` } });
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const token = tokenOf(f, m, "act_g", "lic_gap");
      expect(await code(await m.get(manifestPath, token))).toBe("license_revoked");

      // Restored from a backup: the feed's newest event is behind the mirror's cursor.
      (f as unknown as { events: unknown[] }).events.splice(2);
      expect(await m.follower.pollOnce()).toMatchObject({ ok: true });
      expect(f.requests.at(-1)).toMatchObject({ after: "e0.4" });
      expect(m.follower["deps"].knowledge.status().cursor).toBe("e0.2");
      expect(await code(await m.get(manifestPath, token))).toBe("license_revoked");

      // Offline past retention: events after its cursor were pruned; the snapshot still holds the revocation.
      f.add("release.published", { release: { lane: LANE, version: "0.9.0" } });
      f.add("activation.deactivated", { activation: { id: "act_late" }, tokensValidUntil: new Date(m.clock() + DAY).toISOString() });
      f.prunedThrough = 4;
      const late = tokenOf(f, m, "act_late");
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect(await code(await m.get(manifestPath, late))).toBe("entitlement_revoked");
      expect(await code(await m.get(manifestPath, token))).toBe("license_revoked");
    });
  });

  test("a paged snapshot is applied only whole: until its last page the mirror serves what it knew", async () => {
    await withMirror(async (f, m) => {
      f.deactivate("act_known", m.clock() + DAY);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const known = tokenOf(f, m, "act_known");
      const last = tokenOf(f, m, "act_1199");
      expect(await code(await m.get(manifestPath, known))).toBe("entitlement_revoked");
      f.epoch = "e2";
      f.add("license.reinstated", { license: { id: "lic_none" } });
      // act_known's revocation stays in the new records' state; 1,200 more come on three pages.
      for (let i = 0; i < 1200; i++) f.deactivate(`act_${i}`, m.clock() + DAY);
      expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 0, more: true });
      expect((await m.get(manifestPath, last)).status).toBe(200);
      expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 0, more: true });
      expect(await code(await m.get(manifestPath, known))).toBe("entitlement_revoked");
      expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 1201, more: false });
      expect(await code(await m.get(manifestPath, last))).toBe("entitlement_revoked");
      expect(f.requests.slice(-3).map((r) => r.snapshot)).toEqual([null, "500", "1000"]);
      expect(dbOf(m).query("SELECT count(*) AS n FROM mirror_revocations").get()).toEqual({ n: 1201 });
    });
  });
});

describe("a page is applied with its cursor in one transaction, release controls at the vendor's time", () => {
  test("one failing release control: nothing of the page is applied and the cursor stays; once it can be, all of it is", async () => {
    await withMirror(async (f, m) => {
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const before = m.follower["deps"].knowledge.status().cursor;
      f.add("release.halted", { release: { lane: LANE, version: "1.2.0" }, share: 10 });
      f.deactivate("act_page", m.clock() + DAY);
      f.add("release.withdrawn", { release: { lane: LANE, version: "9.9.9" } });
      const db = dbOf(m);
      db.exec(`CREATE TRIGGER refuse_one BEFORE INSERT ON release_controls WHEN NEW.version = '9.9.9' BEGIN SELECT RAISE(ABORT, 'disk says no'); END`);
      await expect(m.follower.pollOnce()).rejects.toThrow("disk says no");
      expect(m.follower["deps"].knowledge.status().cursor).toBe(before);
      expect(await m.composed.store.listReleaseControls()).toEqual([]);
      expect((await m.get(manifestPath, tokenOf(f, m, "act_page"))).status).toBe(200);

      db.exec("DROP TRIGGER refuse_one");
      expect(await m.follower.pollOnce()).toMatchObject({ ok: true, applied: 3 });
      expect(m.follower["deps"].knowledge.status().cursor).toBe("e0.3");
      expect((await m.composed.store.listReleaseControls()).map((c) => [c.version, c.halted !== null, c.withdrawn !== null])).toEqual([
        ["1.2.0", true, false],
        ["9.9.9", false, true],
      ]);
      expect(await code(await m.get(manifestPath, tokenOf(f, m, "act_page")))).toBe("entitlement_revoked");
    });
  });

  test("a halt and a resume take the vendor's times, not the mirror's clock (10 hours later here)", async () => {
    await withMirror(async (f, m) => {
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const haltedAt = m.clock() - 10 * 3_600_000;
      const resumedAt = haltedAt + 3 * 3_600_000;
      f.add("release.halted", { release: { lane: LANE, version: "1.2.0" }, share: 12.5 }, haltedAt);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const [halted] = await m.composed.store.listReleaseControls();
      expect(halted).toMatchObject({ lane: LANE, version: "1.2.0", halted: haltedAt, haltedMs: 0 });
      f.add("release.resumed", { release: { lane: LANE, version: "1.2.0" }, share: 12.5 }, resumedAt);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const [resumed] = await m.composed.store.listReleaseControls();
      expect(resumed).toMatchObject({ halted: null, haltedMs: resumedAt - haltedAt });

      // A snapshot carries the same times: a mirror resynchronised stands where the vendor stands.
      f.epoch = "e3";
      f.add("release.halted", { release: { lane: LANE, version: "1.2.0" }, share: 20 }, resumedAt + 3_600_000);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const [again] = await m.composed.store.listReleaseControls();
      expect(again).toMatchObject({ halted: resumedAt + 3_600_000, haltedMs: resumedAt - haltedAt });
    });
  });
});
