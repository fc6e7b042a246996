import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createLicense, device } from "../helpers";
import { releaseSite } from "../release-tree";
import { velopackApp } from "./velopack-client";

/**
 * Velopack installs the newest full package its feed lists, whatever its architecture (velopack
 * src/lib-rust/src/manager.rs, check_for_updates), and its docs give each runtime id its own
 * channel (https://docs.velopack.io/packaging/channels). With two Linux architectures, Velopack's
 * own core (its npm binding) reads releases.linux-x64.json and releases.linux-arm64.json, each
 * with its own package; releases.linux.json, which would mix them, is refused.
 */
const sha1 = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex");

describe("Velopack channels per architecture", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let server: ReturnType<typeof Bun.serve>;
  let feedUrl: string;
  let token: string;
  // An installation on this Linux-only site (the helpers' devices are Windows machines).
  const linuxToken = async () => {
    const { key } = await createLicense(s.site, { seats: 5 });
    const res = await s.site.request("POST", "/licenses/activate", { body: { key, device: { ...device("alpha"), platform: "linux-x64" } } });
    return ((await res.json()) as { token: string }).token;
  };

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "linux-x64,linux-arm64" });
    // arm64's 2.1.0 is newer than x64's 2.0.0: a mixed feed would hand it to x64 machines.
    for (const [platform, version] of [
      ["linux-x64", "2.0.0"],
      ["linux-arm64", "2.1.0"],
    ] as const) {
      const bytes = randomBytes(20_000);
      s.tree.add({
        version,
        platform,
        installer: `Alpha-${version}-${platform}-full.nupkg`,
        installerBytes: bytes,
        fields: { feeds: { velopack: { packageId: "Alpha", sha1: sha1(bytes) } } },
      });
    }
    await s.holder.rescan();
    await s.holder.verified();
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => s.site.app.handle(request, "127.0.0.1") });
    token = await linuxToken();
    const { credential } = (await (await s.site.request("POST", "/feeds/credential", { token })).json()) as { credential: string };
    feedUrl = `http://127.0.0.1:${server.port}/api/v1/feeds/credential/${credential}/velopack/alpha/stable`;
  });
  afterAll(async () => {
    await server.stop(true);
    await s.close();
  });

  test("each architecture's channel offers its own newest package to Velopack's core", async () => {
    for (const [channel, version, file] of [
      ["linux-x64", "2.0.0", "Alpha-2.0.0-linux-x64-full.nupkg"],
      ["linux-arm64", "2.1.0", "Alpha-2.1.0-linux-arm64-full.nupkg"],
    ]) {
      const { manager } = velopackApp({ id: "Alpha", version: "1.0.0", channel: channel!, feedUrl });
      const update = await manager.checkForUpdatesAsync();
      expect([update?.TargetFullRelease.Version, update?.TargetFullRelease.FileName]).toEqual([version, file]);
    }
  });

  test("the system's own channel would mix them: refused, naming the channel to pack with, unless the C# client's rid or arch picks one", async () => {
    const { manager } = velopackApp({ id: "Alpha", version: "1.0.0", channel: "linux", feedUrl });
    let error: unknown;
    await manager.checkForUpdatesAsync().catch((e: unknown) => (error = e));
    expect(String(error)).toContain("404");
    const mixed = await s.site.request("GET", "/feeds/velopack/alpha/stable/releases.linux.json", { token });
    expect(mixed.status).toBe(404);
    expect(((await mixed.json()) as { message: string }).message).toBe(
      "The feed releases.linux.json would list the packages of linux-arm64, linux-x64 together, and Velopack installs the newest whatever its architecture: pack each with its own channel (vpk pack --channel linux-arm64), read from releases.linux-arm64.json.",
    );
    const versions = async (query: string) =>
      (
        (await (await s.site.request("GET", `/feeds/velopack/alpha/stable/releases.linux.json${query}`, { token })).json()) as { Assets: { Version: string }[] }
      ).Assets.map((a) => a.Version);
    expect(await versions("?rid=linux-arm64")).toEqual(["2.1.0"]);
    expect(await versions("?arch=x64")).toEqual(["2.0.0"]);
    // An architecture the site has no platform for: no update, not another architecture's package.
    expect(await versions("?arch=x86")).toEqual([]);
    // A channel of one platform answers it whatever the machine (an x64 build emulated on arm64).
    const x64 = await s.site.request("GET", "/feeds/velopack/alpha/stable/releases.linux-x64.json?arch=arm64&rid=linux-arm64", { token });
    expect(((await x64.json()) as { Assets: { Version: string }[] }).Assets.map((a) => a.Version)).toEqual(["2.0.0"]);
    expect((await s.site.request("GET", "/feeds/velopack/alpha/stable/releases.osx-arm64.json", { token })).status).toBe(404);
  });
});
