import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { BASE, BASE_URL } from "../helpers";
import { feedFileEntry, releaseSite, type WrittenRelease } from "../release-tree";
import { downloadUrl, packagesToApply, parseReleaseFile, releasesUrl, squirrelMacCheck, versionOfName } from "./squirrel-clients";

const sha1 = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex");
const bytesOf = async (r: Response) => Buffer.from(await r.arrayBuffer());

/** A Squirrel.Windows release as Electron Forge's Squirrel maker writes it: the -full.nupkg, and its -delta.nupkg from the release before. */
function squirrelRelease(version: string, o: { delta?: boolean; fields?: Record<string, unknown> } = {}) {
  const full = randomBytes(20_000);
  const delta = randomBytes(600);
  const deltaName = `Alpha-${version}-delta.nupkg`;
  return {
    version,
    platform: "win-x64",
    installer: `Alpha-${version}-full.nupkg`,
    installerBytes: full,
    released: `2026-10-0${Number(version.split(".")[1]) + 1}T00:00:00+00:00`,
    files: o.delta ? { [deltaName]: delta } : {},
    fields: {
      notes: `Notes of ${version}`,
      feeds: { squirrel: { sha1: sha1(full), ...(o.delta ? { deltas: [{ ...feedFileEntry(deltaName, delta), sha1: sha1(delta) }] } : {}) } },
      ...o.fields,
    },
  };
}

describe("Squirrel feeds (Electron's built-in autoUpdater)", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let token: string;
  let stableOnly: string;
  let mac: WrittenRelease | undefined;
  /** Squirrel.Windows' update URL: the feed below a feed credential (Update.exe sends no header), as POST /feeds/credential gives it. */
  let feedUrl: string;
  /** Fetches an absolute URL a client built (on the site's origin), with the bearer or, as Squirrel does, without one. */
  const fetchAs = (url: string, t: string | null = token) =>
    s.site.request("GET", url.startsWith(BASE_URL) ? url.slice(`${BASE_URL}/api/v1`.length) : url.slice(BASE.length), { token: t ?? undefined });

  beforeAll(async () => {
    s = await releaseSite("alpha", { platforms: "win-x64,mac-arm64" });
    s.tree.add(squirrelRelease("1.0.0"));
    s.tree.add(squirrelRelease("1.1.0"));
    s.tree.add(squirrelRelease("1.2.0", { delta: true }));
    s.tree.add(squirrelRelease("1.3.0", { delta: true, fields: { rollout: { percent: 0 } } }));
    for (const [version, released] of [
      ["1.9.0", "2026-09-01T10:00:00+00:00"],
      ["2.0.0", "2026-10-01T10:30:00.250+02:00"],
    ] as const)
      mac = s.tree.add({ version, platform: "mac-arm64", installer: `Alpha-${version}-darwin-arm64.zip`, released, fields: { notes: `Mac notes ${version}` } });
    await s.holder.rescan();
    token = await s.token(["stable", "preview"]);
    stableOnly = await s.token(["stable"]);
    const credential = (await (await s.site.request("POST", "/feeds/credential", { token })).json()) as { url: string };
    feedUrl = `${credential.url}/squirrel/alpha/stable/win-x64`;
  });
  afterAll(() => s.close());

  describe("Squirrel.Windows RELEASES, read by its ReleaseEntry rules", () => {
    test("a first install: every full package the installation may take, parsed as Squirrel parses them; the client takes the newest, whose bytes have the SHA-1 and size of its line", async () => {
      const res = await fetchAs(releasesUrl(feedUrl, null), null);
      expect(res.status).toBe(200);
      const text = await res.text();
      const entries = parseReleaseFile(text);
      expect(entries.map((e) => [e.filename, e.isDelta, e.baseUrl, e.query])).toEqual([
        ["Alpha-1.0.0-full.nupkg", false, null, null],
        ["Alpha-1.1.0-full.nupkg", false, null, null],
        ["Alpha-1.2.0-full.nupkg", false, null, null],
      ]);
      const [take] = packagesToApply(entries, null);
      expect(take!.filename).toBe("Alpha-1.2.0-full.nupkg");
      const download = await fetchAs(downloadUrl(feedUrl, take!), null);
      expect(download.status).toBe(200);
      const bytes = await bytesOf(download);
      expect([sha1(bytes), bytes.length]).toEqual([take!.sha1.toLowerCase(), take!.filesize]);
      expect(versionOfName(take!.filename)).toBe("1.2.0");
    });

    test("an update from 1.1.0 (Squirrel sends ?localVersion=): the delta is listed before its full package, the client applies it, and it downloads with its SHA-1", async () => {
      const entries = parseReleaseFile(await (await fetchAs(releasesUrl(feedUrl, { id: "Alpha", version: "1.1.0" }), null)).text());
      expect(entries.map((e) => e.filename)).toEqual(["Alpha-1.0.0-full.nupkg", "Alpha-1.1.0-full.nupkg", "Alpha-1.2.0-delta.nupkg", "Alpha-1.2.0-full.nupkg"]);
      const apply = packagesToApply(entries, "1.1.0");
      expect(apply.map((e) => e.filename)).toEqual(["Alpha-1.2.0-delta.nupkg"]);
      const bytes = await bytesOf(await fetchAs(downloadUrl(feedUrl, apply[0]!), null));
      expect([sha1(bytes), bytes.length]).toEqual([apply[0]!.sha1.toLowerCase(), apply[0]!.filesize]);
    });

    test("from 1.0.0, 1.1.0 has no delta: no delta is listed (the client would apply a broken chain), so it takes the full package", async () => {
      const entries = parseReleaseFile(await (await fetchAs(releasesUrl(feedUrl, { id: "Alpha", version: "1.0.0" }), null)).text());
      expect(entries.some((e) => e.isDelta)).toBe(false);
      expect(packagesToApply(entries, "1.0.0").map((e) => e.filename)).toEqual(["Alpha-1.2.0-full.nupkg"]);
      expect(packagesToApply(entries, "1.2.0")).toEqual([]);
    });

    test("the staged 1.3.0 (0 %) is neither listed nor downloadable; no bearer 401, a channel the licence lacks 403, another file 404", async () => {
      const text = await (await fetchAs(releasesUrl(feedUrl, { id: "Alpha", version: "1.2.0" }), null)).text();
      expect(text).not.toContain("1.3.0");
      expect((await fetchAs(`${feedUrl}/Alpha-1.3.0-full.nupkg`, null)).status).toBe(404);
      expect((await fetchAs(`${feedUrl}/Alpha-1.3.0-delta.nupkg`, null)).status).toBe(404);
      // The same feed with the bearer; without either, 401; a credential altered, 401.
      expect((await fetchAs(`${BASE}/feeds/squirrel/alpha/stable/win-x64/RELEASES`)).status).toBe(200);
      expect((await fetchAs(`${BASE}/feeds/squirrel/alpha/stable/win-x64/RELEASES`, null)).status).toBe(401);
      expect((await fetchAs(`${feedUrl.replace("/credential/", "/credential/x")}/RELEASES`, null)).status).toBe(401);
      expect((await fetchAs(`${BASE}/feeds/squirrel/alpha/preview/win-x64/RELEASES`, stableOnly)).status).toBe(403);
      expect((await fetchAs(`${feedUrl}/alpha-update.json`, null)).status).toBe(404);
      expect((await fetchAs(`${BASE}/feeds/squirrel/alpha/stable/mac-arm64/RELEASES`)).status).toBe(404);
    });
  });

  describe("Squirrel.Mac, read as SQRLUpdater and SQRLUpdate read it", () => {
    const check = (current: string, channel = "stable") => fetchAs(`${BASE}/feeds/squirrel-mac/alpha/${channel}/mac-arm64/${current}`);

    test("newer than the running version: url (the zip, with a feed credential: Squirrel.Mac downloads it without headers), name, notes and a pub_date its date formatter parses", async () => {
      const res = await check("1.9.0");
      expect(res.headers.get("content-type")).toStartWith("application/json");
      const update = (await squirrelMacCheck(res))!;
      expect(update.updateURL.href).toStartWith(`${BASE_URL}/api/v1/feeds/credential/`);
      expect(update.updateURL.href).toEndWith("/squirrel-mac/alpha/stable/mac-arm64/zip/Alpha-2.0.0-darwin-arm64.zip");
      expect(update.releaseName).toBe("2.0.0");
      expect(update.releaseNotes).toBe("Mac notes 2.0.0");
      expect(update.releaseDate?.toISOString()).toBe("2026-10-01T08:30:00.000Z");
      const zip = await fetchAs(update.updateURL.href, null);
      expect(zip.status).toBe(200);
      expect((await bytesOf(zip)).equals(Buffer.from(mac!.installerBytes))).toBe(true);
      // Checked through a credential URL itself, the answer's url carries that credential.
      const credentialCheck = feedUrl.replace("/squirrel/alpha/stable/win-x64", "/squirrel-mac/alpha/stable/mac-arm64/1.9.0");
      const again = (await squirrelMacCheck(await fetchAs(credentialCheck, null)))!;
      expect(again.updateURL.href).toBe(
        `${feedUrl.replace("/squirrel/alpha/stable/win-x64", "")}/squirrel-mac/alpha/stable/mac-arm64/zip/Alpha-2.0.0-darwin-arm64.zip`,
      );
      // The zip of a release the installation may not take (none newer here) is 404; without a credential or bearer 401.
      expect((await fetchAs(`${BASE}/feeds/squirrel-mac/alpha/stable/mac-arm64/zip/Alpha-2.0.0-darwin-arm64.zip`, null)).status).toBe(401);
      expect((await fetchAs(`${BASE}/feeds/squirrel-mac/alpha/stable/mac-arm64/zip/Alpha-3.0.0-darwin-arm64.zip`)).status).toBe(404);
    });

    test("204 (no update) when the running version is the newest or newer, and on a lane with nothing for it; a bad version 400", async () => {
      for (const current of ["2.0.0", "v2.0.0", "3.1.0"]) expect([current, (await check(current)).status]).toEqual([current, 204]);
      // The preview feed offers stable's release too, to a licence that holds stable; to one of preview alone, nothing.
      expect((await squirrelMacCheck(await check("1.0.0", "preview")))?.releaseName).toBe("2.0.0");
      const previewOnly = await s.token(["preview"]);
      expect(await squirrelMacCheck(await fetchAs(`${BASE}/feeds/squirrel-mac/alpha/preview/mac-arm64/1.0.0`, previewOnly))).toBeNull();
      expect((await check("not%20a%20version")).status).toBe(400);
    });
  });
});

describe("Squirrel.Windows deltas only as an unbroken chain from the installation's version", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let token: string;
  const listedFrom = async (local: string) =>
    parseReleaseFile(
      await (await s.site.request("GET", `/feeds/squirrel/alpha/stable/win-x64/RELEASES?id=Alpha&localVersion=${local}&arch=amd64`, { token })).text(),
    );

  beforeAll(async () => {
    s = await releaseSite("alpha");
    s.tree.add(squirrelRelease("1.0.0"));
    s.tree.add(squirrelRelease("1.1.0", { delta: true }));
    s.tree.add(squirrelRelease("1.2.0", { delta: true }));
    s.tree.add(squirrelRelease("1.3.0", { delta: true }));
    await s.holder.rescan();
    token = await s.token(["stable"]);
  });
  afterAll(() => s.close());

  test("every release after the installation's with its delta: the chain; 1.2.0 withdrawn (1.3.0's delta patches it): full packages only", async () => {
    const chained = await listedFrom("1.1.0");
    expect(packagesToApply(chained, "1.1.0").map((e) => e.filename)).toEqual(["Alpha-1.2.0-delta.nupkg", "Alpha-1.3.0-delta.nupkg"]);
    const { secret } = await createAdminToken(s.site.composed.services.admin, CLI_CALLER, { name: "ops", scopes: ["releases:write"] });
    const control = (op: string) => s.site.request("POST", `/admin/releases/${encodeURIComponent("alpha/stable/win-x64")}/1.2.0/${op}`, { token: secret });
    expect((await control("withdraw")).status).toBe(200);
    const broken = await listedFrom("1.1.0");
    expect(broken.some((e) => e.isDelta)).toBe(false);
    expect(packagesToApply(broken, "1.1.0").map((e) => e.filename)).toEqual(["Alpha-1.3.0-full.nupkg"]);
    // A version the feed does not list (a build of the vendor's own): full packages only.
    expect(packagesToApply(await listedFrom("1.2.5"), "1.2.5").map((e) => e.filename)).toEqual(["Alpha-1.3.0-full.nupkg"]);
  });
});
