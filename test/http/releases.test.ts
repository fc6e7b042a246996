import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { releaseSite } from "../release-tree";

type Record_ = {
  product?: string;
  channel: string;
  platform: string;
  version: string;
  released: string;
  installer: string;
  size: number;
  sha256: string;
  manifest: string;
};

describe.each(["alpha", "beta", "gamma"] as VariantName[])("GET /releases, %s", (variant) => {
  const v = VARIANTS[variant];
  const products = v.products.length > 0 ? v.products : [null];
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let both: string;
  let stableOnly: string;
  const list = async (token: string, query = "") => {
    const res = await s.site.request("GET", `/releases${query}`, { token });
    return { status: res.status, body: (await res.json()) as { ok: boolean; releases: Record_[]; error?: string } };
  };

  beforeAll(async () => {
    s = await releaseSite(variant);
    products.forEach((product, i) => {
      s.tree.add({ product, version: "1.0.0", released: `2026-09-0${i + 1}T00:00:00+00:00` });
      s.tree.add({ product, version: "1.1.0", released: `2026-10-0${i + 1}T12:00:00+02:00` });
      s.tree.add({ product, channel: "preview", version: "1.2.0-beta.1", released: `2026-11-0${i + 1}T00:00:00+00:00` });
    });
    // Same time: the higher version comes first.
    s.tree.add({ product: products[0], version: "1.1.1", released: "2026-10-01T10:00:00+00:00" });
    await s.holder.rescan();
    both = await s.token(["stable", "preview"]);
    stableOnly = await s.token(["stable"]);
  });
  afterAll(() => s.close());

  test("every live release on the entitlement's channels, newest first, with design.md's record", async () => {
    const { status, body } = await list(both);
    expect(status).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.releases).toHaveLength(3 * products.length + 1);
    const times = body.releases.map((r) => Date.parse(r.released));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const first = body.releases.find((r) => r.version === "1.1.1")!;
    const lane = [...(products[0] ? [products[0]] : []), "stable", "win-x64"].join("/");
    expect(first).toEqual({
      ...(products[0] ? { product: products[0] } : {}),
      channel: "stable",
      platform: "win-x64",
      version: "1.1.1",
      released: "2026-10-01T10:00:00+00:00",
      installer: `${products[0] ?? variant}-1.1.1-win-x64.exe`,
      size: 10000,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      manifest: `/api/v1/updates/${lane}/${v.manifestFile}?version=1.1.1`,
    });
    const idx = (version: string) => body.releases.findIndex((r) => r.version === version && r.product === first.product);
    expect(idx("1.1.0")).toBe(idx("1.1.1") + 1);
    expect(body.releases.find((r) => r.version === "1.1.0")!.released).toMatch(/T10:00:00\+00:00$/);
    const manifest = await s.site.request("GET", first.manifest.replace("/api/v1", ""), { token: both });
    expect(manifest.status).toBe(200);
  });

  test("each release has its own manifest address: an older one's is its manifest and signature, not the lane's newest", async () => {
    const { body } = await list(both);
    const older = body.releases.find((r) => r.version === "1.1.0" && r.product === (products[0] ?? undefined))!;
    const newest = body.releases.find((r) => r.version === "1.1.1")!;
    expect(older.manifest).not.toBe(newest.manifest);
    const get = (path: string) => s.site.request("GET", path.replace("/api/v1", ""), { token: both });
    const manifest = await get(older.manifest);
    expect(manifest.status).toBe(200);
    expect(((await manifest.json()) as { version: string }).version).toBe("1.1.0");
    const sig = await get(older.manifest.replace("?version=", ".sig?version="));
    expect(sig.status).toBe(200);
    expect(sig.headers.get("content-type")).toContain("application/jose");
    // The lane's plain address is the release served now; a version the lane does not have is not found.
    expect(((await (await get(older.manifest.split("?")[0]!)).json()) as { version: string }).version).toBe("1.1.1");
    expect((await get(older.manifest.replace("1.1.0", "9.9.9"))).status).toBe(404);
  });

  test("a stable-only entitlement sees no preview release", async () => {
    const { body } = await list(stableOnly);
    expect(body.releases.length).toBe(2 * products.length + 1);
    expect(body.releases.every((r) => r.channel === "stable")).toBe(true);
  });

  test("an answer kept for its index goes out whole every time, as JSON in UTF-8", async () => {
    const send = () => s.site.request("GET", "/releases", { token: both });
    const [first, second] = [await send(), await send()];
    for (const res of [first, second]) expect(res.headers.get("content-type")).toBe("application/json;charset=utf-8");
    const [a, b] = [await first.text(), await second.text()];
    expect(a.length).toBeGreaterThan(100);
    expect(b).toBe(a);
    expect(JSON.parse(b).releases).toHaveLength(3 * products.length + 1);
  });

  test("the answer follows a re-scan (answers are kept per index, and a re-scan makes a new one)", async () => {
    const before = (await list(both)).body.releases.length;
    expect((await list(stableOnly)).body.releases.length).toBe(2 * products.length + 1);
    s.tree.add({ product: products[0], version: "1.3.0", released: "2026-11-20T00:00:00+00:00" });
    await s.holder.rescan();
    const after = (await list(both)).body.releases;
    expect(after).toHaveLength(before + 1);
    expect(after[0]!.version).toBe("1.3.0");
    expect((await list(stableOnly)).body.releases.length).toBe(2 * products.length + 2);
  });

  test("bearer required", async () => {
    const res = await s.site.request("GET", "/releases");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  if (v.products.length > 0) {
    test("optional product query filters; an unknown product is 400 invalid_request", async () => {
      const { body } = await list(both, `?product=${v.products[1]}`);
      expect(body.releases.length).toBe(3);
      expect(body.releases.every((r) => r.product === v.products[1])).toBe(true);
      const bad = await list(both, "?product=nope");
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe("invalid_request");
    });
  } else {
    test("no product query: a product parameter is 400 invalid_request", async () => {
      const bad = await list(both, "?product=gamma");
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe("invalid_request");
      expect((await list(both)).body.releases.every((r) => !("product" in r))).toBe(true);
    });
  }
});

describe("GET /releases, a long list", () => {
  // collect-soon.ts: the first answer of a long list made a manifest for each of its releases.
  test("the first answer of a listing of 1,500 releases or more (over 256 KB) is followed by one whole collection; its repeat and a short list by none", async () => {
    const s = await releaseSite("gamma");
    try {
      for (let n = 0; n < 1_700; n++)
        s.tree.add({
          version: `1.${Math.floor(n / 100)}.${n % 100}`,
          released: new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString(),
          installerBytes: Buffer.from([n % 256]),
        });
      s.tree.add({ channel: "preview", version: "2.0.0-beta.1" });
      await s.holder.rescan();
      const [stable, preview] = [await s.token(["stable"]), await s.token(["preview"])];
      await Bun.sleep(20); // the collection the scan asked for has run
      const gc = spyOn(Bun, "gc");
      try {
        const answer = async (token: string) => {
          const res = await s.site.request("GET", "/releases", { token });
          expect(res.status).toBe(200);
          const length = (await res.text()).length;
          await Bun.sleep(20);
          return length;
        };
        expect(await answer(preview)).toBeLessThan(1_000);
        expect(gc).not.toHaveBeenCalled();
        expect(await answer(stable)).toBeGreaterThan(256 * 1024);
        expect(gc).toHaveBeenCalledTimes(1);
        expect(gc).toHaveBeenCalledWith(true);
        await answer(stable);
        expect(gc).toHaveBeenCalledTimes(1);
      } finally {
        gc.mockRestore();
      }
    } finally {
      await s.close();
    }
  }, 60_000);
});
