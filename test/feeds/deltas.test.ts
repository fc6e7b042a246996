import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { parseManifest } from "../../src/domain/releases/manifest";
import { BASE, BASE_URL } from "../helpers";
import { feedFileEntry, ReleaseTree, releaseSite, type WrittenRelease } from "../release-tree";
import { sparkleKey } from "./signers";

const sha1 = (b: Uint8Array | string) => new Bun.CryptoHasher("sha1").update(b).digest("hex");
const sha256 = (b: Uint8Array | string) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
const bytesOf = async (r: Response) => Buffer.from(await r.arrayBuffer());
const sparkle = sparkleKey();
const ED = `${"A".repeat(86)}==`;

/** A manifest's `feeds` alone, parsed as the scan parses it. */
function problem(feeds: unknown, installer = "Alpha-1.0.0-full.nupkg"): string | null {
  const m = {
    product: "alpha",
    channel: "stable",
    platform: "win-x64",
    version: "1.0.0",
    released: "2026-10-01T00:00:00+00:00",
    installer,
    size: 1,
    sha256: "0".repeat(64),
    feeds,
  };
  try {
    parseManifest(Buffer.from(JSON.stringify(m)), VARIANTS.alpha, { product: "alpha", channel: "stable", platform: "win-x64" });
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

describe("deltas declared in the manifest", () => {
  const delta = { file: "Alpha-1.0.0-delta.nupkg", size: 3, sha256: "1".repeat(64), sha1: "2".repeat(40) };
  const velopack = (deltas: unknown) => ({ velopack: { packageId: "Alpha", sha1: "3".repeat(40), deltas } });
  const sparkleDelta = { file: "a.delta", size: 3, sha256: "1".repeat(64), deltaFrom: "1247", edSignature: ED };
  test.each([
    [velopack([{ ...delta, sha1: undefined }]), "manifest feeds.velopack.deltas[0].sha1 must be 40 lower-case hex digits"],
    [
      velopack([{ ...delta, file: "Alpha-1.0.0-full.nupkg" }]),
      "manifest feeds.velopack.deltas[0].file must not be the installer, the manifest or its signature",
    ],
    [velopack([{ ...delta, file: "Alpha-1.0.0.zip" }]), "manifest feeds.velopack.deltas[0].file must be a -delta.nupkg"],
    [velopack([{ ...delta, file: "../Alpha-1.0.0-delta.nupkg" }]), "manifest feeds.velopack.deltas[0].file must be a bare file name"],
    [velopack([{ ...delta, size: 65 << 20 }]), "manifest feeds.velopack.deltas[0].size must be a whole number of bytes, at most 67108864"],
    [velopack([delta, { ...delta, file: "Alpha-0.9.0-delta.nupkg" }]), "manifest feeds.velopack.deltas must be a list of one delta file"],
    [velopack({}), "manifest feeds.velopack.deltas must be a list of one delta file"],
    [{ squirrel: { sha1: "3".repeat(40), deltas: [{ ...delta, extra: 1 }] } }, 'manifest feeds.squirrel.deltas[0] has an unknown field "extra"'],
    [
      { sparkle: { edSignature: ED, deltas: [{ ...sparkleDelta, deltaFrom: undefined }] } },
      "manifest feeds.sparkle.deltas[0].deltaFrom must be the CFBundleVersion",
    ],
    [
      { sparkle: { edSignature: ED, deltas: [{ ...sparkleDelta, edSignature: "x" }] } },
      "manifest feeds.sparkle.deltas[0].edSignature must be the base64 Ed25519 signature",
    ],
    [
      { sparkle: { edSignature: ED, deltas: [sparkleDelta, { ...sparkleDelta, file: "b.delta" }] } },
      "manifest feeds.sparkle.deltas has two deltas from one deltaFrom",
    ],
    [{ sparkle: { edSignature: ED, deltas: [sparkleDelta, { ...sparkleDelta, deltaFrom: "1" }] } }, "manifest feeds.sparkle.deltas names a file twice"],
  ])("%j is refused, naming the field", (feeds, message) => {
    expect(problem(feeds)).toStartWith(message);
  });

  test("good ones are kept as declared", () => {
    expect(problem(velopack([delta]))).toBeNull();
    expect(problem({ sparkle: { edSignature: ED, deltas: [sparkleDelta, { ...sparkleDelta, file: "b.delta", deltaFrom: "1246" }] } })).toBeNull();
    expect(problem({ squirrel: { sha1: "3".repeat(40), deltas: [delta] } })).toBeNull();
    expect(problem({ squirrel: { sha1: "3".repeat(40) } }, "Alpha-1.0.0.exe")).toBe(
      "manifest feeds.squirrel needs the installer to be the -full.nupkg Squirrel wrote",
    );
  });
});

describe("Velopack and Sparkle deltas, served and verified", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let token: string;
  const r: Record<string, WrittenRelease> = {};
  const velopackDelta = randomBytes(900);
  const sparkleDeltaBytes = randomBytes(700);
  const get = (path: string, t: string | null = token) => s.site.request("GET", path, { token: t ?? undefined });

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,linux-x64,mac-arm64" });
    const full = (version: string) => randomBytes(5000 + Number(version[0]));
    const oldFull = full("2");
    r.old = s.tree.add({
      version: "2.0.0",
      platform: "linux-x64",
      installer: "Alpha-2.0.0-full.nupkg",
      installerBytes: oldFull,
      released: "2026-09-01T00:00:00+00:00",
      fields: { feeds: { velopack: { packageId: "Alpha", sha1: sha1(oldFull) } } },
    });
    const newFull = full("3");
    r.new = s.tree.add({
      version: "3.0.0",
      platform: "linux-x64",
      installer: "Alpha-3.0.0-full.nupkg",
      installerBytes: newFull,
      files: { "Alpha-3.0.0-delta.nupkg": velopackDelta },
      fields: {
        feeds: {
          velopack: {
            packageId: "Alpha",
            sha1: sha1(newFull),
            deltas: [{ ...feedFileEntry("Alpha-3.0.0-delta.nupkg", velopackDelta), sha1: sha1(velopackDelta) }],
          },
        },
      },
    });
    const zip = randomBytes(6000);
    r.mac = s.tree.add({
      version: "2.0.0",
      platform: "mac-arm64",
      installer: "Alpha-2.0.0.zip",
      installerBytes: zip,
      files: { "Alpha-1.9.0-2.0.0.delta": sparkleDeltaBytes },
      fields: {
        feeds: {
          sparkle: {
            edSignature: sparkle.sign(zip),
            bundleVersion: "200",
            deltas: [{ ...feedFileEntry("Alpha-1.9.0-2.0.0.delta", sparkleDeltaBytes), deltaFrom: "190", edSignature: sparkle.sign(sparkleDeltaBytes) }],
          },
        },
      },
    });
    await s.holder.rescan();
    token = await s.token();
  });
  afterAll(() => s.close());

  test("Velopack: the feed lists the Delta asset with its bare FileName, SHA1 and SHA256; fetched relative to the feed, its bytes match them", async () => {
    const feed = "/feeds/velopack/alpha/stable/releases.linux.json";
    const body = (await (await get(feed)).json()) as { Assets: Record<string, string | number>[] };
    expect(body.Assets.map((a) => [a.Version, a.Type, a.FileName])).toEqual([
      ["3.0.0", "Full", "Alpha-3.0.0-full.nupkg"],
      ["3.0.0", "Delta", "Alpha-3.0.0-delta.nupkg"],
      ["2.0.0", "Full", "Alpha-2.0.0-full.nupkg"],
    ]);
    const asset = body.Assets[1] as { SHA1: string; SHA256: string; Size: number; FileName: string };
    expect([asset.SHA1, asset.SHA256, asset.Size]).toEqual([sha1(velopackDelta).toUpperCase(), sha256(velopackDelta).toUpperCase(), velopackDelta.length]);
    // The client resolves FileName against the feed's address (peers.md 4.1).
    const url = new URL(asset.FileName as string, `${BASE}${feed}`).href;
    const bytes = await bytesOf(await get(url.slice(BASE.length)));
    expect([sha1(bytes).toUpperCase(), sha256(bytes).toUpperCase(), bytes.length]).toEqual([asset.SHA1, asset.SHA256, asset.Size]);
    expect((await get(url.slice(BASE.length), null)).status).toBe(401);
    expect((await get("/feeds/velopack/alpha/stable/Alpha-9.0.0-delta.nupkg")).status).toBe(404);
  });

  test("Sparkle: the item carries <sparkle:deltas> with an enclosure from its deltaFrom; the delta downloads and verifies with the vendor's key", async () => {
    const xml = await (await get("/feeds/sparkle/alpha/stable/appcast.xml")).text();
    const deltas = /<sparkle:deltas>([\s\S]*?)<\/sparkle:deltas>/.exec(xml)?.[1];
    expect(deltas).toBeDefined();
    const enclosure = Object.fromEntries([...deltas!.matchAll(/([\w:]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    expect(enclosure).toEqual({
      url: `${BASE_URL}/api/v1/feeds/sparkle/alpha/stable/deltas/mac-arm64/Alpha-1.9.0-2.0.0.delta`,
      "sparkle:deltaFrom": "190",
      length: String(sparkleDeltaBytes.length),
      type: "application/octet-stream",
      "sparkle:edSignature": enclosure["sparkle:edSignature"]!,
    });
    const bytes = await bytesOf(await get(enclosure.url!.slice(`${BASE_URL}/api/v1`.length)));
    expect(sparkle.verify(bytes, enclosure["sparkle:edSignature"]!)).toBe(true);
    // As Sparkle reads it (SUAppcastElementDeltas "sparkle:deltas", each child <enclosure> with
    // SUAppcastAttributeDeltaFrom "sparkle:deltaFrom": Sparkle/SUConstants.m in
    // https://github.com/sparkle-project/Sparkle), through an independent XML parser (Python's):
    // the item's own enclosure is the full archive, the delta a child of <sparkle:deltas> in it.
    const script = `
import json, sys, xml.etree.ElementTree as ET
S = "{http://www.andymatuschak.org/xml-namespaces/sparkle}"
item = next(ET.fromstring(sys.stdin.read()).iter("item"))
deltas = [{"from": e.get(S + "deltaFrom"), "url": e.get("url"), "length": e.get("length")} for e in item.find(S + "deltas").findall("enclosure")]
print(json.dumps({"full": item.find("enclosure").get("url"), "deltas": deltas}))`;
    const run = Bun.spawnSync(["python3", "-c", script], { stdin: Buffer.from(xml) });
    expect(JSON.parse(run.stdout.toString())).toEqual({
      full: `${BASE_URL}/api/v1/updates/alpha/stable/mac-arm64/Alpha-2.0.0.zip`,
      deltas: [{ from: "190", url: enclosure.url, length: String(sparkleDeltaBytes.length) }],
    });
  });

  test("a delta changed after signing is never served (unavailable), and the scan then skips its folder naming it", async () => {
    const path = join(r.new!.dir, "Alpha-3.0.0-delta.nupkg");
    writeFileSync(path, randomBytes(900));
    const res = await get("/feeds/velopack/alpha/stable/Alpha-3.0.0-delta.nupkg");
    expect(res.status).toBe(503);
    await s.holder.rescan();
    expect(s.holder.skipped.get(`${r.new!.lane}/3.0.0`)).toBe("feed file Alpha-3.0.0-delta.nupkg does not match the manifest's sha256");
    writeFileSync(path, velopackDelta);
    await s.holder.rescan();
    expect((await get("/feeds/velopack/alpha/stable/Alpha-3.0.0-delta.nupkg")).status).toBe(200);
  });
});

describe("release sign and release check verify deltas like other feed files", () => {
  const ROOT = resolve(import.meta.dir, "../..");
  const run = async (args: string[]) => {
    const proc = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { stdout, stderr, code };
  };

  test("a delta whose SHA-1 is not the declared one: sign refuses naming it, check reports it, the good folder passes", async () => {
    const tree = new ReleaseTree("alpha");
    try {
      const full = randomBytes(3000);
      const d = randomBytes(300);
      const entryOf = (sha1Of: string) => ({
        feeds: { squirrel: { sha1: sha1(full), deltas: [{ ...feedFileEntry("Alpha-1.0.0-delta.nupkg", d), sha1: sha1Of }] } },
      });
      const good = tree.add({
        version: "1.0.0",
        installer: "Alpha-1.0.0-full.nupkg",
        installerBytes: full,
        files: { "Alpha-1.0.0-delta.nupkg": d },
        fields: entryOf(sha1(d)),
      });
      const bad = tree.add({
        version: "1.0.1",
        folder: "bad",
        installer: "Alpha-1.0.0-full.nupkg",
        installerBytes: full,
        files: { "Alpha-1.0.0-delta.nupkg": d },
        fields: entryOf("0".repeat(40)),
        sign: false,
      });
      const signed = await run(["release", "sign", "--key", tree.privateKeyFile, bad.manifestPath]);
      expect(signed.code).toBe(1);
      expect(signed.stderr).toContain("feed file Alpha-1.0.0-delta.nupkg does not match the manifest's sha1");
      expect((await run(["release", "sign", "--key", tree.privateKeyFile, good.manifestPath])).code).toBe(0);
      const checked = await run(["release", "check", "--releases", tree.root, "--keys", tree.keysDir, "--variant", "alpha"]);
      expect(checked.code).toBe(1);
      expect(checked.stdout).toContain("live     alpha/stable/win-x64/1.0.0");
      expect(checked.stdout).toContain("PROBLEM  alpha/stable/win-x64/bad:");
    } finally {
      tree.remove();
    }
  });
});
