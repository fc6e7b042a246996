import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createLicense, device } from "../helpers";
import { releaseSite } from "../release-tree";
import { parseReleaseFile, squirrelMacCheck } from "./squirrel-clients";

/**
 * design.md "Licence models": a licence's maintenance window decides what every feed offers. The
 * Squirrel feeds ask through the same caller as the others (src/http/endpoints/feed-lane.ts), so a
 * licence whose updates ended before 1.1.0 is offered 1.0.0 there too, as the update path does.
 */
const WINDOW = "2026-09-15T00:00:00Z";
const sha1 = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex");

describe("Squirrel feeds and a licence's maintenance window", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  const tokens: Record<string, string> = {};
  const get = (who: string, path: string) => s.site.request("GET", path, { token: tokens[who] });

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,mac-arm64" });
    for (const [version, released] of [
      ["1.0.0", "2026-09-01T00:00:00+00:00"],
      ["1.1.0", "2026-10-01T00:00:00+00:00"],
    ] as const) {
      const full = randomBytes(5000);
      s.tree.add({
        version,
        platform: "win-x64",
        installer: `Alpha-${version}-full.nupkg`,
        installerBytes: full,
        released,
        fields: { feeds: { squirrel: { sha1: sha1(full) } } },
      });
      s.tree.add({ version, platform: "mac-arm64", installer: `Alpha-${version}-darwin-arm64.zip`, released });
    }
    await s.holder.rescan();
    await s.holder.verified();
    for (const [who, extra] of [
      ["plain", {}],
      ["windowed", { updatesUntil: WINDOW }],
    ] as const) {
      const { key } = await createLicense(s.site, { channels: ["stable"], ...extra });
      const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
      tokens[who] = ((await res.json()) as { token: string }).token;
    }
  });
  afterAll(() => s.close());

  test("Squirrel.Windows: RELEASES lists only what the window covers; a newer package is refused, naming the window", async () => {
    const listed = async (who: string) =>
      parseReleaseFile(await (await get(who, "/feeds/squirrel/alpha/stable/win-x64/RELEASES")).text()).map((e) => e.filename);
    expect(await listed("plain")).toEqual(["Alpha-1.0.0-full.nupkg", "Alpha-1.1.0-full.nupkg"]);
    expect(await listed("windowed")).toEqual(["Alpha-1.0.0-full.nupkg"]);
    expect((await get("windowed", "/feeds/squirrel/alpha/stable/win-x64/Alpha-1.0.0-full.nupkg")).status).toBe(200);
    const newer = await get("windowed", "/feeds/squirrel/alpha/stable/win-x64/Alpha-1.1.0-full.nupkg");
    expect(newer.status).toBe(403);
    expect(((await newer.json()) as { error: string }).error).toBe("updates_window_ended");
  });

  test("Squirrel.Mac: the check answers the newest release within the window", async () => {
    const check = async (who: string, current: string) => squirrelMacCheck(await get(who, `/feeds/squirrel-mac/alpha/stable/mac-arm64/${current}`));
    expect((await check("plain", "0.9.0"))?.updateURL.pathname).toEndWith("/zip/Alpha-1.1.0-darwin-arm64.zip");
    expect((await check("windowed", "0.9.0"))?.updateURL.pathname).toEndWith("/zip/Alpha-1.0.0-darwin-arm64.zip");
    expect(await check("windowed", "1.0.0")).toBeNull();
  });
});
