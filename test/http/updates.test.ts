import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { compactVerify, importSPKI } from "jose";
import { join } from "node:path";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { releaseSite, type WrittenRelease } from "../release-tree";

const sha = (b: Uint8Array) => `"${createHash("sha256").update(b).digest("hex")}"`;
const bytesOf = async (r: Response) => Buffer.from(await r.arrayBuffer());

describe.each(["alpha", "beta", "gamma"] as VariantName[])("updates, %s", (variant) => {
  const v = VARIANTS[variant];
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let token: string;
  let stableOnly: string;
  let old: WrittenRelease;
  let newest: WrittenRelease;
  let lane: string;
  const get = (path: string, headers: Record<string, string> = {}, method = "GET", tok: string | null = token) =>
    s.site.request(method, `/updates/${path}`, { token: tok ?? undefined, headers });

  beforeAll(async () => {
    s = await releaseSite(variant);
    old = s.tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
    newest = s.tree.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00", fields: { notes: "the newest" } });
    lane = newest.lane;
    await s.holder.rescan();
    token = await s.token(["stable", "preview"]);
    stableOnly = await s.token(["stable"]);
  });
  afterAll(() => s.close());

  test("the manifest: the newest live release's bytes exactly as on disk, strong ETag of those bytes, private no-cache", async () => {
    const res = await get(`${lane}/${v.manifestFile}`);
    expect(res.status).toBe(200);
    const body = await bytesOf(res);
    expect(body.equals(readFileSync(newest.manifestPath))).toBe(true);
    expect(res.headers.get("etag")).toBe(sha(body));
    expect(res.headers.get("cache-control")).toBe("private, no-cache");
    expect(res.headers.get("content-type")).toStartWith("application/json");
  });

  test("the manifest: If-None-Match → 304 without a body; another tag → 200", async () => {
    const etag = sha(newest.manifestBytes);
    for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, "*"]) {
      const res = await get(`${lane}/${v.manifestFile}`, { "if-none-match": inm });
      expect(res.status).toBe(304);
      expect(res.headers.get("etag")).toBe(etag);
      expect(res.headers.get("cache-control")).toBe("private, no-cache");
      expect((await bytesOf(res)).length).toBe(0);
    }
    expect((await get(`${lane}/${v.manifestFile}`, { "if-none-match": '"other"' })).status).toBe(200);
  });

  test("the manifest: a parameter an updater adds of its own (a cache buster) is ignored; version given twice is refused", async () => {
    const busted = await get(`${lane}/${v.manifestFile}?t=1732600000&nocache=1`);
    expect(busted.status).toBe(200);
    expect((await bytesOf(busted)).equals(readFileSync(newest.manifestPath))).toBe(true);
    const older = await get(`${lane}/${v.manifestFile}?version=1.0.0&t=1`);
    expect((await bytesOf(older)).equals(readFileSync(old.manifestPath))).toBe(true);
    const twice = await get(`${lane}/${v.manifestFile}?version=1.0.0&version=1.1.0`);
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { message: string }).message).toBe("The query parameter version is given more than once.");
  });

  test("the manifest: HEAD gives the headers and no body", async () => {
    const res = await get(`${lane}/${v.manifestFile}`, {}, "HEAD");
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe(sha(newest.manifestBytes));
    expect(res.headers.get("content-length")).toBe(String(newest.manifestBytes.length));
    expect((await bytesOf(res)).length).toBe(0);
  });

  test("the signature: the .sig bytes as on disk, own ETag and 304; a client verifies the served manifest with it (jose)", async () => {
    const res = await get(`${lane}/${v.manifestFile}.sig`);
    expect(res.status).toBe(200);
    const sig = await bytesOf(res);
    expect(sig.equals(readFileSync(`${newest.manifestPath}.sig`))).toBe(true);
    expect(res.headers.get("etag")).toBe(sha(sig));
    expect(res.headers.get("etag")).not.toBe(sha(newest.manifestBytes));
    expect(res.headers.get("cache-control")).toBe("private, no-cache");
    expect((await get(`${lane}/${v.manifestFile}.sig`, { "if-none-match": sha(sig) })).status).toBe(304);

    const manifest = await bytesOf(await get(`${lane}/${v.manifestFile}`));
    const [header, , signature] = sig.toString().split(".");
    const key = await importSPKI(readFileSync(join(s.tree.keysDir, `${s.tree.kid}.pub.pem`), "utf8"), "ES256");
    const { protectedHeader } = await compactVerify(`${header}.${manifest.toString("base64url")}.${signature}`, key, { algorithms: ["ES256"] });
    expect(protectedHeader).toEqual({ alg: "ES256", kid: s.tree.kid, typ: v.releaseTyp });
  });

  test("the installer: bytes equal the file on disk, ETag from the manifest's sha256, attachment, Accept-Ranges", async () => {
    const res = await get(`${lane}/${newest.installer}`);
    expect(res.status).toBe(200);
    const body = await bytesOf(res);
    expect(body.equals(readFileSync(newest.installerPath))).toBe(true);
    expect(res.headers.get("etag")).toBe(`"${JSON.parse(newest.manifestBytes.toString()).sha256}"`);
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${newest.installer}"`);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("content-length")).toBe(String(newest.installerBytes.length));
    expect(res.headers.get("cache-control")).toBe("private, no-cache");
  });

  test("the installer of an older live release of the lane is served too; If-None-Match → 304", async () => {
    const res = await get(`${lane}/${old.installer}`);
    expect(res.status).toBe(200);
    expect((await bytesOf(res)).equals(Buffer.from(old.installerBytes))).toBe(true);
    expect((await get(`${lane}/${old.installer}`, { "if-none-match": sha(old.installerBytes) })).status).toBe(304);
  });

  test("ranges: a-b, a-, -n → 206 with Content-Range and exactly those bytes", async () => {
    const all = Buffer.from(newest.installerBytes);
    const len = all.length;
    for (const [range, start, end] of [
      ["bytes=0-99", 0, 99],
      ["bytes=5000-", 5000, len - 1],
      ["bytes=-123", len - 123, len - 1],
      ["bytes=9990-20000", 9990, len - 1],
    ] as const) {
      const res = await get(`${lane}/${newest.installer}`, { range });
      expect(res.status).toBe(206);
      expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/${len}`);
      expect(res.headers.get("content-length")).toBe(String(end - start + 1));
      expect(res.headers.get("etag")).toBe(sha(all));
      expect(res.headers.get("content-disposition")).toStartWith("attachment");
      expect((await bytesOf(res)).equals(all.subarray(start, end + 1))).toBe(true);
    }
  });

  test("ranges: past the end → 416 with Content-Range: bytes */len; several ranges or malformed → 200 whole", async () => {
    const len = newest.installerBytes.length;
    for (const range of [`bytes=${len}-`, `bytes=${len + 10}-${len + 20}`, "bytes=-0"]) {
      const res = await get(`${lane}/${newest.installer}`, { range });
      expect(res.status).toBe(416);
      expect(res.headers.get("content-range")).toBe(`bytes */${len}`);
      const body = (await res.json()) as { error: string; ref: string };
      expect(body.error).toBe("range_not_satisfiable");
      // a refusal like any other: its ref names an audit line
      expect(body.ref).toMatch(/^ref_/);
    }
    for (const range of ["bytes=0-9,20-29", "bytes=20-10", "lines=1-2", "bytes=x"]) {
      const res = await get(`${lane}/${newest.installer}`, { range });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-range")).toBeNull();
      expect((await bytesOf(res)).length).toBe(len);
    }
  });

  test("If-Range: our ETag → the range; another tag, a weak tag or a date → the whole file", async () => {
    const etag = sha(newest.installerBytes);
    const hit = await get(`${lane}/${newest.installer}`, { range: "bytes=10-19", "if-range": etag });
    expect(hit.status).toBe(206);
    expect((await bytesOf(hit)).length).toBe(10);
    for (const ifRange of ['"stale"', `W/${etag}`, "Sun, 22 Nov 2026 00:00:00 GMT"]) {
      const res = await get(`${lane}/${newest.installer}`, { range: "bytes=10-19", "if-range": ifRange });
      expect(res.status).toBe(200);
      expect((await bytesOf(res)).equals(Buffer.from(newest.installerBytes))).toBe(true);
    }
  });

  test("an interrupted download resumed with Range + If-Range concatenates to the original", async () => {
    const full = Buffer.from(newest.installerBytes);
    const first = await get(`${lane}/${newest.installer}`);
    const etag = first.headers.get("etag")!;
    const reader = first.body!.getReader();
    const got: Uint8Array[] = [];
    let have = 0;
    while (have < full.length / 2) {
      const { value, done } = await reader.read();
      if (done) break;
      got.push(value);
      have += value.length;
    }
    await reader.cancel();
    const part = Buffer.concat(got).subarray(0, Math.floor(full.length / 2));
    const rest = await get(`${lane}/${newest.installer}`, { range: `bytes=${part.length}-`, "if-range": etag });
    expect(rest.status).toBe(206);
    expect(Buffer.concat([part, await bytesOf(rest)]).equals(full)).toBe(true);
  });

  test("HEAD on the installer: headers of the answer (also for a range), no body", async () => {
    const res = await get(`${lane}/${newest.installer}`, {}, "HEAD");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(newest.installerBytes.length));
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect((await bytesOf(res)).length).toBe(0);
    const ranged = await get(`${lane}/${newest.installer}`, { range: "bytes=0-9" }, "HEAD");
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe(`bytes 0-9/${newest.installerBytes.length}`);
    expect((await bytesOf(ranged)).length).toBe(0);
  });

  test("order: token first, then path parameters (404 not_found), then channel (403), then no_release (404)", async () => {
    const err = async (res: Response) => [res.status, ((await res.json()) as { error: string }).error];
    const otherProduct = v.products[1];
    const prefix = (channel: string, platform = "win-x64", product = v.products[0]) => [...(product ? [product] : []), channel, platform].join("/");
    expect(await err(await get(`${prefix("stable")}/${v.manifestFile}`, {}, "GET", null))).toEqual([401, "entitlement_invalid"]);
    expect(await err(await get(`${prefix("nightly")}/${v.manifestFile}`, {}, "GET", null))).toEqual([401, "entitlement_invalid"]);
    expect(await err(await get(`${prefix("stable")}/${v.manifestFile}`, {}, "GET", "not.a.token"))).toEqual([401, "entitlement_invalid"]);
    expect(await err(await get(`${prefix("nightly")}/${v.manifestFile}`))).toEqual([404, "not_found"]);
    expect(await err(await get(`${prefix("stable", "mac-arm64")}/${v.manifestFile}`))).toEqual([404, "not_found"]);
    if (v.products.length > 0) expect(await err(await get(`${prefix("stable", "win-x64", "nope")}/${v.manifestFile}`))).toEqual([404, "not_found"]);
    expect(await err(await get(`${prefix("nightly")}/${v.manifestFile}`, {}, "GET", stableOnly))).toEqual([404, "not_found"]);
    expect(await err(await get(`${prefix("preview")}/${v.manifestFile}`, {}, "GET", stableOnly))).toEqual([403, "channel_not_allowed"]);
    expect(await err(await get(`${prefix("preview")}/${v.manifestFile}.sig`, {}, "GET", stableOnly))).toEqual([403, "channel_not_allowed"]);
    expect(await err(await get(`${prefix("preview")}/${v.manifestFile}`))).toEqual([404, "no_release"]);
    expect(await err(await get(`${prefix("preview")}/some-installer.exe`))).toEqual([404, "no_release"]);
    if (otherProduct) expect(await err(await get(`${prefix("stable", "win-x64", otherProduct)}/${v.manifestFile}`))).toEqual([404, "no_release"]);
    expect(await err(await get(`${lane}/not-an-installer.exe`))).toEqual([404, "not_found"]);
    const preview = await get(`${prefix("preview")}/${v.manifestFile}`, {}, "GET", stableOnly);
    expect(((await preview.json()) as { ref?: string }).ref).toStartWith("ref_");
  });
});

describe("broken newer releases are not served while an older good one is", () => {
  test.each(["tampered manifest", "truncated installer", "missing signature"])("%s", async (breakage) => {
    const s = await releaseSite("alpha");
    try {
      const good = s.tree.add({ version: "1.0.0", released: "2026-09-01T00:00:00+00:00" });
      const bad = s.tree.add({ version: "1.1.0", released: "2026-10-01T00:00:00+00:00" });
      if (breakage === "tampered manifest") writeFileSync(bad.manifestPath, bad.manifestBytes.toString().replace('"1.1.0"', '"1.1.1"'));
      if (breakage === "truncated installer") truncateSync(bad.installerPath, 4000);
      if (breakage === "missing signature") rmSync(`${bad.manifestPath}.sig`);
      await s.holder.rescan();
      const token = await s.token();
      const manifest = await s.site.request("GET", `/updates/${good.lane}/alpha-update.json`, { token });
      expect(Buffer.from(await manifest.arrayBuffer()).equals(good.manifestBytes)).toBe(true);
      const sig = await s.site.request("GET", `/updates/${good.lane}/alpha-update.json.sig`, { token });
      expect(Buffer.from(await sig.arrayBuffer()).equals(readFileSync(`${good.manifestPath}.sig`))).toBe(true);
      expect((await s.site.request("GET", `/updates/${good.lane}/${bad.installer}`, { token })).status).toBe(404);
      expect((await s.site.request("GET", `/updates/${good.lane}/${good.installer}`, { token })).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  test("an installer changed on disk after the scan is refused (503), not sent with the wrong size", async () => {
    const s = await releaseSite("gamma");
    try {
      const r = s.tree.add({ version: "1.0.0" });
      await s.holder.rescan();
      const token = await s.token();
      truncateSync(r.installerPath, 10);
      const res = await s.site.request("GET", `/updates/${r.lane}/${r.installer}`, { token });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: string }).error).toBe("unavailable");
    } finally {
      await s.close();
    }
  });
});
