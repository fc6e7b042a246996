import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { decodeJwt } from "jose";
import { offeredUnder, refuseOutsideWindow, termsKey } from "../../src/domain/releases/licence-terms";
import { KeyturnError } from "../../src/domain/errors";
import { announceSkip, freshSchema, PG_URL } from "../databases";
import { createLicense, device } from "../helpers";
import { feedFileEntry, releaseSite } from "../release-tree";
import { minisignKey, sparkleKey } from "../feeds/signers";

// design.md "Licence models": "releases whose signed `released` is after it are not offered on the
// update path, /releases, any feed or a mirror; the lane falls back to the newest allowed release
// (as for rollouts); a direct download of a newer installer is refused (updates_window_ended, 403).
// Claim `upd` (seconds), entitlement field `updatesUntil`." And: "A manifest may say
// `requiresFeature`; only tokens that carry it are offered it." "Licences that use none of it
// answer exactly as the spec says."

const SEP = Date.parse("2026-09-01T00:00:00Z");
const WINDOW = "2026-09-15T00:00:00Z";

describe("the rule", () => {
  const m = (released: string, requiresFeature?: string) => ({
    released: Date.parse(released),
    version: "1.1.0",
    ...(requiresFeature ? { requiresFeature } : {}),
  });
  test("a window excludes what was released after it; a required feature only what lacks it; staff are offered everything", () => {
    const windowed = { kind: "license" as const, updatesUntil: Date.parse(WINDOW) };
    expect(offeredUnder(windowed, m("2026-09-15T00:00:00Z"))).toBe(true);
    expect(offeredUnder(windowed, m("2026-09-15T00:00:01Z"))).toBe(false);
    expect(offeredUnder({ kind: "license" }, m("2030-01-01T00:00:00Z"))).toBe(true);
    expect(offeredUnder({ kind: "license" }, m("2026-01-01T00:00:00Z", "lts"))).toBe(false);
    expect(offeredUnder({ kind: "license", features: { lts: true } }, m("2026-01-01T00:00:00Z", "lts"))).toBe(true);
    expect(offeredUnder({ kind: "license", features: { toString: "x" } }, m("2026-01-01T00:00:00Z", "constructor"))).toBe(false);
    expect(offeredUnder({ kind: "staff", updatesUntil: 0 }, m("2026-01-01T00:00:00Z", "lts"))).toBe(true);
    expect(termsKey({ kind: "license" })).toBe("");
    expect(termsKey(windowed)).not.toBe(termsKey({ kind: "license", updatesUntil: Date.parse(WINDOW) + 1000 }));
  });
  test("the refusal names the window's end and the release's date", () => {
    let error: KeyturnError | undefined;
    try {
      refuseOutsideWindow({ kind: "license", updatesUntil: Date.parse(WINDOW) }, m("2026-10-01T00:00:00Z"));
    } catch (e) {
      error = e as KeyturnError;
    }
    expect(error?.code).toBe("updates_window_ended");
    expect(error?.message).toBe(
      "This licence's updates ended on 2026-09-15; version 1.1.0 was released on 2026-10-01. Renew the licence's updates to install it.",
    );
  });
});

const tauriKey = minisignKey();
const sparkle = sparkleKey();
const nupkg = () => {
  const bytes = randomBytes(5000);
  return { installerBytes: bytes, fields: { feeds: { velopack: { packageId: "Alpha", sha1: new Bun.CryptoHasher("sha1").update(bytes).digest("hex") } } } };
};
function signed(version: string, platform: string, installer: string, released: string, extra: Record<string, unknown> = {}) {
  const bytes = randomBytes(8000);
  const sig = tauriKey.sign(bytes, installer);
  return {
    version,
    platform,
    installer,
    released,
    installerBytes: bytes,
    files: { [`${installer}.sig`]: sig },
    fields: {
      feeds: {
        tauri: { signature: feedFileEntry(`${installer}.sig`, sig) },
        ...(platform.startsWith("mac-") ? { sparkle: { edSignature: sparkle.sign(bytes), bundleVersion: version.replaceAll(".", "") } } : {}),
      },
      ...extra,
    },
  };
}

function offering(label: string, settings: () => Promise<{ settings: Record<string, string>; drop: () => Promise<void> }>) {
  describe(`what each licence is offered (${label})`, () => {
    let s: Awaited<ReturnType<typeof releaseSite>>;
    let drop: () => Promise<void>;
    const tokens: Record<string, string> = {};
    const answers: Record<string, any> = {};
    const get = (who: string, path: string) => s.site.request("GET", path, { token: tokens[who] });
    const json = async (who: string, path: string) => (await get(who, path)).json() as Promise<any>;
    const manifest = (who: string, lane = "alpha/stable/win-x64") => json(who, `/updates/${lane}/${s.tree.v.manifestFile}`);

    beforeAll(async () => {
      const db = await settings();
      drop = db.drop;
      s = await releaseSite("alpha", { platforms: "win-x64,mac-arm64,linux-x64", ...db.settings });
      s.tree.add(signed("1.0.0", "win-x64", "alpha-1.0.0-win-x64.exe", "2026-09-01T00:00:00+00:00"));
      s.tree.add(signed("1.1.0", "win-x64", "alpha-1.1.0-win-x64.exe", "2026-10-01T00:00:00+00:00"));
      // A paid add-on's build: offered only to licences with the feature "lts".
      s.tree.add(signed("1.2.0", "win-x64", "alpha-1.2.0-win-x64.exe", "2026-11-01T00:00:00+00:00", { requiresFeature: "lts" }));
      s.tree.add(signed("2.0.0", "mac-arm64", "alpha-2.0.0-mac-arm64.zip", "2026-09-01T00:00:00+00:00"));
      // A rollout makes the lane's choice per installation (release-selection.ts's other path).
      s.tree.add(signed("2.1.0", "mac-arm64", "alpha-2.1.0-mac-arm64.zip", "2026-10-01T00:00:00+00:00", { rollout: { percent: 100 } }));
      s.tree.add({ version: "3.0.0", platform: "linux-x64", installer: "Alpha-3.0.0-full.nupkg", released: "2026-09-01T00:00:00+00:00", ...nupkg() });
      s.tree.add({ version: "3.1.0", platform: "linux-x64", installer: "Alpha-3.1.0-full.nupkg", released: "2026-10-01T00:00:00+00:00", ...nupkg() });
      await s.holder.rescan();
      await s.holder.verified();
      for (const [who, extra] of [
        ["plain", {}],
        ["windowed", { updatesUntil: WINDOW }],
        ["featured", { features: ["lts", "max-projects=50"] }],
        ["ended", { updatesUntil: "2026-01-01T00:00:00Z", features: ["lts"] }],
      ] as const) {
        const { key } = await createLicense(s.site, { channels: ["stable"], ...extra });
        const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
        answers[who] = await res.json();
        tokens[who] = answers[who].token;
      }
    });
    afterAll(async () => {
      await s.close();
      await drop();
    });

    test("a licence without a window or features: no new claim, no new field; the newest release not requiring a feature", async () => {
      const claims = decodeJwt(tokens.plain!);
      expect(Object.keys(claims).sort()).toEqual(["aud", "chn", "dev", "exp", "iat", "iss", "jti", "kind", "lic", "name", "nbf", "org", "plan", "sub"]);
      expect(Object.keys(answers.plain.entitlement).sort()).toEqual(
        ["channels", "expires", "id", "issued", "kind", "licenseExpires", "licensee", "organization", "plan", "planTitle", "seats"].sort(),
      );
      expect(Object.keys((await json("plain", "/entitlements/current")).entitlement)).not.toContain("updatesUntil");
      expect((await manifest("plain")).version).toBe("1.1.0");
      const listed = (await json("plain", "/releases")).releases.map((r: any) => r.version);
      expect(listed.sort()).toEqual(["1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0", "3.1.0"]);
      // The add-on's installer is not this licence's to download.
      expect((await get("plain", "/updates/alpha/stable/win-x64/alpha-1.2.0-win-x64.exe")).status).toBe(404);
    });

    test("a window: claim upd and field updatesUntil; the update path falls back to the newest release within it; a newer installer is 403 naming the date", async () => {
      expect(decodeJwt(tokens.windowed!).upd).toBe(Date.parse(WINDOW) / 1000);
      expect(answers.windowed.entitlement.updatesUntil).toBe("2026-09-15T00:00:00+00:00");
      expect((await json("windowed", "/entitlements/current")).entitlement.updatesUntil).toBe("2026-09-15T00:00:00+00:00");
      expect((await manifest("windowed")).version).toBe("1.0.0");
      // As a rollout falls back: the lane under a rollout offers the newest release within the window.
      expect((await manifest("windowed", "alpha/stable/mac-arm64")).version).toBe("2.0.0");
      expect((await manifest("plain", "alpha/stable/mac-arm64")).version).toBe("2.1.0");
      expect((await get("windowed", `/updates/alpha/stable/win-x64/${s.tree.v.manifestFile}?version=1.1.0`)).status).toBe(404);
      const refused = await get("windowed", "/updates/alpha/stable/win-x64/alpha-1.1.0-win-x64.exe");
      expect(refused.status).toBe(403);
      const body = (await refused.json()) as any;
      expect(body.error).toBe("updates_window_ended");
      expect(body.message).toContain("ended on 2026-09-15");
      expect(typeof body.ref).toBe("string");
      expect((await get("windowed", "/updates/alpha/stable/win-x64/alpha-1.0.0-win-x64.exe")).status).toBe(200);
      expect((await json("windowed", "/releases")).releases.map((r: any) => r.version).sort()).toEqual(["1.0.0", "2.0.0", "3.0.0"]);
    });

    test("every feed offers the newest release within the window: Tauri, Sparkle, Velopack, electron-updater's channel file and installer", async () => {
      const tauri = await json("windowed", "/feeds/tauri/alpha/stable/windows/x86_64/0.9.0");
      expect(tauri.version).toBe("1.0.0");
      expect((await get("windowed", "/feeds/tauri/alpha/stable/windows/x86_64/1.0.0")).status).toBe(204);
      expect((await json("plain", "/feeds/tauri/alpha/stable/windows/x86_64/1.0.0")).version).toBe("1.1.0");
      const appcast = await (await get("windowed", "/feeds/sparkle/alpha/stable/appcast.xml")).text();
      expect(appcast).toContain("alpha-2.0.0-mac-arm64.zip");
      expect(appcast).not.toContain("alpha-2.1.0-mac-arm64.zip");
      const velopack = await json("windowed", "/feeds/velopack/alpha/stable/releases.linux.json");
      expect(velopack.Assets.map((a: any) => a.Version)).toEqual(["3.0.0"]);
      const yml = await (await get("windowed", "/feeds/electron/alpha/stable/latest.yml")).text();
      expect(yml).toStartWith('version: "1.0.0"\n');
      const direct = await get("windowed", "/feeds/electron/alpha/stable/alpha-1.1.0-win-x64.exe");
      expect(direct.status).toBe(403);
      expect(((await direct.json()) as any).error).toBe("updates_window_ended");
    });

    test("features: claim ent and field features; a release requiring a feature is offered to the licence carrying it", async () => {
      expect(decodeJwt(tokens.featured!).ent).toEqual({ lts: true, "max-projects": "50" });
      expect(answers.featured.entitlement.features).toEqual({ lts: true, "max-projects": "50" });
      expect((await manifest("featured")).version).toBe("1.2.0");
      expect((await get("featured", "/updates/alpha/stable/win-x64/alpha-1.2.0-win-x64.exe")).status).toBe(200);
      expect((await json("featured", "/releases")).releases[0].version).toBe("1.2.0");
    });

    test("a window that ended before every release of a lane: no_release there, as for a lane with nothing released", async () => {
      const res = await get("ended", `/updates/alpha/stable/win-x64/${s.tree.v.manifestFile}`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error).toBe("no_release");
      expect((await json("ended", "/releases")).releases).toEqual([]);
      expect(Date.parse(answers.ended.entitlement.updatesUntil)).toBeLessThan(SEP);
    });
  });
}

offering("SQLite", async () => ({ settings: {}, drop: async () => {} }));
if (PG_URL)
  offering("PostgreSQL", async () => {
    const schema = await freshSchema();
    return { settings: { database: schema.url }, drop: () => schema.drop() };
  });
else announceSkip("test/releases/licence-terms.test.ts (PostgreSQL)", "KEYTURN_TEST_POSTGRES_URL");
