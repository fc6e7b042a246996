import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { BASE, createLicense, device } from "../helpers";
import { releaseSite, type WrittenRelease } from "../release-tree";

// A URL with a percent-encoded letter in a parameter is the same request to the update endpoint:
// every answer must be the same either way (status, headers, body; the audit `ref` is new each time).

/** The same path with its channel's first letter percent-encoded: the dispatcher decodes it to the same parameters. */
const encoded = (path: string, channel: string) => path.replace(`/${channel}/`, `/%${channel.charCodeAt(0).toString(16)}${channel.slice(1)}/`);

async function snapshot(res: Response) {
  const headers = Object.fromEntries([...res.headers.entries()].map(([k, v]) => [k, k === "ratelimit" ? v.replace(/;r=\d+/, ";r=N") : v] as const));
  const bytes = Buffer.from(await res.arrayBuffer());
  let body: unknown = bytes.toString("base64");
  // Error bodies: the ref (and so the length) differs between two refusals.
  if (headers["content-type"]?.startsWith("application/json;charset")) headers["content-length"] &&= "N";
  if (headers["content-type"]?.startsWith("application/json;charset") && bytes.length > 0) {
    const parsed = JSON.parse(bytes.toString()) as Record<string, unknown>;
    if (typeof parsed.ref === "string" && parsed.ref.startsWith("ref_")) parsed.ref = "ref_…";
    // Repeated not_found probes from one address get one audit line a minute (src/http/refusal.ts).
    if (parsed.error === "not_found") delete parsed.ref;
    body = parsed;
  }
  return { status: res.status, headers, body };
}

for (const variant of ["alpha", "gamma"] as VariantName[]) {
  describe(`update path (${variant}): the same answers for a percent-encoded parameter`, () => {
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
      [
        "a token differing by one byte",
        () => ({ path: `${lane()}/${v.manifestFile}`, tok: token.slice(0, -2) + (token.at(-2) === "A" ? "B" : "A") + token.at(-1) }),
      ],
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
        const plain = await snapshot(await send(c.path));
        const decoded = await snapshot(await send(encoded(c.path, channel)));
        expect(plain).toEqual(decoded);
      });

    test("the dispatcher writes one log line per request, with the refusal's status and ref", async () => {
      const lines: Record<string, unknown>[] = [];
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

describe("the dispatcher derives routing, HEAD and 405 from the route table", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  beforeAll(async () => {
    s = await releaseSite("alpha");
  });
  afterAll(() => s.close());
  const send = (path: string, method = "GET") => s.site.app.handle(new Request(`http://localhost${path}`, { method }));

  test("every declared endpoint is routed under its method; GET endpoints also answer HEAD", async () => {
    const app = s.site.app;
    await app.allAreas();
    expect(app.routes.length).toBe(app.endpoints.length + app.endpoints.filter((e) => e.method === "GET").length);
    for (const e of app.endpoints) {
      const path = `/api/v1${e.path.replace(/\{[^}]+\}/g, "x")}`;
      const res = await send(path, e.method);
      expect({ path, status: res.status }).not.toEqual({ path, status: 405 });
      if (e.method === "GET") expect((await send(path, "HEAD")).status).toBe(res.status);
    }
  });

  test("a method the path does not answer is 405 with Allow listing the declared methods", async () => {
    const res = await send("/api/v1/health", "POST");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    expect((await send("/api/v1/licenses/activate", "DELETE")).headers.get("allow")).toBe("POST");
  });

  test("paths that are not exactly a route are 404, never another route", async () => {
    for (const path of [
      "/api/v1/updates/alpha/stable/win-x64/",
      "/api/v1/updates/alpha/stable/win-x64",
      "/api/v1/updates/alpha/stable/win-x64/a/b",
      "/api/v1/updates/alpha//win-x64/a",
      "/api/v1/updatesx/alpha/stable/win-x64/a",
      "/api/v1/entitlements/current/",
      "/api/v1/entitlements/%63urrent",
      "/entitlements/current",
      "/api/v1/health/",
    ])
      expect({ path, status: (await send(path)).status }).toEqual({ path, status: 404 });
  });
});

describe("answers that carry a token are never stored by a cache on the way (issue 13)", () => {
  test("activate and refresh answer Cache-Control: no-store; a manifest stays private, no-cache", async () => {
    const s = await releaseSite("alpha");
    try {
      const r = s.tree.add({ version: "1.0.0" });
      await s.holder.rescan();
      const { key } = await createLicense(s.site, { seats: 5 });
      const dev = device("alpha");
      const activated = await s.site.request("POST", "/licenses/activate", { body: { key, device: dev } });
      expect(activated.status).toBe(200);
      expect(activated.headers.get("cache-control")).toBe("no-store");
      const { token } = (await activated.json()) as { token: string };
      const refreshed = await s.site.request("POST", "/entitlements/refresh", { token, body: { device: dev } });
      expect(refreshed.status).toBe(200);
      expect(refreshed.headers.get("cache-control")).toBe("no-store");
      const manifest = await s.site.request("GET", `/updates/${r.lane}/${VARIANTS.alpha.manifestFile}`, { token });
      expect(manifest.headers.get("cache-control")).toBe("private, no-cache");
    } finally {
      await s.close();
    }
  });
});
