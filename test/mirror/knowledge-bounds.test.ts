import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FeedServer, Vendor } from "./vendor";
import { mirrorSite } from "./mirror-site";

// What a mirror keeps of its vendor's feed, and what it says it cannot do: a licence's revocation
// standing for its deactivated installations (issue 34 item 1), licence expiries bounded like the
// vendor's other times (issue 34 item 5), and the vendor's lanes it skips (issue 33 item 5).

const DAY = 86_400_000;
const YEAR = 365 * DAY;
let vendor: Vendor;
let manifest: string;

beforeAll(async () => {
  vendor = await new Vendor("alpha", "http://127.0.0.1:1").init();
  const r = vendor.tree.add({ version: "1.2.0" });
  manifest = `/updates/${r.lane}/alpha-update.json`;
});
afterAll(() => vendor.remove());

type Site = Awaited<ReturnType<typeof mirrorSite>>;
type Health = { status: string; degraded?: string[]; mirror: { entries: number; problem: string | null; cursor: string | null } };
const health = async (m: Site) => (await (await m.get("/health")).json()) as Health;
const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "+00:00");

async function refusal(res: Response): Promise<string | null> {
  if (res.status === 200) return null;
  const body = (await res.json()) as { error: string; message: string };
  return `${body.error}: ${body.message}`;
}

async function withMirror(run: (m: Site, f: FeedServer) => Promise<void>, settings?: Record<string, string>): Promise<void> {
  const f = new FeedServer().start();
  const m = await mirrorSite(vendor, f.url, settings ? { settings } : {});
  try {
    await run(m, f);
  } finally {
    await m.close();
    f.stop();
  }
}

describe("a licence's revocation stands for its deactivated installations", () => {
  test("deactivations it covers are dropped, later ones are not kept; after a reinstatement the tokens issued before it stay refused, newer ones are served", () =>
    withMirror(async (m, f) => {
      const now = m.clock();
      const token = (activation: string, license: string, nowMs = now) => vendor.token({ activation, license, nowMs, iss: f.url });
      const deactivate = (activation: string, license: string) =>
        f.add("activation.deactivated", { activation: { id: activation, license }, tokensValidUntil: iso(now + 7 * DAY) }, now);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      for (const a of ["act_a1", "act_a2", "act_a3"]) deactivate(a, "lic_a");
      deactivate("act_b1", "lic_b");
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect((await health(m)).mirror.entries).toBe(4);

      f.add("license.revoked", { license: { id: "lic_a" }, tokensValidUntil: iso(now + 7 * DAY) }, now);
      deactivate("act_a4", "lic_a");
      expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 2, more: false });
      // One entry for lic_a where there were three (and a fourth came while it was revoked), and act_b1's.
      expect((await health(m)).mirror.entries).toBe(2);
      for (const a of ["act_a1", "act_a4", "act_a9"])
        expect(await refusal(await m.get(manifest, token(a, "lic_a")))).toBe("license_revoked: The licence is revoked.");
      expect(await refusal(await m.get(manifest, token("act_b1", "lic_b")))).toStartWith("entitlement_revoked");

      // Reinstated an hour later: which of lic_a's installations were deactivated is not kept, so
      // every token of lic_a from before the reinstatement stays refused; tokens issued after it
      // (the vendor refreshes only installations still active) are served.
      f.add("license.reinstated", { license: { id: "lic_a" } }, now + 3_600_000);
      m.clock.advance(2 * 3_600_000);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect(await refusal(await m.get(manifest, token("act_a1", "lic_a")))).toBe(
        "license_revoked: The token was issued before the licence was reinstated. Refresh it at the vendor.",
      );
      expect((await m.get(manifest, token("act_a5", "lic_a", m.clock()))).status).toBe(200);
      expect((await health(m)).mirror.entries).toBe(2);

      // A licence reinstated that stood for no installation is forgotten at once, as before.
      f.add("license.revoked", { license: { id: "lic_c" }, tokensValidUntil: iso(now + 7 * DAY) }, m.clock());
      f.add("license.reinstated", { license: { id: "lic_c" } }, m.clock());
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect((await health(m)).mirror.entries).toBe(2);
      expect((await m.get(manifest, token("act_c1", "lic_c"))).status).toBe(200);
    }));

  test("from a snapshot, which leaves out the deactivations a licence revocation stands for, a reinstatement still refuses the tokens issued before it", () =>
    withMirror(async (m, f) => {
      const now = m.clock();
      f.revoke("lic_s", now + 7 * DAY);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect(f.requests.at(-1)!.after).toBeNull();
      f.add("license.reinstated", { license: { id: "lic_s" } }, now + 60_000);
      m.clock.advance(120_000);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect(await refusal(await m.get(manifest, vendor.token({ activation: "act_s1", license: "lic_s", nowMs: now, iss: f.url })))).toStartWith(
        "license_revoked",
      );
      expect((await m.get(manifest, vendor.token({ activation: "act_s2", license: "lic_s", nowMs: m.clock(), iss: f.url }))).status).toBe(200);
    }));

  test("a revocation is kept no longer than the longest token lifetime after its event, whatever tokensValidUntil says", () =>
    withMirror(async (m, f) => {
      const now = m.clock();
      expect((await m.follower.pollOnce()).ok).toBe(true);
      f.add("activation.deactivated", { activation: { id: "act_old", license: "lic_o" }, tokensValidUntil: iso(now + 300 * DAY) }, now - 100 * DAY);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const db = (m.composed.store as unknown as { db: import("bun:sqlite").Database }).db;
      const row = db.query("SELECT valid_until FROM mirror_revocations WHERE id = 'act_old'").get() as { valid_until: number };
      expect(row.valid_until).toBe(now - 100 * DAY + 367 * DAY);
    }));
});

describe("licence expiries from the feed are bounded like the vendor's other times", () => {
  test("an expiry before 2020 refuses the page; one beyond any token's life is kept as none; one within it refuses the licence's tokens after it", () =>
    withMirror(async (m, f) => {
      const now = m.clock();
      const expire = (ms: number | string) =>
        f.add("license.updated", { license: { id: "lic_e", expires: typeof ms === "string" ? ms : iso(ms) }, changed: ["expires"] }, m.clock());
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const cursor = (await health(m)).mirror.cursor;

      expire("1970-01-01T00:00:00+00:00");
      const refused = await m.follower.pollOnce();
      expect(refused.ok ? "" : refused.problem).toContain("license.expires (1970-01-01T00:00:00+00:00) is implausible");
      expect((await health(m)).mirror.cursor).toBe(cursor);
      expect((await health(m)).mirror.entries).toBe(0);

      const g = new FeedServer().start();
      const n = await mirrorSite(vendor, g.url, { clock: m.clock });
      try {
        const served = vendor.token({ activation: "act_e1", license: "lic_e", nowMs: now, iss: g.url });
        expect((await n.follower.pollOnce()).ok).toBe(true);
        g.add("license.updated", { license: { id: "lic_e", expires: iso(now + 3 * YEAR) }, changed: ["expires"] }, now);
        expect((await n.follower.pollOnce()).ok).toBe(true);
        expect((await health(n)).mirror.entries).toBe(0);
        g.add("license.updated", { license: { id: "lic_e", expires: iso(now + DAY) }, changed: ["expires"] }, now);
        expect((await n.follower.pollOnce()).ok).toBe(true);
        expect((await health(n)).mirror.entries).toBe(1);
        expect((await n.get(manifest, served)).status).toBe(200);
        n.clock.advance(DAY);
        expect(await refusal(await n.get(manifest, served))).toStartWith("license_expired");
        // Renewed for years: the entry goes, and the licence's tokens are served again.
        g.add("license.updated", { license: { id: "lic_e", expires: iso(n.clock() + 3 * YEAR) }, changed: ["expires"] }, n.clock());
        expect((await n.follower.pollOnce()).ok).toBe(true);
        expect((await health(n)).mirror.entries).toBe(0);
        expect((await n.get(manifest, served)).status).toBe(200);
      } finally {
        await n.close();
        g.stop();
      }
    }));
});

describe("a mirror whose lanes are behind its vendor's", () => {
  const site = { channels: ["stable", "preview", "beta"], platforms: ["win-x64", "mac-arm64"], keys: [] };

  test("reports degraded in /health naming the channels and platforms it skips, learnt from the feed", () =>
    withMirror(async (m, f) => {
      expect((await m.follower.pollOnce()).ok).toBe(true);
      expect((await health(m)).status).toBe("ok");
      f.site = site;
      f.deactivate("act_l1", m.clock() + DAY);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const res = await m.get("/health");
      expect(res.status).toBe(200);
      const said = (await res.json()) as Health;
      expect(said.status).toBe("degraded");
      expect(said.degraded).toEqual([
        "The vendor's channels beta are skipped here: add them to --channels.",
        "The vendor's platforms mac-arm64 are skipped here: add them to --platforms.",
      ]);
    }));

  test("with the vendor's lanes configured, health is ok", () =>
    withMirror(
      async (m, f) => {
        f.site = site;
        expect((await m.follower.pollOnce()).ok).toBe(true);
        expect(await health(m)).toMatchObject({ status: "ok", mirror: { problem: null } });
        expect((await health(m)).degraded).toBeUndefined();
      },
      { channels: "stable,preview,beta", platforms: "win-x64,mac-arm64" },
    ));
});
