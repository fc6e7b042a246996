import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FeedServer, foreignSigner, Vendor } from "./vendor";
import { mirrorSite } from "./mirror-site";
import { testClock } from "../helpers";
import { PAGE_GAP_MS } from "../../src/domain/mirror/follower";
import { device, deviceHash } from "../helpers";

const DAY = 86_400_000;
const feed = new FeedServer();
let vendor: Vendor;
let manifestPath: string;

beforeAll(async () => {
  feed.start();
  vendor = await new Vendor("alpha", feed.url).init();
  const r = vendor.tree.add({ version: "1.2.0" });
  manifestPath = `/updates/${r.lane}/alpha-update.json`;
});
afterAll(() => {
  feed.stop();
  vendor.remove();
});

async function code(res: Response): Promise<string | null> {
  if (res.status === 200) return null;
  return ((await res.json()) as { error: string }).error;
}

describe("a mirror's bearer check from its vendor's feed", () => {
  test("a vendor token is served; another site's or another variant's is refused; licensing answers licensing_unavailable", async () => {
    const m = await mirrorSite(vendor, feed.url);
    try {
      const token = vendor.token({ activation: "act_good1", license: "lic_one", nowMs: m.clock() });
      const res = await m.get(manifestPath, token);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { version: string }).version).toBe("1.2.0");
      expect((await m.get(`${manifestPath}.sig`, token)).status).toBe(200);

      const otherSite = await foreignSigner("alpha", "https://other-vendor.example");
      const foreign = otherSite.sign(
        { sub: "act_x", kind: "license", lic: "lic_x", name: "n", org: "o", plan: "p", chn: ["stable"], dev: deviceHash("alpha") },
        m.clock(),
        m.clock() + DAY,
      ).token;
      expect(await code(await m.get(manifestPath, foreign))).toBe("entitlement_invalid");
      // The mirror's own address is not an issuer it accepts either.
      const mirrorIss = await foreignSigner("alpha", "https://mirror.example.com", vendor.vendorKeys);
      const own = mirrorIss.sign(
        { sub: "act_x", kind: "license", lic: "lic_x", name: "n", org: "o", plan: "p", chn: ["stable"], dev: deviceHash("alpha") },
        m.clock(),
        m.clock() + DAY,
      ).token;
      expect(await code(await m.get(manifestPath, own))).toBe("entitlement_invalid");
      const betaSigner = await foreignSigner("beta", feed.url);
      const beta = betaSigner.sign(
        { sub: "act_x", kind: "license", lic: "lic_x", name: "n", org: "o", plan: "p", chn: ["stable"], dev: deviceHash("beta") },
        m.clock(),
        m.clock() + DAY,
      ).token;
      expect(await code(await m.get(manifestPath, beta))).toBe("entitlement_invalid");

      const activate = await m.post("/licenses/activate", { key: "AAAA-BBBB", device: device("alpha") });
      expect(activate.status).toBe(503);
      expect(await code(activate)).toBe("licensing_unavailable");
      for (const [path, body] of [
        ["/entitlements/refresh", { device: device("alpha") }],
        ["/entitlements/deactivate", {}],
      ] as const) {
        const res = await m.post(path, body, token);
        expect(res.status).toBe(503);
        expect(await code(res)).toBe("licensing_unavailable");
      }
      expect(await code(await m.get("/entitlements/current", token))).toBe("licensing_unavailable");
      expect(await code(await m.post("/auth/identity/challenge", { device: device("alpha") }))).toBe("licensing_unavailable");

      const meta = (await (await m.get("/meta")).json()) as { mirror: { of: string; lastSync: string | null }; features: { licensing: boolean } };
      expect(meta.mirror.of).toBe(feed.url);
      expect(meta.features.licensing).toBe(false);
    } finally {
      await m.close();
    }
  });

  test("deactivation, revocation, reinstatement and a shortened expiry are applied in order, evicting cached tokens", async () => {
    const f = new FeedServer().start();
    const m = await mirrorSite(vendor, f.url);
    try {
      const now = m.clock();
      const a = vendor.token({ activation: "act_aaaa", license: "lic_one", nowMs: now, iss: f.url });
      const b = vendor.token({ activation: "act_bbbb", license: "lic_one", nowMs: now, iss: f.url });
      const c = vendor.token({ activation: "act_cccc", license: "lic_two", nowMs: now, iss: f.url });
      for (const t of [a, b, c]) expect((await m.get(manifestPath, t)).status).toBe(200);
      const verifier = m.composed.services.licensing["deps"].verifier;
      expect(verifier.cached).toBe(3);

      f.deactivate("act_aaaa", now + 7 * DAY);
      expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 1, more: false });
      expect(verifier.cached).toBe(2);
      expect(await code(await m.get(manifestPath, a))).toBe("entitlement_revoked");
      expect((await m.get(manifestPath, b)).status).toBe(200);

      f.revoke("lic_one", now + 7 * DAY);
      await m.follower.pollOnce();
      expect(await code(await m.get(manifestPath, b))).toBe("license_revoked");
      expect((await m.get("/releases", c)).status).toBe(200);

      f.add("license.reinstated", { license: { id: "lic_one" } });
      await m.follower.pollOnce();
      expect((await m.get(manifestPath, b)).status).toBe(200);
      expect(await code(await m.get(manifestPath, a))).toBe("entitlement_revoked");

      f.add("license.updated", { license: { id: "lic_two", expires: new Date(now + DAY).toISOString() }, changed: ["expires"] });
      f.add("release.halted", { release: { lane: "alpha/stable/win-x64", version: "1.2.0" }, share: 25 });
      f.add("staff.signed_in", { activation: { id: "act_zzzz" } });
      await m.follower.pollOnce();
      expect((await m.get(manifestPath, c)).status).toBe(200);
      m.clock.advance(DAY);
      expect(await code(await m.get(manifestPath, c))).toBe("license_expired");
      expect(m.follower.mirroredReleaseControls()).toEqual([{ lane: "alpha/stable/win-x64", version: "1.2.0", state: "halted", share: 25 }]);

      // Past tokensValidUntil the revocation is forgotten: every token it covered has expired anyway.
      m.clock.advance(7 * DAY);
      await m.follower.pollOnce();
      const rows = m.composed.store as unknown as { db: import("bun:sqlite").Database };
      expect(rows.db.query("SELECT count(*) AS n FROM mirror_revocations").get()).toEqual({ n: 0 });
      expect(await code(await m.get(manifestPath, a))).toBe("entitlement_expired");
    } finally {
      await m.close();
      f.stop();
    }
  });

  test("down, slow, garbage, a malformed event, a cursor from the past: nothing is applied, the mirror keeps serving and reports staleness, then catches up", async () => {
    const f = new FeedServer().start();
    const clock = testClock();
    const m = await mirrorSite(vendor, f.url, { clock });
    try {
      const now = clock();
      const kept = vendor.token({ activation: "act_kept", license: "lic_k", nowMs: now, iss: f.url });
      const gone = vendor.token({ activation: "act_gone", license: "lic_k", nowMs: now, iss: f.url });
      const later = vendor.token({ activation: "act_later", license: "lic_k", nowMs: now, iss: f.url });
      f.deactivate("act_gone", now + 7 * DAY);
      expect((await m.follower.pollOnce()).ok).toBe(true);
      const health = async () => ((await (await m.get("/health")).json()) as { mirror: { lastSync: string; staleSeconds: number; cursor: string } }).mirror;
      const synced = await health();
      expect(synced.cursor).toBe("e0.1");
      expect(synced.staleSeconds).toBe(0);

      f.deactivate("act_later", now + 7 * DAY);
      const problems: string[] = [];
      f.down();
      for (const mode of ["down", "slow", "garbage", "malformed-event", "backwards", "unauthorized"] as const) {
        if (mode !== "down") {
          f.up();
          f.mode = mode;
        }
        clock.advance(60_000);
        const outcome = await m.follower.pollOnce();
        expect(outcome.ok).toBe(false);
        problems.push(outcome.ok ? "" : outcome.problem);
        // Still serving, from what it knew: no 5xx.
        expect((await m.get(manifestPath, kept)).status).toBe(200);
        expect((await m.get(manifestPath, later)).status).toBe(200);
        expect(await code(await m.get(manifestPath, gone))).toBe("entitlement_revoked");
        const h = await health();
        expect(h.cursor).toBe("e0.1");
        expect(h.lastSync).toBe(synced.lastSync);
      }
      expect(problems[0]).toContain("cannot be reached");
      expect(problems[1]).toContain("did not answer within 300 ms");
      expect(problems[2]).toContain("not JSON");
      expect(problems[3]).toContain("malformed activation.deactivated event");
      expect(problems[4]).toContain("went backwards");
      expect(problems[5]).toContain("refused the mirror token");
      expect((await health()).staleSeconds).toBe(360);
      const warned = m.lines.filter((l) => l.msg === "mirror feed refused: keeping what is known");
      expect(warned.length).toBe(6);
      expect(JSON.stringify(m.lines)).not.toContain("kta_");

      f.mode = "ok";
      expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 1, more: false });
      expect(await code(await m.get(manifestPath, later))).toBe("entitlement_revoked");
      const h = await health();
      expect(h.cursor).toBe("e0.2");
      expect(h.staleSeconds).toBe(0);
    } finally {
      await m.close();
      f.stop();
    }
  });

  test("past --mirror-max-staleness bearer requests answer 503 unavailable, and serve again once the feed answers", async () => {
    const f = new FeedServer().start();
    const m = await mirrorSite(vendor, f.url, { settings: { "mirror-max-staleness": "120s" } });
    try {
      const token = vendor.token({ activation: "act_st", license: "lic_st", nowMs: m.clock(), iss: f.url });
      expect((await m.follower.pollOnce()).ok).toBe(true);
      f.down();
      m.clock.advance(119_000);
      await m.follower.pollOnce();
      expect((await m.get(manifestPath, token)).status).toBe(200);
      m.clock.advance(2_000);
      const res = await m.get(manifestPath, token);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: string; message: string };
      expect(body.error).toBe("unavailable");
      expect(body.message).toContain("stale");
      expect((await m.get("/health")).status).toBe(200);
      f.up();
      await m.follower.pollOnce();
      expect((await m.get(manifestPath, token)).status).toBe(200);
    } finally {
      await m.close();
      f.stop();
    }
  });

  test("a backlog is read page after page, PAGE_GAP_MS apart, then at the poll interval", async () => {
    const f = new FeedServer().start();
    const m = await mirrorSite(vendor, f.url);
    try {
      expect(await m.follower.pollOnce()).toEqual({ ok: true, applied: 0, more: false });
      for (let i = 0; i < 600; i++) f.deactivate(`act_${i}`, m.clock() + DAY);
      const first = await m.follower.pollOnce();
      expect(first).toEqual({ ok: true, applied: 500, more: true });
      expect(m.follower.nextDelayMs(first)).toBe(PAGE_GAP_MS);
      const second = await m.follower.pollOnce();
      expect(second).toEqual({ ok: true, applied: 100, more: false });
      expect(m.follower.nextDelayMs(second)).toBe(1000);
      expect(f.requests.map((r) => r.after)).toEqual([null, "e0.0", "e0.500"]);
      const token = vendor.token({ activation: "act_599", license: "lic_p", nowMs: m.clock(), iss: f.url });
      expect(await code(await m.get(manifestPath, token))).toBe("entitlement_revoked");
    } finally {
      await m.close();
      f.stop();
    }
  });

  test("backoff doubles with each failure up to its cap, with jitter, and returns to the poll interval", async () => {
    const f = new FeedServer().start();
    const m = await mirrorSite(vendor, f.url);
    try {
      f.down();
      const delays: number[] = [];
      for (let i = 0; i < 5; i++) delays.push(m.follower.nextDelayMs(await m.follower.pollOnce()));
      // jitter 0.5: three quarters of 1 s, 2 s, 4 s, then the cap of 8 poll intervals
      expect(delays).toEqual([750, 1500, 3000, 6000, 6000]);
      m.setJitter(0);
      expect(m.follower.nextDelayMs({ ok: false, problem: "x" })).toBe(4000);
      m.setJitter(0.999);
      expect(m.follower.nextDelayMs({ ok: false, problem: "x" })).toBe(7996);
      f.up();
      const ok = await m.follower.pollOnce();
      expect(m.follower.nextDelayMs(ok)).toBe(1000);
    } finally {
      await m.close();
      f.stop();
    }
  });
});
