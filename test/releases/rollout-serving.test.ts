import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { isoTime } from "../../src/domain/clock";
import { releaseOverview } from "../../src/domain/releases/overview";
import { laneName } from "../../src/domain/releases/release-controls";
import { createLicense, device } from "../helpers";
import { releaseSite } from "../release-tree";

// Staged rollouts on the update path and /releases (design.md "Staged rollouts, halt and withdraw"):
// which release an installation is served, checked against the bucket computed here with node:crypto.

const DAY = 86_400_000;
const TWO64 = 1n << 64n;
const uInt = (dev: string, lane: string, version: string) => BigInt("0x" + createHash("sha256").update(`${dev}:${lane}:${version}`).digest("hex").slice(0, 16));

for (const variant of ["alpha", "beta", "gamma"] as VariantName[]) {
  describe(`staged rollouts, ${variant}`, () => {
    const v = VARIANTS[variant];
    const product = v.products[0] ?? null;
    const lane = laneName(product, "stable", "win-x64");
    const prefix = `/updates/${lane}`;
    let s: Awaited<ReturnType<typeof releaseSite>>;
    let installations: { dev: string; token: string }[];

    beforeEach(async () => {
      // Tokens outlive the ramps the tests walk through.
      s = await releaseSite(variant, { "token-ttl": "60d" });
      const { key } = await createLicense(s.site, { channels: ["stable", "preview"], seats: 100 });
      installations = [];
      for (let i = 0; i < 24; i++) {
        const d = device(variant);
        const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: d } });
        installations.push({ dev: d.hash, token: ((await res.json()) as { token: string }).token });
      }
    });
    afterEach(() => s.close());

    const manifestVersion = async (token: string) => {
      const res = await s.site.request("GET", `${prefix}/${v.manifestFile}`, { token });
      if (res.status !== 200) return `${res.status} ${((await res.json()) as { error: string }).error}`;
      return (JSON.parse(await res.text()) as { version: string }).version;
    };
    const signatureOf = async (token: string) => (await s.site.request("GET", `${prefix}/${v.manifestFile}.sig`, { token })).text();
    const installerStatus = async (token: string, name: string) => (await s.site.request("GET", `${prefix}/${name}`, { token })).status;
    const controls = () => s.site.composed.services.selection.controls;

    test("percent: an installation inside gets the new release (manifest, signature, installer); one outside the previous, and not the new installer", async () => {
      const old = s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      const fresh = s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00", fields: { rollout: { percent: 50 } } });
      await s.holder.rescan();
      const oldSig = await Bun.file(`${old.manifestPath}.sig`).text();
      const freshSig = await Bun.file(`${fresh.manifestPath}.sig`).text();
      let inside = 0;
      for (const i of installations) {
        const admitted = uInt(i.dev, lane, "2.0.0") < TWO64 / 2n;
        inside += admitted ? 1 : 0;
        expect(await manifestVersion(i.token)).toBe(admitted ? "2.0.0" : "1.0.0");
        expect(await signatureOf(i.token)).toBe(admitted ? freshSig : oldSig);
        expect(await installerStatus(i.token, fresh.installer)).toBe(admitted ? 200 : 404);
        expect(await installerStatus(i.token, old.installer)).toBe(200);
        // Asked again (from the cache now): the same answer.
        expect(await manifestVersion(i.token)).toBe(admitted ? "2.0.0" : "1.0.0");
      }
      expect(inside).toBeGreaterThan(0);
      expect(inside).toBeLessThan(installations.length);
    });

    test("/releases lists only what the installation may install, and names the newer release not yet rolled out to it", async () => {
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00", fields: { rollout: { percent: 25 } } });
      s.tree.add({ version: "0.9.0", channel: "preview", released: "2026-10-01T00:00:00+00:00" });
      await s.holder.rescan();
      for (const i of installations) {
        const admitted = uInt(i.dev, lane, "2.0.0") < TWO64 / 4n;
        const body = (await (await s.site.request("GET", "/releases", { token: i.token })).json()) as {
          releases: { version: string; channel: string }[];
          notYetAvailable: Record<string, unknown>[];
        };
        expect(body.releases.map((r) => r.version)).toEqual(admitted ? ["2.0.0", "1.0.0", "0.9.0"] : ["1.0.0", "0.9.0"]);
        expect(body.notYetAvailable).toEqual(
          admitted ? [] : [{ ...(product ? { product } : {}), channel: "stable", platform: "win-x64", version: "2.0.0", share: 25 }],
        );
      }
    });

    test("withdraw: every installation falls back at once, the withdrawn installer is never served; restore brings it back", async () => {
      const old = s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      const fresh = s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00" });
      await s.holder.rescan();
      const one = installations[0]!.token;
      expect(await manifestVersion(one)).toBe("2.0.0");
      const withdrawn = await controls().apply("withdraw", lane, "2.0.0", s.holder.current);
      expect(withdrawn).toMatchObject({ changed: true, share: 100, control: { lane, version: "2.0.0", withdrawn: s.site.clock() } });
      for (const i of installations) {
        expect(await manifestVersion(i.token)).toBe("1.0.0");
        expect(await installerStatus(i.token, fresh.installer)).toBe(404);
      }
      const listed = (await (await s.site.request("GET", "/releases", { token: one })).json()) as {
        releases: { version: string }[];
        notYetAvailable: unknown[];
      };
      expect(listed.releases.map((r) => r.version)).toEqual(["1.0.0"]);
      expect(listed.notYetAvailable).toEqual([]);
      expect((await controls().apply("withdraw", lane, "2.0.0")).changed).toBe(false);
      // Withdrawing the last one too: nothing to serve.
      await controls().apply("withdraw", lane, "1.0.0");
      expect(await manifestVersion(one)).toBe("404 no_release");
      expect(await installerStatus(one, old.installer)).toBe(404);
      await controls().apply("restore", lane, "1.0.0");
      expect((await controls().apply("restore", lane, "2.0.0")).changed).toBe(true);
      expect(await manifestVersion(one)).toBe("2.0.0");
      expect(await installerStatus(one, fresh.installer)).toBe(200);
    });

    test("days: the ramp admits more as the clock moves; halt freezes it, resume goes on from where it stood", async () => {
      const clock = s.site.clock;
      const t0 = clock();
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({ version: "3.0.0", released: new Date(t0).toISOString().replace("Z", "+00:00"), fields: { rollout: { days: 10 } } });
      await s.holder.rescan();
      /** Independently: admitted when u / 2^64 < elapsed / 10 days. */
      const expected = (elapsed: number) =>
        installations.map((i) => (uInt(i.dev, lane, "3.0.0") * BigInt(10 * DAY) < BigInt(elapsed) * TWO64 ? "3.0.0" : "1.0.0"));
      const served = async () => Promise.all(installations.map((i) => manifestVersion(i.token)));

      expect(await served()).toEqual(installations.map(() => "1.0.0"));
      clock.advance(3 * DAY);
      expect(await served()).toEqual(expected(3 * DAY));
      clock.advance(2 * DAY);
      const atHalt = expected(5 * DAY);
      expect(await served()).toEqual(atHalt);
      expect(atHalt).toContain("3.0.0");
      expect(atHalt).toContain("1.0.0");

      const halted = await controls().apply("halt", lane, "3.0.0", s.holder.current);
      expect(halted).toMatchObject({ changed: true, share: 50, control: { halted: t0 + 5 * DAY } });
      clock.advance(3 * DAY);
      expect(await served()).toEqual(atHalt);
      await controls().apply("resume", lane, "3.0.0");
      // Resumed at day 8 after 3 days halted: the ramp stands at 5 days' worth and goes on from there.
      expect(await served()).toEqual(atHalt);
      clock.advance(2 * DAY);
      expect(await served()).toEqual(expected(7 * DAY));
      clock.advance(4 * DAY);
      expect(await served()).toEqual(installations.map(() => "3.0.0"));
    });

    test("staff are always admitted: served the newest release not withdrawn, even at 0 %", async () => {
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00", fields: { rollout: { percent: 0 } } });
      await s.holder.rescan();
      const selection = s.site.composed.services.selection;
      const index = s.holder.current!;
      const dev = installations[0]!.dev;
      expect((await selection.served(index, { dev, kind: "license" }, product, "stable", "win-x64"))?.manifest.version).toBe("1.0.0");
      expect((await selection.served(index, { dev, kind: "staff" }, product, "stable", "win-x64"))?.manifest.version).toBe("2.0.0");
      await controls().apply("withdraw", lane, "2.0.0");
      expect((await selection.served(index, { dev, kind: "staff" }, product, "stable", "win-x64"))?.manifest.version).toBe("1.0.0");
      expect(await manifestVersion(installations[0]!.token)).toBe("1.0.0");
    });

    test("the admin overview: each lane's releases with rollout, share and controls; controls of releases not in the tree; skipped folders with why", async () => {
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00", fields: { rollout: { percent: 20 } } });
      s.tree.add({ version: "2.1.0", folder: "broken", fields: { rollout: { percent: 120 } } });
      await s.holder.rescan();
      await controls().apply("halt", lane, "2.0.0");
      await controls().apply("withdraw", lane, "9.9.9");
      const now = isoTime(s.site.clock());
      const o = await releaseOverview({ index: s.holder.current!, skipped: s.holder.skipped, controls: controls(), clock: s.site.clock });
      expect(o.lanes.map((l) => l.lane)).toEqual([lane]);
      expect(o.lanes[0]!.releases.map((r) => [r.version, r.rollout, r.share, r.halted, r.withdrawn])).toEqual([
        ["2.0.0", { percent: 20 }, 20, now, null],
        ["1.0.0", null, 100, null, null],
      ]);
      expect(o.otherControls).toEqual([{ lane, version: "9.9.9", halted: null, withdrawn: now }]);
      expect(o.skipped).toEqual([{ folder: `${lane}/broken`, reason: "manifest rollout percent must be a number from 0 to 100" }]);
    });

    test("an older release served by a rollout is read from the tree when first served, and never once its files changed since the scan", async () => {
      const old = s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({ version: "2.0.0", released: "2026-11-20T00:00:00+00:00", fields: { rollout: { percent: 0 } } });
      await s.holder.rescan();
      const [first, second] = installations;
      const index = s.holder.current!;
      expect(await manifestVersion(first!.token)).toBe("1.0.0");
      // A fresh index (a re-scan, nothing changed yet) whose 1.0.0 is then changed in place, before
      // the re-scan the watch would start: its signature no longer holds, so it is not served.
      await s.holder.rescan();
      expect(s.holder.current).not.toBe(index);
      await Bun.write(old.manifestPath, old.manifestBytes.toString().replace('"1.0.0"', '"1.0.1"'));
      expect(await manifestVersion(second!.token)).toBe("404 no_release");
      expect(await manifestVersion(first!.token)).toBe("404 no_release");
      await s.holder.rescan();
      expect(await manifestVersion(first!.token)).toBe("404 no_release");
    });

    test("a lane with no rollout and no control: everyone gets the newest, as before", async () => {
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({ version: "1.1.0", released: "2026-11-02T00:00:00+00:00" });
      await s.holder.rescan();
      for (const i of installations.slice(0, 5)) expect(await manifestVersion(i.token)).toBe("1.1.0");
    });

    test("the manifest read records the installation's lane (adoption), written at the recorder's flush", async () => {
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      await s.holder.rescan();
      const store = s.site.composed.store;
      expect(await store.installationsSeen(0)).toEqual([{ product, lane: null, version: "1.0.0", installations: installations.length }]);
      await manifestVersion(installations[0]!.token);
      await manifestVersion(installations[1]!.token);
      await s.site.composed.services.adoption.flush();
      expect(await store.installationsSeen(0)).toEqual([
        { product, lane, version: "1.0.0", installations: 2 },
        { product, lane: null, version: "1.0.0", installations: installations.length - 2 },
      ]);
    });
  });
}
