import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import { testSite, type TestSite } from "./helpers";

// Spec: "GET /health ... JSON object with ok true when the site and its records are reachable."
// design.md: GET /meta is `{ ok, service, version, variant, products?, features: { licensing,
// staffSignIn, updates, rateLimit }, keys: [ { kid, spki } ] }`; no bearer on health and meta.

let site: TestSite | null = null;
afterEach(async () => {
  await site?.close();
  site = null;
});

async function siteWithTree(variant: "alpha" | "beta" | "gamma", opts: Parameters<typeof testSite>[1] = {}) {
  site = await testSite(variant, opts);
  mkdirSync(join(site.dir, "releases"), { recursive: true });
  await site.composed.services.releases.ready();
  return site;
}

describe("GET /health", () => {
  test("ok when the records answer and the release tree is readable; no bearer needed", async () => {
    const s = await siteWithTree("gamma");
    const r = await s.request("GET", "/health");
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ ok: true, status: "ok", rateLimits: "per-process", licensing: "on" });
  });

  test("licensing off (no license key: beta before its key) is said in health, which stays 200: updates are still served", async () => {
    const s = await siteWithTree("beta", { withKey: false });
    const r = await s.request("GET", "/health");
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ ok: true, status: "ok", rateLimits: "per-process", licensing: "off" });
  });

  test("503 unavailable until the first release index is built (the update routes wait for it), then ok", async () => {
    site = await testSite("gamma");
    mkdirSync(join(site.dir, "releases"), { recursive: true });
    // compose starts building the index on the next turn of the event loop: it is not there yet.
    expect(site.composed.services.releases.current).toBeNull();
    const early = await site.request("GET", "/health");
    expect(early.status).toBe(503);
    expect(await early.json()).toMatchObject({ ok: false, error: "unavailable", message: "The release index is being built; try again shortly." });
    await site.composed.services.releases.ready();
    expect((await site.request("GET", "/health")).status).toBe(200);
  });

  test("503 unavailable when the release tree cannot be read", async () => {
    const s = await siteWithTree("gamma");
    rmSync(join(s.dir, "releases"), { recursive: true });
    const r = await s.request("GET", "/health");
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ ok: false, error: "unavailable", message: "The release tree cannot be read." });
  });

  test("503 unavailable when the records do not answer", async () => {
    const s = await siteWithTree("alpha");
    await s.composed.store.close();
    const r = await s.request("GET", "/health");
    expect(r.status).toBe(503);
    const body = (await r.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ ok: false, error: "unavailable", message: "The records cannot be reached." });
    expect(JSON.stringify(body)).not.toMatch(/sqlite|closed database|at /i);
    site = { ...s, close: async () => rmSync(s.dir, { recursive: true, force: true }) }; // already closed
  });
});

describe("GET /meta", () => {
  test("alpha: products, version, features and the public license key", async () => {
    const s = await siteWithTree("alpha");
    const r = await s.request("GET", "/meta");
    expect(r.status).toBe(200);
    const meta = (await r.json()) as Record<string, any>;
    expect(meta).toEqual({
      ok: true,
      service: "keyturn",
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      variant: "alpha",
      products: ["alpha", "alpha-cli"],
      features: { licensing: true, staffSignIn: false, updates: true, rateLimit: true },
      keys: [{ kid: "alpha-license-2026-10", purpose: "license", role: "signing", spki: s.composed.keys.verify.get("alpha-license-2026-10")!.spki }],
    });
    // The SPKI is a P-256 SubjectPublicKeyInfo in base64 (91 bytes of DER).
    expect(Buffer.from(meta.keys[0].spki, "base64").length).toBe(91);
  });

  test("gamma has no products; release keys are published beside license keys", async () => {
    const dir = (await siteWithTree("gamma")).dir;
    await site!.close();
    generateKeyFiles(join(dir, "k2"), VARIANTS.gamma.defaultLicenseKid);
    generateKeyFiles(join(dir, "k2"), "gamma-release-2026-09");
    site = await testSite("gamma", { settings: { keys: join(dir, "k2") } });
    mkdirSync(join(site.dir, "releases"));
    const meta = (await (await site.request("GET", "/meta")).json()) as Record<string, any>;
    expect(meta.products).toBeUndefined();
    expect(meta.keys.map((k: any) => [k.kid, k.purpose])).toEqual([
      ["gamma-license-2026-09", "license"],
      ["gamma-release-2026-09", "release"],
    ]);
    rmSync(dir, { recursive: true, force: true });
  });

  test("beta before its key exists: licensing is off and no key is published", async () => {
    const s = await siteWithTree("beta", { withKey: false });
    const meta = (await (await s.request("GET", "/meta")).json()) as Record<string, any>;
    expect(meta.products).toEqual(["beta", "beta-studio"]);
    expect(meta.features.licensing).toBe(false);
    expect(meta.keys).toEqual([]);
  });

  test("staff sign-in and updates are reported as configured", async () => {
    const s = await siteWithTree("alpha", {
      settings: { "identity-issuer": "https://id.example.com", "identity-client-id": "keyturn", "identity-groups": "staff" },
    });
    rmSync(join(s.dir, "releases"), { recursive: true });
    const meta = (await (await s.request("GET", "/meta")).json()) as Record<string, any>;
    expect(meta.features).toEqual({ licensing: true, staffSignIn: true, updates: false, rateLimit: true });
    mkdirSync(join(s.dir, "releases"));
  });
});
