import { afterEach, describe, expect, test } from "bun:test";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { updateLicense } from "../../src/domain/admin/licenses";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createLicense, device, testSite, type TestSite } from "../helpers";

const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});
async function site(variant: VariantName, opts?: Parameters<typeof testSite>[1]) {
  const s = await testSite(variant, opts);
  sites.push(s);
  return s;
}
const json = async (r: Response) => (await r.json()) as any;
const ISO_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

function expectError(body: any, code: string) {
  expect(body.ok).toBe(false);
  expect(body.error).toBe(code);
  expect(typeof body.message).toBe("string");
  expect(body.ref).toMatch(/^ref_/);
}

for (const variant of ["alpha", "beta", "gamma"] as const) {
  describe(`${variant}: license activation`, () => {
    test("no seat → active: a new seat, a token and the spec's entitlement object", async () => {
      const s = await site(variant);
      const { key, license } = await createLicense(s, { seats: 3, channels: ["stable", "preview"] });
      const r = await s.request("POST", "/licenses/activate", { body: { key, device: device(variant) } });
      expect(r.status).toBe(200);
      const body = await json(r);
      expect(body.ok).toBe(true);
      expect(body.token.split(".")).toHaveLength(3);
      const e = body.entitlement;
      expect(e.id).toMatch(/^act_/);
      expect(e).toMatchObject({
        kind: "license",
        licensee: "Ada Lovelace",
        organization: "Analytical Engines Ltd",
        plan: "pro",
        planTitle: "Professional",
        channels: ["stable", "preview"],
        seats: { used: 1, total: 3 },
      });
      // "ISO 8601 timestamp with numeric UTC offset" (spec); design.md: +00:00, never Z.
      expect(e.issued).toMatch(ISO_OFFSET);
      expect(e.expires).toMatch(ISO_OFFSET);
      expect(Date.parse(e.expires) - Date.parse(e.issued)).toBe(7 * 86400_000);
      expect((await s.composed.store.listActivations(license.id)).length).toBe(1);
    });

    test("active → active: the same installation activating again reuses its seat", async () => {
      const s = await site(variant);
      const { key, license } = await createLicense(s, { seats: 1 });
      const d = device(variant);
      const first = await json(await s.request("POST", "/licenses/activate", { body: { key, device: d } }));
      s.clock.advance(60_000);
      const again = await s.request("POST", "/licenses/activate", { body: { key, device: { ...d, version: "1.1.0" } } });
      expect(again.status).toBe(200);
      const body = await json(again);
      expect(body.entitlement.id).toBe(first.entitlement.id);
      expect(body.entitlement.seats).toEqual({ used: 1, total: 1 });
      const [activation] = await s.composed.store.listActivations(license.id);
      expect(activation!.version).toBe("1.1.0");
    });

    test("every seat in use → 409 seat_limit naming the holders", async () => {
      const s = await site(variant);
      const { key } = await createLicense(s, { seats: 2 });
      await s.request("POST", "/licenses/activate", { body: { key, device: device(variant, { name: "Desk One" }) } });
      await s.request("POST", "/licenses/activate", { body: { key, device: device(variant, { name: "Desk Two" }) } });
      const r = await s.request("POST", "/licenses/activate", { body: { key, device: device(variant, { name: "Third" }) } });
      expect(r.status).toBe(409);
      const body = await json(r);
      expectError(body, "seat_limit");
      expect(body.message).toContain('"Desk One"');
      expect(body.message).toContain('"Desk Two"');
      expect(body.message).not.toContain("Third");
      // "The message names the installations (alpha, beta) or the computers (gamma)."
      expect(body.message).toContain(VARIANTS[variant].seatHolders === "computers" ? "computers" : "installations");
    });

    test("license_unknown for an unknown or mistyped key, license_revoked, license_expired", async () => {
      const s = await site(variant);
      const { key, license } = await createLicense(s);
      const prefix = VARIANTS[variant].keyPrefix;
      for (const bad of [`${prefix}-AAAAA-AAAAA-AAAAA-AAAAA-AAAAA`, key.slice(0, -1), "XX" + key.slice(2), key + "-AAAAA"]) {
        const r = await s.request("POST", "/licenses/activate", { body: { key: bad, device: device(variant) } });
        expect(r.status).toBe(403);
        expectError(await json(r), "license_unknown");
      }
      await s.admin.revokeLicense(license.id);
      const revoked = await s.request("POST", "/licenses/activate", { body: { key, device: device(variant) } });
      expect(revoked.status).toBe(403);
      expectError(await json(revoked), "license_revoked");

      const expiring = await createLicense(s, { expires: s.clock() + 3600_000 });
      s.clock.advance(3600_000);
      const expired = await s.request("POST", "/licenses/activate", { body: { key: expiring.key, device: device(variant) } });
      expect(expired.status).toBe(403);
      expectError(await json(expired), "license_expired");
    });

    test("a key typed in lower case, with spaces and O/I/L for 0/1, is the same key", async () => {
      const s = await site(variant);
      const { key } = await createLicense(s);
      const prefix = VARIANTS[variant].keyPrefix;
      const groups = key.slice(prefix.length + 1);
      const sloppy = `  ${prefix}-${groups.replaceAll("0", "o").replaceAll("1", "l").toLowerCase()}  `;
      const d = device(variant);
      const r = await s.request("POST", "/licenses/activate", { body: { key: sloppy, device: d } });
      expect(r.status).toBe(200);
      const seat = ((await r.json()) as { entitlement: { id: string } }).entitlement.id;
      // Without dashes, or in spaced groups as read over the phone: the same key, the same seat.
      for (const typed of [key.replaceAll("-", ""), key.replaceAll("-", " ").toLowerCase()]) {
        const again = await s.request("POST", "/licenses/activate", { body: { key: typed, device: d } });
        expect(again.status).toBe(200);
        expect(((await again.json()) as { entitlement: { id: string } }).entitlement.id).toBe(seat);
      }
    });

    test("the token's lifetime never passes the license's expiry", async () => {
      const s = await site(variant);
      const { key } = await createLicense(s, { expires: s.clock() + 86400_000 });
      const body = await json(await s.request("POST", "/licenses/activate", { body: { key, device: device(variant) } }));
      expect(Date.parse(body.entitlement.expires)).toBe(s.clock() + 86400_000);
    });

    test("the license's own expiry (licenseExpires, claim lex) is in activate, refresh and current; null and absent when it has none", async () => {
      const s = await site(variant);
      const term = Date.parse("2027-12-31T00:00:00Z");
      const { key } = await createLicense(s, { expires: term });
      const d = device(variant);
      const act = await json(await s.request("POST", "/licenses/activate", { body: { key, device: d } }));
      // expires stays the token's (7 days), licenseExpires is the term's end.
      expect(Date.parse(act.entitlement.expires) - Date.parse(act.entitlement.issued)).toBe(7 * 86400_000);
      expect(act.entitlement.licenseExpires).toBe("2027-12-31T00:00:00+00:00");
      const claims = JSON.parse(Buffer.from(act.token.split(".")[1], "base64url").toString());
      expect(claims.lex).toBe(term / 1000);
      const refreshed = await json(await s.request("POST", "/entitlements/refresh", { token: act.token, body: { device: d } }));
      expect(refreshed.entitlement.licenseExpires).toBe("2027-12-31T00:00:00+00:00");
      const current = await json(await s.request("GET", "/entitlements/current", { token: act.token }));
      expect(current.entitlement.licenseExpires).toBe("2027-12-31T00:00:00+00:00");

      const open = await createLicense(s, { expires: null });
      const perpetual = await json(await s.request("POST", "/licenses/activate", { body: { key: open.key, device: device(variant, { name: "Other PC" }) } }));
      expect(perpetual.entitlement.licenseExpires).toBeNull();
      expect("lex" in JSON.parse(Buffer.from(perpetual.token.split(".")[1], "base64url").toString())).toBe(false);
    });

    test("no signing key: activate answers 503 licensing_unavailable", async () => {
      const s = await site(variant, { withKey: false });
      const { key } = await createLicense(s);
      const r = await s.request("POST", "/licenses/activate", { body: { key, device: device(variant) } });
      expect(r.status).toBe(503);
      expectError(await json(r), "licensing_unavailable");
    });
  });

  describe(`${variant}: bearer endpoints`, () => {
    async function activated(s: TestSite, extra: Partial<Parameters<typeof createLicense>[1]> = {}) {
      const { key, license } = await createLicense(s, extra);
      const d = device(variant);
      const body = await json(await s.request("POST", "/licenses/activate", { body: { key, device: d } }));
      return { key, license, device: d, token: body.token as string, id: body.entitlement.id as string };
    }

    test("current: the entitlement as the records have it today, and the activation", async () => {
      const s = await site(variant);
      const a = await activated(s);
      s.clock.advance(5_000);
      const r = await s.request("GET", "/entitlements/current", { token: a.token });
      expect(r.status).toBe(200);
      const body = await json(r);
      expect(body.ok).toBe(true);
      expect(body.entitlement).toMatchObject({ id: a.id, kind: "license", seats: { used: 1, total: 2 } });
      expect(body.activation).toMatchObject({ id: a.id, name: "Office PC", platform: "win-x64", version: "1.0.0" });
      expect(body.activation.created).toMatch(ISO_OFFSET);
      if (VARIANTS[variant].products.length) expect(body.activation.product).toBe(VARIANTS[variant].products[0]);
      else expect("product" in body.activation).toBe(false);
    });

    test("refresh: a new token with a later expiry; the earlier one stays valid until its exp", async () => {
      const s = await site(variant);
      const a = await activated(s);
      s.clock.advance(3600_000);
      const r = await s.request("POST", "/entitlements/refresh", { token: a.token, body: { device: a.device } });
      expect(r.status).toBe(200);
      const body = await json(r);
      expect(body.token).not.toBe(a.token);
      expect(body.entitlement.id).toBe(a.id);
      expect(Date.parse(body.entitlement.issued)).toBe(s.clock());
      expect((await s.request("GET", "/entitlements/current", { token: a.token })).status).toBe(200);
      expect((await s.request("GET", "/entitlements/current", { token: body.token })).status).toBe(200);
    });

    test("refresh with an expired token → 401 entitlement_expired; activate again works", async () => {
      const s = await site(variant);
      const a = await activated(s);
      s.clock.advance(7 * 86400_000);
      const r = await s.request("POST", "/entitlements/refresh", { token: a.token, body: { device: a.device } });
      expect(r.status).toBe(401);
      expectError(await json(r), "entitlement_expired");
      expect(r.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
      const again = await s.request("POST", "/licenses/activate", { body: { key: a.key, device: a.device } });
      expect(again.status).toBe(200);
      expect((await json(again)).entitlement.id).toBe(a.id);
    });

    test("refresh with another device → 403 device_mismatch", async () => {
      const s = await site(variant);
      const a = await activated(s);
      const r = await s.request("POST", "/entitlements/refresh", { token: a.token, body: { device: device(variant) } });
      expect(r.status).toBe(403);
      expectError(await json(r), "device_mismatch");
    });

    test("deactivate: the seat is given back and the token stops working at once", async () => {
      const s = await site(variant);
      const a = await activated(s, { seats: 1 });
      expect((await s.request("GET", "/entitlements/current", { token: a.token })).status).toBe(200); // now cached
      const r = await s.request("POST", "/entitlements/deactivate", { token: a.token });
      expect(r.status).toBe(200);
      expect(await json(r)).toEqual({ ok: true });
      for (const [method, path, body] of [
        ["GET", "/entitlements/current", undefined],
        ["POST", "/entitlements/refresh", { device: a.device }],
        ["POST", "/entitlements/deactivate", undefined],
      ] as const) {
        const again = await s.request(method, path, { token: a.token, body });
        expect(again.status).toBe(401);
        expectError(await json(again), "entitlement_revoked");
      }
      // the seat is free again: another computer gets it
      const other = await s.request("POST", "/licenses/activate", { body: { key: a.key, device: device(variant) } });
      expect(other.status).toBe(200);
      // and a new activation of the deactivated installation gets a new act_ id (design.md)
      await s.request("POST", "/entitlements/deactivate", { token: (await json(other)).token });
      const back = await json(await s.request("POST", "/licenses/activate", { body: { key: a.key, device: a.device } }));
      expect(back.entitlement.id).toMatch(/^act_/);
      expect(back.entitlement.id).not.toBe(a.id);
    });

    test("an admin's license revocation applies to bearer requests at once", async () => {
      const s = await site(variant);
      const a = await activated(s);
      expect((await s.request("GET", "/entitlements/current", { token: a.token })).status).toBe(200);
      await s.admin.revokeLicense(a.license.id);
      const r = await s.request("GET", "/entitlements/current", { token: a.token });
      expect(r.status).toBe(403);
      expectError(await json(r), "license_revoked");
    });

    test("an expiry brought forward ends the licence's tokens at the new expiry, before their own exp", async () => {
      // spec: "license_expired | 403 | The license is expired."; the mirror refuses the same (mirror/knowledge.ts).
      const s = await site(variant);
      const a = await activated(s);
      const tokenExp = JSON.parse(Buffer.from(a.token.split(".")[1]!, "base64url").toString()).exp * 1000;
      const newExpiry = s.clock() + 3600_000;
      await updateLicense(s.composed.services.admin, CLI_CALLER, a.license.id, { expires: new Date(newExpiry).toISOString() });
      expect(tokenExp).toBeGreaterThan(newExpiry + 3600_000);
      expect((await s.request("GET", "/releases", { token: a.token })).status).toBe(200);
      // No write between the two requests: the status read before must not outlive the expiry.
      s.clock.advance(2 * 3600_000);
      for (const path of ["/releases", "/entitlements/current"]) {
        const r = await s.request("GET", path, { token: a.token });
        expect(r.status).toBe(403);
        expectError(await json(r), "license_expired");
      }
      // Giving the seat back is not refused: a machine whose licence ran out never holds it for good.
      expect((await s.request("POST", "/entitlements/deactivate", { token: a.token })).status).toBe(200);
      expect((await s.composed.store.listActivations(a.license.id)).every((x) => x.deactivated !== null)).toBe(true);
    });

    test("missing or malformed bearer → 401 entitlement_invalid with WWW-Authenticate", async () => {
      const s = await site(variant);
      const none = await s.request("GET", "/entitlements/current");
      expect(none.status).toBe(401);
      expectError(await json(none), "entitlement_invalid");
      expect(none.headers.get("www-authenticate")).toBe("Bearer");
      for (const authorization of ["Basic abc", "Bearer", "Bearer not.a.token", "Bearer a b"]) {
        const r = await s.request("GET", "/entitlements/current", { headers: { authorization } });
        expect(r.status).toBe(401);
        expectError(await json(r), "entitlement_invalid");
        // RFC 6750 via design.md: plain `Bearer` when no token was sent (another scheme sends none)
        expect(r.headers.get("www-authenticate")).toBe(authorization.startsWith("Basic") ? "Bearer" : 'Bearer error="invalid_token"');
      }
    });

    test("cookies are never read", async () => {
      const s = await site(variant);
      const a = await activated(s);
      const r = await s.request("GET", "/entitlements/current", { headers: { cookie: `token=${a.token}; authorization=Bearer ${a.token}` } });
      expect(r.status).toBe(401);
    });

    test("the bearer is checked before the body", async () => {
      const s = await site(variant);
      const r = await s.request("POST", "/entitlements/refresh", { body: "{not json" });
      expect(r.status).toBe(401);
    });
  });
}

describe("seats across programs on one computer", () => {
  test("alpha: alpha and alpha-cli share one seat; device.product follows the last caller", async () => {
    const s = await site("alpha");
    const { key, license } = await createLicense(s, { seats: 1 });
    const d = device("alpha", { product: "alpha" });
    const app = await json(await s.request("POST", "/licenses/activate", { body: { key, device: d } }));
    const cli = await s.request("POST", "/licenses/activate", { body: { key, device: { ...d, product: "alpha-cli" } } });
    expect(cli.status).toBe(200);
    const body = await json(cli);
    expect(body.entitlement.id).toBe(app.entitlement.id);
    expect(body.entitlement.seats).toEqual({ used: 1, total: 1 });
    const [activation] = await s.composed.store.listActivations(license.id);
    expect(activation!.product).toBe("alpha-cli");
    // refresh from the desktop app again: product follows it back
    await s.request("POST", "/entitlements/refresh", { token: app.token, body: { device: d } });
    expect((await s.composed.store.getActivation(app.entitlement.id))!.product).toBe("alpha");
  });

  test("beta: beta and beta-studio on one computer are two installations, two seats", async () => {
    const s = await site("beta");
    const { key } = await createLicense(s, { seats: 1 });
    const d = device("beta", { product: "beta" });
    expect((await s.request("POST", "/licenses/activate", { body: { key, device: d } })).status).toBe(200);
    const studio = await s.request("POST", "/licenses/activate", { body: { key, device: { ...d, product: "beta-studio" } } });
    expect(studio.status).toBe(409);
    const body = await json(studio);
    expect(body.error).toBe("seat_limit");
    expect(body.message).toContain("(beta)");
  });

  test("beta: a token of beta cannot be refreshed by beta-studio on the same computer", async () => {
    const s = await site("beta");
    const { key } = await createLicense(s, { seats: 2 });
    const d = device("beta", { product: "beta" });
    const a = await json(await s.request("POST", "/licenses/activate", { body: { key, device: d } }));
    const r = await s.request("POST", "/entitlements/refresh", { token: a.token, body: { device: { ...d, product: "beta-studio" } } });
    expect(r.status).toBe(403);
    expect((await json(r)).error).toBe("device_mismatch");
  });
});

describe("malformed input (design.md)", () => {
  const cases: Array<[string, (v: VariantName) => unknown, string]> = [
    ["hash of 42 characters", (v) => ({ device: device(v, { hash: "a".repeat(42) }) }), "device.hash"],
    ["hash with a character outside base64url", (v) => ({ device: device(v, { hash: "+".repeat(43) }) }), "device.hash"],
    ["missing name", (v) => ({ device: { ...device(v), name: undefined } }), "device.name"],
    ["wrongly typed version", (v) => ({ device: device(v, { version: 3 }) }), "device.version"],
    ["missing device", () => ({}), "device"],
    ["name longer than allowed", (v) => ({ device: device(v, { name: "n".repeat(300) }) }), "device.name is longer than 200 characters"],
  ];
  for (const [what, body, field] of cases)
    test(`400 invalid_request naming the field: ${what}`, async () => {
      const s = await site("alpha");
      const { key } = await createLicense(s);
      const r = await s.request("POST", "/licenses/activate", { body: { key, ...(body("alpha") as object) } });
      expect(r.status).toBe(400);
      const b = await json(r);
      expectError(b, "invalid_request");
      expect(b.message).toContain(field);
    });

  test("product missing in alpha/beta, unknown product, product present in gamma → 400", async () => {
    for (const [variant, dev] of [
      ["alpha", { ...device("alpha"), product: undefined }],
      ["beta", device("beta", { product: "alpha" })],
      ["gamma", device("gamma", { product: "gamma" })],
    ] as const) {
      const s = await site(variant);
      const { key } = await createLicense(s);
      const r = await s.request("POST", "/licenses/activate", { body: { key, device: dev } });
      expect(r.status).toBe(400);
      expect((await json(r)).message).toContain("device.product");
    }
  });

  test("not JSON → 400; not application/json → 415; over 16 KiB → 413; wrong method → 405; unknown path → 404", async () => {
    const s = await site("gamma");
    const bad = await s.request("POST", "/licenses/activate", { body: "{" });
    expect(bad.status).toBe(400);
    expect((await json(bad)).message).toBe("The body is not valid JSON.");
    const text = await s.request("POST", "/licenses/activate", { body: "{}", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);
    expectError(await json(text), "unsupported_media_type");
    const big = await s.request("POST", "/licenses/activate", { body: JSON.stringify({ key: "x".repeat(17 * 1024) }) });
    expect(big.status).toBe(413);
    expectError(await json(big), "payload_too_large");
    const method = await s.request("GET", "/licenses/activate");
    expect(method.status).toBe(405);
    expect(method.headers.get("allow")).toBe("POST");
    expectError(await json(method), "method_not_allowed");
    const missing = await s.request("GET", "/nothing/here");
    expect(missing.status).toBe(404);
    expectError(await json(missing), "not_found");
  });

  test("a chunked body over 16 KiB without Content-Length is cut off at the limit", async () => {
    const s = await site("gamma");
    let sent = 0;
    const stream = new ReadableStream({
      pull(c) {
        if (sent > 1024 * 1024) return c.close();
        sent += 4096;
        c.enqueue(new TextEncoder().encode(" ".repeat(4096)));
      },
    });
    const r = await s.app.handle(
      new Request("http://localhost/api/v1/licenses/activate", { method: "POST", body: stream, headers: { "content-type": "application/json" } }),
    );
    expect(r.status).toBe(413);
    expect(sent).toBeLessThan(64 * 1024);
  });

  test("no error body carries a stack trace or a schema", async () => {
    const s = await site("alpha");
    for (const body of ["[]", "null", '{"key":{},"device":[]}', '{"key":"AL","device":{"hash":{}}}']) {
      const r = await s.request("POST", "/licenses/activate", { body });
      const text = await r.text();
      expect(r.status).toBe(400);
      expect(text).not.toMatch(/at .*\.ts|TypeBox|"type":"object"|properties|Expected/);
    }
  });
});

describe("audit trail", () => {
  test("a refusal's ref names its audit line; a success writes one too", async () => {
    const s = await site("alpha");
    const { key, license } = await createLicense(s, { seats: 1 });
    const ok = await json(await s.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } }));
    const refused = await json(await s.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } }));
    const lines = await s.composed.store.listAudit({ licenseId: license.id });
    const refusal = lines.find((l) => l.ref === refused.ref)!;
    expect(refusal).toMatchObject({ action: "activate", outcome: "refused", error: "seat_limit", address: "203.0.113.7" });
    expect(lines.some((l) => l.action === "activate" && l.outcome === "ok" && l.activationId === ok.entitlement.id)).toBe(true);
  });
});
