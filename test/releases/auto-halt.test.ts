import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { laneName } from "../../src/domain/releases/release-controls";
import { RUNNERS_REFRESH_MS } from "../../src/domain/releases/release-selection";
import { createLicense, device } from "../helpers";
import { releaseSite, type WrittenRelease } from "../release-tree";

// design.md "Release pipeline": install outcome reports (POST /updates/report with the bearer),
// counted per release; a rollout's autoHalt halts the release by itself, and until a person resumes
// it the lane offers it only to installations already running it; everyone else, failed installs
// included, gets the previous release.

for (const variant of ["alpha", "gamma"] as VariantName[]) {
  describe(`install reports and the automatic halt, ${variant}`, () => {
    const v = VARIANTS[variant];
    const product = v.products[0] ?? null;
    const lane = laneName(product, "stable", "win-x64");
    let s: Awaited<ReturnType<typeof releaseSite>>;
    let installs: { token: string; dev: string; version: string }[];
    let fresh: WrittenRelease;

    beforeEach(async () => {
      s = await releaseSite(variant);
      const { key } = await createLicense(s.site, { channels: ["stable"], seats: 100 });
      installs = [];
      // Six on 1.0.0, one activated (refresh, activate) already at 2.0.0.
      for (const version of ["1.0.0", "1.0.0", "1.0.0", "1.0.0", "1.0.0", "1.0.0", "2.0.0"]) {
        const d = device(variant, { version });
        const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: d } });
        installs.push({ token: ((await res.json()) as { token: string }).token, dev: d.hash, version });
      }
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      fresh = s.tree.add({
        version: "2.0.0",
        released: "2026-11-20T00:00:00+00:00",
        fields: { rollout: { percent: 100, autoHalt: { failureRate: 0.5, minReports: 4, window: "1h" } } },
      });
      await s.holder.rescan();
    });
    afterEach(() => s.close());

    const report = (token: string, body: Record<string, unknown>) => s.site.request("POST", "/updates/report", { token, body });
    const served = async (token: string, query = "") => {
      const res = await s.site.request("GET", `/updates/${lane}/${v.manifestFile}${query}`, { token });
      return res.status === 200 ? (JSON.parse(await res.text()) as { version: string }).version : `${res.status}`;
    };
    const flush = () => s.site.composed.services.installReports.flush();
    const control = async () => (await s.site.composed.store.listReleaseControls()).find((c) => c.lane === lane && c.version === "2.0.0");

    test("one device votes once: a seat freed and taken again, by the same device or another, does not add failures", async () => {
      // A one-seat licence cycled through activate, report failed, deactivate, as often as the
      // rule's minReports: without these rules it would halt the release for every customer.
      const { key } = await createLicense(s.site, { channels: ["stable"], seats: 1 });
      const same = device(variant);
      for (let i = 0; i < 6; i++) {
        const d = i % 2 === 0 ? same : device(variant);
        const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: d } });
        const token = ((await res.json()) as { token: string }).token;
        expect((await report(token, { from: "1.0.0", to: "2.0.0", outcome: "failed" })).status).toBe(200);
        if (i < 5) expect((await s.site.request("POST", "/entitlements/deactivate", { token })).status).toBe(200);
      }
      await flush();
      expect(await s.site.composed.store.releaseHealth({ lane, version: "2.0.0" }, s.site.clock() - 60_000)).toEqual({ reports: 1, failed: 1 });
      expect((await control())?.halted ?? null).toBeNull();
    });

    test("a report is counted for the release it names, on the installation's lane; one naming no release of its lanes is refused", async () => {
      const res = await report(installs[0]!.token, { from: "1.0.0", to: "2.0.0", outcome: "installed" });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, release: { lane, version: "2.0.0" } });
      const unknown = await report(installs[0]!.token, { from: "1.0.0", to: "9.9.9", outcome: "failed" });
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { error: string }).error).toBe("not_found");
      for (const [body, field] of [
        [{ from: "1.0.0", to: "2.0.0", outcome: "exploded" }, "outcome"],
        [{ from: "1.0.0", to: "2.0.0", outcome: "failed", code: "x".repeat(41) }, "code"],
        [{ from: "1.0.0", to: "2.0.0", outcome: "failed", code: "bad\u0007code" }, "code"],
        [{ from: "1.0.0", to: "2.0.0", outcome: "failed", extra: 1 }, "extra"],
        [{ to: "2.0.0", outcome: "failed" }, "from"],
      ] as const) {
        const r = await report(installs[0]!.token, body);
        expect(r.status).toBe(400);
        expect(((await r.json()) as { message: string }).message).toContain(field);
      }
      expect((await s.site.request("POST", "/updates/report", { body: { from: "1.0.0", to: "2.0.0", outcome: "failed" } })).status).toBe(401);
      // Nothing is written before the flush; then one row per installation and release, the latest outcome.
      await report(installs[1]!.token, { from: "1.0.0", to: "2.0.0", outcome: "failed", code: "E1603" });
      await report(installs[1]!.token, { from: "1.0.0", to: "2.0.0", outcome: "installed" });
      const since = s.site.clock() - 60_000;
      expect(await s.site.composed.store.releaseHealth({ lane, version: "2.0.0" }, since)).toEqual({ reports: 0, failed: 0 });
      await flush();
      expect(await s.site.composed.store.releaseHealth({ lane, version: "2.0.0" }, since)).toEqual({ reports: 2, failed: 0 });
      // An installed report moves the installation's recorded version (adoption counts it there).
      const activations = await s.site.composed.store.listActivations((await s.site.composed.store.listLicenses())[0]!.id);
      expect(activations.filter((a) => a.version === "2.0.0").length).toBe(3);
    });

    test("a failure spike halts the rollout by itself; the lane then offers it only to installations running it, until a person resumes it", async () => {
      const clock = s.site.clock;
      for (const i of installs) expect(await served(i.token)).toBe("2.0.0");
      // Two installed, one failed: 3 reports, under minReports 4: nothing happens.
      await report(installs[0]!.token, { from: "1.0.0", to: "2.0.0", outcome: "installed" });
      await report(installs[1]!.token, { from: "1.0.0", to: "2.0.0", outcome: "installed" });
      await report(installs[2]!.token, { from: "1.0.0", to: "2.0.0", outcome: "failed", code: "E1603" });
      await flush();
      expect((await control())?.halted ?? null).toBeNull();
      // Reports older than the window do not count: an hour on, two more failures are 2 of 2 within it (under minReports).
      clock.advance(3_600_001);
      await report(installs[3]!.token, { from: "1.0.0", to: "2.0.0", outcome: "failed" });
      await report(installs[4]!.token, { from: "1.0.0", to: "2.0.0", outcome: "rolled-back", code: "crash" });
      await flush();
      expect((await control())?.halted ?? null).toBeNull();
      // Two more within the window: 4 reports, 3 failed (75% >= 50%): halted at once.
      await report(installs[2]!.token, { from: "1.0.0", to: "2.0.0", outcome: "failed", code: "E1603" });
      await report(installs[1]!.token, { from: "1.0.0", to: "2.0.0", outcome: "installed" });
      await flush();
      const c = await control();
      expect(c?.halted).toBe(clock());
      expect(c?.haltRule).toBe("autoHalt: 3 of 4 installations reporting within 1h failed (75%; the rule: at least 50% of at least 4)");

      // As `release halt` does: an audit line naming the rule, the release.halted event (mirrors read it in the feed).
      const audit = (await s.site.composed.store.listAudit({ limit: 50 })).filter((a) => a.action === "release-halt");
      expect(audit.map((a) => a.actor)).toEqual([c!.haltRule!]);
      const events = await s.site.composed.store.listEvents({ after: 0, limit: 50, types: ["release.halted"] });
      expect(events.map((e) => JSON.parse(e.data))).toEqual([{ release: { lane, version: "2.0.0" }, share: 100, rule: c!.haltRule }]);
      // A mirror starting now reads it in the feed's snapshot.
      const { secret } = await createAdminToken(s.site.composed.services.admin, CLI_CALLER, { name: "mirror", scopes: ["feed:read"] });
      const snapshot = (await (await s.site.request("GET", "/admin/feed", { token: secret })).json()) as { mode: string; releases: unknown[] };
      expect(snapshot.mode).toBe("snapshot");
      expect(snapshot.releases).toEqual([{ lane, version: "2.0.0", halted: expect.any(String), haltedMs: 0, withdrawn: null, rule: c!.haltRule }]);

      // Running it: installs[1] (reported installed), installs[6] (activated at 2.0.0); installs[0]'s
      // report is outside the window but still says it runs it. The rest, the failed ones included, fall back.
      const expected = ["2.0.0", "2.0.0", "1.0.0", "1.0.0", "1.0.0", "1.0.0", "2.0.0"];
      expect(await Promise.all(installs.map((i) => served(i.token)))).toEqual(expected);
      // The request's own version says it too.
      expect(await served(installs[5]!.token, "?installed=2.0.0")).toBe("2.0.0");
      // The release's installer is not served to those it is not offered to.
      expect((await s.site.request("GET", `/updates/${lane}/${fresh.installer}`, { token: installs[2]!.token })).status).toBe(404);
      // A later installed report (an installation that had downloaded it before the halt) counts after the runners are read again.
      await report(installs[5]!.token, { from: "1.0.0", to: "2.0.0", outcome: "installed" });
      await flush();
      clock.advance(RUNNERS_REFRESH_MS);
      expect(await served(installs[5]!.token)).toBe("2.0.0");

      // A person resumes it: the rule is gone and the share (100%) admits everyone again.
      const resumed = await s.site.composed.services.selection.controls.apply("resume", lane, "2.0.0", s.holder.current);
      expect(resumed.control.haltRule).toBeNull();
      for (const i of installs) expect(await served(i.token)).toBe("2.0.0");
    });
  });
}

describe("trials and the automatic halt", () => {
  test("failed installs reported from trials, which anyone can start without a key, do not halt a release", async () => {
    const s = await releaseSite("gamma", { "trial-plan": "eval" }, { tables: { plans: { eval: { seats: 1, channels: ["stable"] } } } });
    try {
      s.tree.add({ version: "1.0.0", released: "2026-11-01T00:00:00+00:00" });
      s.tree.add({
        version: "2.0.0",
        released: "2026-11-20T00:00:00+00:00",
        fields: { rollout: { percent: 100, autoHalt: { failureRate: 0.5, minReports: 4, window: "1h" } } },
      });
      await s.holder.rescan();
      for (let i = 0; i < 6; i++) {
        const started = await s.site.request("POST", "/trials/start", { body: { device: device("gamma") } });
        const { token } = (await started.json()) as { token: string };
        expect((await s.site.request("POST", "/updates/report", { token, body: { from: "1.0.0", to: "2.0.0", outcome: "failed" } })).status).toBe(200);
      }
      await s.site.composed.services.installReports.flush();
      const halted = (await s.site.composed.store.listReleaseControls()).find((c) => c.version === "2.0.0")?.halted ?? null;
      expect(halted).toBeNull();
      // They are still counted in the figures (stats), only not in the rule.
      expect(await s.site.composed.store.releaseHealth({ lane: "stable/win-x64", version: "2.0.0" }, s.site.clock() - 60_000)).toEqual({
        reports: 6,
        failed: 6,
      });
    } finally {
      s.close();
    }
  });
});
