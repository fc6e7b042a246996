import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles } from "../../src/domain/keys";
import { BASE_URL, createLicense, device, tempDir, testSite } from "../helpers";
import { feedFileEntry, releaseSite, type WrittenRelease } from "../release-tree";
import { minisignKey, sparkleKey } from "./signers";

const tauriKey = minisignKey();
const sparkle = sparkleKey();
const bytesOf = async (r: Response) => Buffer.from(await r.arrayBuffer());
const nupkg = randomBytes(7000);
const sha512 = (b: Uint8Array) => new Bun.CryptoHasher("sha512").update(b).digest("base64");

/** A release with a Tauri `.sig` made by the vendor's key, and optionally Sparkle's edSignature. */
function signed(version: string, platform: string, installer: string, extra: Record<string, unknown> = {}) {
  const bytes = randomBytes(20_000);
  const sig = tauriKey.sign(bytes, installer);
  return {
    version,
    platform,
    installer,
    installerBytes: bytes,
    files: { [`${installer}.sig`]: sig },
    fields: {
      notes: `Notes of ${version}`,
      feeds: {
        tauri: { signature: feedFileEntry(`${installer}.sig`, sig) },
        ...(platform.startsWith("mac-") ? { sparkle: { edSignature: sparkle.sign(bytes), bundleVersion: version.replaceAll(".", "") } } : {}),
      },
      ...extra,
    },
  };
}

describe("feeds on a site with macOS and Linux platforms", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let token: string;
  let stableOnly: string;
  const r: Record<string, WrittenRelease> = {};
  const get = (path: string, o: { token?: string | null; headers?: Record<string, string> } = {}) =>
    s.site.request("GET", path, { token: o.token === null ? undefined : (o.token ?? token), headers: o.headers });

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,mac-arm64,linux-x64", channels: "stable,preview" });
    r.win = s.tree.add({ ...signed("1.0.0", "win-x64", "alpha-1.0.0-win-x64.exe"), released: "2026-10-01T00:00:00+00:00" });
    // Rolled out to nobody yet: no feed offers it.
    r.winStaged = s.tree.add({ ...signed("1.2.0", "win-x64", "alpha-1.2.0-win-x64.exe", { rollout: { percent: 0 } }), released: "2026-10-05T00:00:00+00:00" });
    r.macOld = s.tree.add({ ...signed("1.9.0", "mac-arm64", "alpha-1.9.0-mac-arm64.zip"), released: "2026-09-01T00:00:00+00:00" });
    r.mac = s.tree.add({ ...signed("2.0.0", "mac-arm64", "alpha-2.0.0-mac-arm64.zip"), released: "2026-10-01T00:00:00+00:00" });
    r.preview = s.tree.add({
      version: "2.1.0-beta.1",
      channel: "preview",
      platform: "mac-arm64",
      installer: "alpha-2.1.0-beta.1-mac-arm64.zip",
      released: "2026-10-02T00:00:00+00:00",
    });
    r.velopack = s.tree.add({
      version: "3.0.0",
      platform: "linux-x64",
      installer: "Alpha-3.0.0-full.nupkg",
      released: "2026-10-01T00:00:00+00:00",
      installerBytes: nupkg,
      fields: { notes: "Velopack notes", feeds: { velopack: { packageId: "Alpha", sha1: new Bun.CryptoHasher("sha1").update(nupkg).digest("hex") } } },
    });
    await s.holder.rescan();
    token = await s.token(["stable", "preview"]);
    stableOnly = await s.token(["stable"]);
  });
  afterAll(() => s.close());

  describe("Tauri v2 (peers.md 2.2)", () => {
    test("newer than current_version: version, url, signature (the stored .sig byte for byte), notes, pub_date; the download verifies with the vendor's key", async () => {
      const res = await get("/feeds/tauri/alpha/stable/windows/x86_64/0.9.0");
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("application/json");
      const body = (await res.json()) as Record<string, string>;
      expect(Object.keys(body).sort()).toEqual(["notes", "pub_date", "signature", "url", "version"]);
      expect(body.version).toBe("1.0.0");
      expect(body.url).toBe(`${BASE_URL}/api/v1/updates/alpha/stable/win-x64/alpha-1.0.0-win-x64.exe`);
      expect(body.signature).toBe(await Bun.file(join(r.win!.dir, "alpha-1.0.0-win-x64.exe.sig")).text());
      expect(body.notes).toBe("Notes of 1.0.0");
      expect(body.pub_date).toBe("2026-10-01T00:00:00+00:00");
      const download = await get(body.url!.slice(`${BASE_URL}/api/v1`.length));
      expect(download.status).toBe(200);
      expect(tauriKey.verify(await bytesOf(download), body.signature!)).toBe(true);
    });

    test("204 when current_version is the offered release or newer (the staged 1.2.0 is not offered); darwin/aarch64 is mac-arm64", async () => {
      for (const current of ["1.0.0", "v1.0.0", "1.2.0", "9.0.0"]) {
        const res = await get(`/feeds/tauri/alpha/stable/windows/x86_64/${current}`);
        expect([current, res.status, (await res.text()).length]).toEqual([current, 204, 0]);
      }
      const mac = (await (await get("/feeds/tauri/alpha/stable/darwin/aarch64/1.0.0")).json()) as { version: string; url: string };
      expect(mac.version).toBe("2.0.0");
      expect(mac.url).toEndWith("/updates/alpha/stable/mac-arm64/alpha-2.0.0-mac-arm64.zip");
    });

    test("refusals: an unconfigured platform 404, a bad version 400, a channel the licence lacks 403, no token 401", async () => {
      const error = async (res: Response) => [res.status, ((await res.json()) as { error: string }).error];
      expect(await error(await get("/feeds/tauri/alpha/stable/linux/aarch64/1.0.0"))).toEqual([404, "not_found"]);
      expect(await error(await get("/feeds/tauri/alpha/stable/windows/x86_64/not%20a%20version"))).toEqual([400, "invalid_request"]);
      expect(await error(await get("/feeds/tauri/alpha/preview/darwin/aarch64/1.0.0", { token: stableOnly }))).toEqual([403, "channel_not_allowed"]);
      expect(await error(await get("/feeds/tauri/alpha/stable/windows/x86_64/1.0.0", { token: null }))).toEqual([401, "entitlement_invalid"]);
    });
  });

  describe("Sparkle (peers.md 3.1)", () => {
    test("the appcast: one item per release the installation may take, newest first, enclosure on keyturn's origin with the vendor's edSignature", async () => {
      const res = await get("/feeds/sparkle/alpha/stable/appcast.xml");
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("application/rss+xml");
      const xml = await res.text();
      expect(xml).toStartWith(
        '<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle">\n<channel>',
      );
      const items = [...xml.matchAll(/<item>([\s\S]*?)<\/item>/g)].map((m) => m[1]!);
      expect(items.length).toBe(2);
      const field = (item: string, tag: string) => new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(item)?.[1];
      const enclosure = (item: string) => Object.fromEntries([...item.matchAll(/([\w:]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      expect(items.map((i) => field(i, "sparkle:shortVersionString"))).toEqual(["2.0.0", "1.9.0"]);
      expect(items.map((i) => field(i, "sparkle:version"))).toEqual(["200", "190"]);
      expect(field(items[0]!, "title")).toBe("Version 2.0.0");
      expect(field(items[0]!, "pubDate")).toBe("Thu, 01 Oct 2026 00:00:00 +0000");
      expect(field(items[0]!, "description")).toBe("Notes of 2.0.0");
      const e = enclosure(items[0]!);
      expect(e).toEqual({
        url: `${BASE_URL}/api/v1/updates/alpha/stable/mac-arm64/alpha-2.0.0-mac-arm64.zip`,
        length: String(r.mac!.installerBytes.length),
        type: "application/octet-stream",
        "sparkle:edSignature": e["sparkle:edSignature"]!,
      });
      const download = await bytesOf(await get(e.url!.slice(`${BASE_URL}/api/v1`.length)));
      expect(sparkle.verify(download, e["sparkle:edSignature"]!)).toBe(true);
      expect(sparkle.verify(r.macOld!.installerBytes, enclosure(items[1]!)["sparkle:edSignature"]!)).toBe(true);
    });

    test("a channel the licence lacks: channel_not_allowed", async () => {
      expect((await get("/feeds/sparkle/alpha/preview/appcast.xml", { token: stableOnly })).status).toBe(403);
    });
  });

  describe("Velopack (peers.md 4.1)", () => {
    test("releases.linux.json: the full package with FileName on keyturn's origin and SHA256; a system without packages answers an empty list", async () => {
      const body = (await (await get("/feeds/velopack/alpha/stable/releases.linux.json")).json()) as { Assets: Record<string, unknown>[] };
      expect(body.Assets).toEqual([
        {
          PackageId: "Alpha",
          Version: "3.0.0",
          Type: "Full",
          FileName: "Alpha-3.0.0-full.nupkg",
          SHA1: new Bun.CryptoHasher("sha1").update(nupkg).digest("hex").toUpperCase(),
          SHA256: new Bun.CryptoHasher("sha256").update(r.velopack!.installerBytes).digest("hex").toUpperCase(),
          Size: r.velopack!.installerBytes.length,
          NotesMarkdown: "Velopack notes",
        },
      ]);
      expect(((await (await get("/feeds/velopack/alpha/stable/releases.osx.json")).json()) as { Assets: unknown[] }).Assets).toEqual([]);
      expect((await get("/feeds/velopack/alpha/stable/releases.mac.json")).status).toBe(404);
    });
  });

  describe("electron-updater's channel files per platform and channel (peers.md 1.1)", () => {
    const yaml = async (path: string, o: { token?: string } = {}) => {
      const res = await get(path, o);
      expect(res.status).toBe(200);
      return res.text();
    };
    test("latest-mac.yml names the mac zip with its SHA-512; latest-linux.yml the Linux package; preview offers the newest of preview and stable", async () => {
      const mac = await yaml("/feeds/electron/alpha/stable/latest-mac.yml");
      expect(mac).toBe(
        [
          'version: "2.0.0"',
          "files:",
          '  - url: "alpha-2.0.0-mac-arm64.zip"',
          `    sha512: "${sha512(r.mac!.installerBytes)}"`,
          `    size: ${r.mac!.installerBytes.length}`,
          'path: "alpha-2.0.0-mac-arm64.zip"',
          `sha512: "${sha512(r.mac!.installerBytes)}"`,
          'releaseNotes: "Notes of 2.0.0"',
          'releaseDate: "2026-10-01T00:00:00.000Z"',
          "",
        ].join("\n"),
      );
      expect(await yaml("/feeds/electron/alpha/stable/latest-linux.yml")).toContain('version: "3.0.0"');
      expect(await yaml("/feeds/electron/alpha/preview/latest-mac.yml")).toContain('version: "2.1.0-beta.1"');
      expect(await yaml("/feeds/electron/alpha/preview/preview-mac.yml")).toContain('version: "2.1.0-beta.1"');
      // A licence without preview: its stable feed never offers the preview release.
      expect(await yaml("/feeds/electron/alpha/stable/latest-mac.yml", { token: stableOnly })).toContain('version: "2.0.0"');
      expect((await get("/feeds/electron/alpha/stable/latest-linux-arm64.yml")).status).toBe(404);
      // The staged 1.2.0 is not offered, nor is its installer served.
      expect(await yaml("/feeds/electron/alpha/stable/latest.yml")).toContain('version: "1.0.0"');
      expect((await get("/feeds/electron/alpha/stable/alpha-1.2.0-win-x64.exe")).status).toBe(404);
    });
  });

  describe("multi-range requests on the electron feed's installer", () => {
    const installer = () => r.mac!.installerBytes;
    const path = "/feeds/electron/alpha/stable/alpha-2.0.0-mac-arm64.zip";
    const ranged = (range: string) => get(path, { headers: { range } });

    /** The parts of a multipart/byteranges body, as RFC 9110 14.6 frames them. */
    function parts(body: Buffer, boundary: string) {
      const text = body.toString("latin1");
      expect(text.startsWith(`--${boundary}\r\n`)).toBe(true);
      expect(text.endsWith(`\r\n--${boundary}--\r\n`)).toBe(true);
      return text
        .slice(0, -`\r\n--${boundary}--\r\n`.length)
        .split(new RegExp(`(?:^|\\r\\n)--${boundary}\\r\\n`))
        .slice(1)
        .map((p) => {
          const [head, ...data] = p.split("\r\n\r\n");
          return { head: head!, data: Buffer.from(data.join("\r\n\r\n"), "latin1") };
        });
    }

    test("several ranges, out of order: 206 multipart, one part per range in the order asked, exactly those bytes", async () => {
      const res = await ranged("bytes=100-199, 0-9,19990-");
      expect(res.status).toBe(206);
      const boundary = /^multipart\/byteranges; boundary=(\w+)$/.exec(res.headers.get("content-type")!)![1]!;
      const body = await bytesOf(res);
      expect(res.headers.get("content-length")).toBe(String(body.length));
      const got = parts(body, boundary);
      const size = installer().length;
      expect(got.map((p) => p.head)).toEqual([
        `Content-Type: application/octet-stream\r\nContent-Range: bytes 100-199/${size}`,
        `Content-Type: application/octet-stream\r\nContent-Range: bytes 0-9/${size}`,
        `Content-Type: application/octet-stream\r\nContent-Range: bytes 19990-${size - 1}/${size}`,
      ]);
      expect(got.map((p) => p.data)).toEqual([100, 0, 19990].map((a, i) => Buffer.from(installer().subarray(a, [200, 10, undefined][i]))));
    });

    test("1000 ranges are answered in 1000 parts; 1001, overlapping or backwards ranges get the whole file; a range past the end 416", async () => {
      const thousand = Array.from({ length: 1000 }, (_, i) => `${i * 20}-${i * 20 + 9}`).join(", ");
      const many = await ranged(`bytes=${thousand}`);
      expect(many.status).toBe(206);
      const boundary = /boundary=(\w+)/.exec(many.headers.get("content-type")!)![1]!;
      const got = parts(await bytesOf(many), boundary);
      expect(got.length).toBe(1000);
      expect(got[999]!.data).toEqual(Buffer.from(installer().subarray(19980, 19990)));
      for (const range of [`bytes=${thousand}, 19995-19999`, "bytes=0-99, 50-149", "bytes=0-9, 30-20", "bytes=10-20, 20-30"]) {
        const res = await ranged(range);
        expect([range.slice(0, 40), res.status]).toEqual([range.slice(0, 40), 200]);
        expect((await bytesOf(res)).equals(installer())).toBe(true);
      }
      const beyond = await ranged("bytes=0-9, 99999-100000");
      expect(beyond.status).toBe(416);
      expect(beyond.headers.get("content-range")).toBe(`bytes */${installer().length}`);
    });

    test("the spec's update path keeps its answer to several ranges: the whole file", async () => {
      const res = await get("/updates/alpha/stable/mac-arm64/alpha-2.0.0-mac-arm64.zip", { headers: { range: "bytes=0-9, 20-29" } });
      expect(res.status).toBe(200);
      expect((await bytesOf(res)).equals(installer())).toBe(true);
    });
  });

  test("the admin API's release overview says which feeds offer each release", async () => {
    const { secret } = await createAdminToken(s.site.composed.services.admin, CLI_CALLER, { name: "read", scopes: ["releases:read"] });
    const body = (await (await s.site.request("GET", "/admin/releases", { token: secret })).json()) as {
      lanes: { lane: string; releases: { version: string; feeds: string[] }[] }[];
    };
    const feedsOf = Object.fromEntries(body.lanes.flatMap((l) => l.releases.map((x) => [`${l.lane} ${x.version}`, x.feeds])));
    expect(feedsOf).toEqual({
      "alpha/stable/win-x64 1.2.0": ["electron", "tauri"],
      "alpha/stable/win-x64 1.0.0": ["electron", "tauri"],
      "alpha/stable/mac-arm64 2.0.0": ["electron", "tauri", "sparkle", "squirrel-mac"],
      "alpha/stable/mac-arm64 1.9.0": ["electron", "tauri", "sparkle", "squirrel-mac"],
      "alpha/preview/mac-arm64 2.1.0-beta.1": ["electron", "squirrel-mac"],
      "alpha/stable/linux-x64 3.0.0": ["electron", "velopack"],
    });
  });

  describe("controls and changed files", () => {
    test("a withdrawn release leaves every feed at once (admin API)", async () => {
      const { secret } = await createAdminToken(s.site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["releases:write"] });
      const control = (op: string) => s.site.request("POST", `/admin/releases/${encodeURIComponent("alpha/stable/mac-arm64")}/2.0.0/${op}`, { token: secret });
      expect((await control("withdraw")).status).toBe(200);
      try {
        expect(((await (await get("/feeds/tauri/alpha/stable/darwin/aarch64/1.0.0")).json()) as { version: string }).version).toBe("1.9.0");
        expect(await (await get("/feeds/electron/alpha/stable/latest-mac.yml")).text()).toContain('version: "1.9.0"');
        expect(await (await get("/feeds/sparkle/alpha/stable/appcast.xml")).text()).not.toContain("2.0.0");
        expect((await get("/feeds/electron/alpha/stable/alpha-2.0.0-mac-arm64.zip")).status).toBe(404);
      } finally {
        expect((await control("restore")).status).toBe(200);
      }
    });

    test("a feed file whose bytes changed after signing is never served; the scan then skips its folder with the reason", async () => {
      const sigPath = join(r.win!.dir, "alpha-1.0.0-win-x64.exe.sig");
      const original = await Bun.file(sigPath).text();
      writeFileSync(
        sigPath,
        original.replace(/^./, (c) => (c === "d" ? "e" : "d")),
      );
      const res = await get("/feeds/tauri/alpha/stable/windows/x86_64/0.9.0");
      expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([503, "unavailable"]);
      await s.holder.rescan();
      expect(s.holder.skipped.get(r.win!.lane + "/1.0.0")).toBe("feed file alpha-1.0.0-win-x64.exe.sig does not match the manifest's sha256");
      writeFileSync(sigPath, original);
      await s.holder.rescan();
      expect((await get("/feeds/tauri/alpha/stable/windows/x86_64/0.9.0")).status).toBe(200);
    });
  });
});

describe("a site with the spec's platforms only", () => {
  test("Sparkle answers 404: it has no macOS platform", async () => {
    const s = await releaseSite("gamma");
    try {
      const res = await s.site.request("GET", "/feeds/sparkle/stable/appcast.xml", { token: await s.token() });
      expect([res.status, ((await res.json()) as { message: string }).message]).toEqual([404, "This site has no macOS platform (--platforms)."]);
    } finally {
      await s.close();
    }
  });
});

describe("releases.example: alpha-cli 1.1.0 carries feed files", () => {
  test("its electron channel file has the SHA-512 app-builder printed for it, its Tauri answer the stored .sig, its blockmap the folder's bytes", async () => {
    const root = join(import.meta.dir, "../../releases.example");
    const keysParent = tempDir("keyturn-example-keys-");
    const keys = join(keysParent, "keys");
    cpSync(join(root, "keys"), keys, { recursive: true });
    generateKeyFiles(keys, VARIANTS.alpha.defaultLicenseKid);
    const site = await testSite("alpha", { withKey: false, settings: { keys, releases: join(root, "alpha") } });
    try {
      await site.composed.services.releases.verified();
      const { key } = await createLicense(site, { channels: ["stable"] });
      const { token } = (await (
        await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha", { product: "alpha-cli" }) } })
      ).json()) as { token: string };
      const folder = join(root, "alpha/alpha-cli/stable/win-x64/1.1.0");
      const yml = await (await site.request("GET", "/feeds/electron/alpha-cli/stable/latest.yml", { token })).text();
      expect(yml).toContain('sha512: "d3KLtMlzZMgxe13dKWYfU1M+tlTDK3p10TxTCy1zWEa5f1DQgbCrWpp8seV2ZaZQ+Agl5ynahJg0Jocrgvpdsw=="');
      const tauri = (await (await site.request("GET", "/feeds/tauri/alpha-cli/stable/windows/x86_64/1.0.0", { token })).json()) as { signature: string };
      expect(tauri.signature).toBe(readFileSync(join(folder, "alpha-cli-1.1.0-win-x64.exe.sig"), "utf8"));
      const map = await bytesOf(await site.request("GET", "/feeds/electron/alpha-cli/stable/alpha-cli-1.1.0-win-x64.exe.blockmap", { token }));
      expect(map.equals(readFileSync(join(folder, "alpha-cli-1.1.0-win-x64.exe.blockmap")))).toBe(true);
    } finally {
      site.composed.services.releases.close();
      await site.close();
      rmSync(keysParent, { recursive: true, force: true });
    }
  });
});
