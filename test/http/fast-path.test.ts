import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { fastPath } from "../../src/http/fast-path";
import { BASE } from "../helpers";
import { releaseSite, type WrittenRelease } from "../release-tree";

// The update files are answered by a fast path inside app.handle (src/http/fast-path.ts). A URL
// with a percent-encoded letter is the same request to the route but is routed by Elysia: every
// answer must be the same either way (status, headers, body; the audit `ref` is new each time).

/** The same path with its channel's first letter percent-encoded: Elysia decodes it to the same parameters. */
const viaElysia = (path: string, channel: string) => path.replace(`/${channel}/`, `/%${channel.charCodeAt(0).toString(16)}${channel.slice(1)}/`);

async function snapshot(res: Response) {
  const headers = Object.fromEntries(
    [...res.headers.entries()].map(([k, v]) => [k, k === "ratelimit" ? v.replace(/;r=\d+/, ";r=N") : v] as const),
  );
  const bytes = Buffer.from(await res.arrayBuffer());
  let body: unknown = bytes.toString("base64");
  // Error bodies: the ref (and so the length) differs between two refusals.
  if (headers["content-type"]?.startsWith("application/json;charset")) headers["content-length"] &&= "N";
  if (headers["content-type"]?.startsWith("application/json;charset") && bytes.length > 0) {
    const parsed = JSON.parse(bytes.toString()) as Record<string, unknown>;
    if (typeof parsed.ref === "string" && parsed.ref.startsWith("ref_")) parsed.ref = "ref_…";
    body = parsed;
  }
  return { status: res.status, headers, body };
}

for (const variant of ["alpha", "gamma"] as VariantName[]) {
  describe(`update fast path (${variant}): the same answers as through Elysia`, () => {
    const v = VARIANTS[variant];
    let s: Awaited<ReturnType<typeof releaseSite>>;
    let r: WrittenRelease;
    let token: string;
    let stableOnly: string;

    beforeAll(async () => {
      s = await releaseSite(variant);
      r = s.tree.add({ version: "2.0.0" });
      s.tree.add({ version: "1.0.0", channel: "preview", released: "2026-09-01T00:00:00+00:00" });
      await s.holder.rescan();
      token = await s.token(["stable", "preview"]);
      stableOnly = await s.token(["stable"]);
    });
    afterAll(() => s.close());

    const lane = () => r.lane;
    const etag = () => `"${new Bun.CryptoHasher("sha256").update(r.manifestBytes).digest("hex")}"`;
    const cases: [string, () => { path: string; method?: string; headers?: Record<string, string>; tok?: string | null }][] = [
      ["manifest", () => ({ path: `${lane()}/${v.manifestFile}` })],
      ["manifest HEAD", () => ({ path: `${lane()}/${v.manifestFile}`, method: "HEAD" })],
      ["manifest 304", () => ({ path: `${lane()}/${v.manifestFile}`, headers: { "if-none-match": etag() } })],
      ["signature", () => ({ path: `${lane()}/${v.manifestFile}.sig` })],
      ["installer", () => ({ path: `${lane()}/${r.installer}` })],
      ["installer HEAD", () => ({ path: `${lane()}/${r.installer}`, method: "HEAD" })],
      ["installer range", () => ({ path: `${lane()}/${r.installer}`, headers: { range: "bytes=10-99" } })],
      ["installer range HEAD", () => ({ path: `${lane()}/${r.installer}`, method: "HEAD", headers: { range: "bytes=-7" } })],
      ["installer 416", () => ({ path: `${lane()}/${r.installer}`, headers: { range: "bytes=99999999-" } })],
      ["no token", () => ({ path: `${lane()}/${v.manifestFile}`, tok: null })],
      ["no token HEAD", () => ({ path: `${lane()}/${v.manifestFile}`, method: "HEAD", tok: null })],
      ["a token differing by one byte", () => ({ path: `${lane()}/${v.manifestFile}`, tok: token.slice(0, -2) + (token.at(-2) === "A" ? "B" : "A") + token.at(-1) })],
      ["channel not in the entitlement", () => ({ path: lane().replace("stable", "preview") + `/${v.manifestFile}`, tok: stableOnly })],
      ["unknown platform", () => ({ path: lane().replace("win-x64", "amiga") + `/${v.manifestFile}` })],
      ["no release on the lane", () => ({ path: lane().replace("win-x64", "linux-x64") + `/${v.manifestFile}` })],
      ["unknown file", () => ({ path: `${lane()}/notes.txt` })],
      ["installer of no release", () => ({ path: `${lane()}/${v.name}-9.9.9-win-x64.exe` })],
      ["with a query", () => ({ path: `${lane()}/${v.manifestFile}?x=1` })],
    ];

    for (const [name, make] of cases)
      test(name, async () => {
        const c = make();
        const channel = c.path.split("/").at(variant === "gamma" ? 0 : 1)!;
        const send = (path: string) => {
          const headers: Record<string, string> = { ...c.headers };
          const tok = c.tok === undefined ? token : c.tok;
          if (tok) headers.authorization = `Bearer ${tok}`;
          return s.site.app.handle(new Request(`${BASE}/updates/${path}`, { method: c.method ?? "GET", headers }));
        };
        const fast = await snapshot(await send(c.path));
        const framework = await snapshot(await send(viaElysia(c.path, channel)));
        expect(fast).toEqual(framework);
      });

    test("the fast path writes one log line per request, with the refusal's status and ref", async () => {
      const lines: Record<string, unknown>[] = [];
      // Earlier tests' requests through Elysia log after their answers (onAfterResponse): let them land first.
      const settle = async () => {
        for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
      };
      await settle();
      const log = s.site.composed.services.log;
      const info = log.info;
      log.info = (msg, fields) => void (msg === "request" && lines.push(fields!));
      try {
        await s.site.request("GET", `/updates/${lane()}/${v.manifestFile}`, { token });
        const refused = (await (await s.site.request("GET", `/updates/${lane()}/${v.manifestFile}`)).json()) as { ref: string };
        await settle();
        expect(lines).toEqual([
          expect.objectContaining({ method: "GET", path: `/api/v1/updates/${lane()}/${v.manifestFile}`, status: 200 }),
          expect.objectContaining({ status: 401, ref: refused.ref }),
        ]);
      } finally {
        log.info = info;
      }
    });
  });
}

describe("which requests take the fast path", () => {
  const front = { begin: () => ({}), track() {}, admit: async () => ({ limited: null, headers: null }), answered() {} };
  const seen: unknown[] = [];
  const fast = fastPath({
    apiPrefix: "/api/v1",
    variant: VARIANTS.alpha,
    front: front as never,
    refuse: async () => new Response(null, { status: 500 }),
    serveUpdate: async (_request, params) => (seen.push(params), new Response("x")),
    exact: [
      { method: "POST", path: "/licenses/activate", handler: async () => (seen.push("activate"), new Response("a")) },
      { method: "GET", path: "/entitlements/current", handler: async () => (seen.push("current"), new Response("c")) },
    ],
  });
  const takes = (url: string, method = "GET") => fast(new Request(url, { method })) !== null;

  test("GET and HEAD of a plain update URL, with the route's parameters", async () => {
    seen.length = 0;
    await fast(new Request("http://localhost/api/v1/updates/alpha/stable/win-x64/alpha-update.json"));
    await fast(new Request("http://localhost/api/v1/updates/alpha/stable/win-x64/alpha-update.json?x=%41", { method: "HEAD" }));
    expect(seen).toEqual([
      { product: "alpha", channel: "stable", platform: "win-x64", file: "alpha-update.json" },
      { product: "alpha", channel: "stable", platform: "win-x64", file: "alpha-update.json" },
    ]);
  });

  test("the exact routes, by method and path, with or without a query", async () => {
    seen.length = 0;
    await fast(new Request("http://localhost/api/v1/licenses/activate", { method: "POST" }));
    await fast(new Request("http://localhost/api/v1/entitlements/current?x=1"));
    expect(seen).toEqual(["activate", "current"]);
  });

  test("everything else is left to Elysia", () => {
    for (const url of [
      "http://localhost/api/v1/updates/alpha/stable/win-x64/",
      "http://localhost/api/v1/updates/alpha/stable/win-x64/a%2Fb",
      "http://localhost/api/v1/updates/alpha/stable/win-x64",
      "http://localhost/api/v1/updates/alpha/stable/win-x64/a/b",
      "http://localhost/api/v1/updates/alpha//win-x64/a",
      "http://localhost/api/v1/updatesx/alpha/stable/win-x64/a",
      "http://localhost/api/v1/entitlements/current/",
      "http://localhost/api/v1/entitlements/%63urrent",
      "http://localhost/api/v1/entitlements/refresh",
      "http://localhost/entitlements/current",
    ])
      expect({ url, fast: takes(url) }).toEqual({ url, fast: false });
    expect(takes("http://localhost/api/v1/updates/alpha/stable/win-x64/a", "POST")).toBe(false);
    expect(takes("http://localhost/api/v1/licenses/activate", "GET")).toBe(false);
    expect(takes("http://localhost/api/v1/entitlements/current", "HEAD")).toBe(false);
  });
});
