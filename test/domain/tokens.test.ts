import { afterEach, describe, expect, test } from "bun:test";
import { generateKeyPairSync, randomBytes, sign as nodeSign } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compactVerify, decodeProtectedHeader, importSPKI, jwtVerify, SignJWT, UnsecuredJWT } from "jose";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { generateKeyFiles, loadKeyRing } from "../../src/domain/keys";
import type { KeyturnError } from "../../src/domain/errors";
import { TokenSigner, TokenVerifier } from "../../src/domain/tokens";
import { createLicense, device, tempDir, testClock, testSite, type TestSite } from "../helpers";

const sites: TestSite[] = [];
afterEach(async () => {
  while (sites.length) await sites.pop()!.close();
});

async function activated(variant: VariantName) {
  const s = await testSite(variant);
  sites.push(s);
  const { key } = await createLicense(s);
  const body = (await (await s.request("POST", "/licenses/activate", { body: { key, device: device(variant) } })).json()) as any;
  return { s, token: body.token as string, entitlement: body.entitlement };
}

function spkiPem(site: TestSite, kid: string): string {
  return readFileSync(join(site.dir, "keys", `${kid}.pub.pem`), "utf8");
}

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
const parts = (token: string) => token.split(".").map((p, i) => (i < 2 ? JSON.parse(Buffer.from(p, "base64url").toString()) : p));

for (const variant of ["alpha", "beta", "gamma"] as const) {
  const v = VARIANTS[variant];
  describe(`${variant}: the entitlement token`, () => {
    test("ES256 compact JWS with the variant's typ and kid and every claim of the spec", async () => {
      const { s, token, entitlement } = await activated(variant);
      const header = decodeProtectedHeader(token);
      expect(header).toEqual({ alg: "ES256", typ: v.tokenTyp, kid: v.defaultLicenseKid });
      // A program checks it itself against the public key compiled into it.
      const key = await importSPKI(spkiPem(s, v.defaultLicenseKid), "ES256");
      const { payload } = await jwtVerify(token, key, {
        algorithms: ["ES256"],
        typ: v.tokenTyp,
        issuer: "https://licenses.example.com",
        audience: v.audience,
        currentDate: new Date(s.clock()),
      });
      expect(payload.sub).toBe(entitlement.id);
      expect(payload.iat).toBe(payload.nbf!);
      expect(payload.exp! - payload.iat!).toBe(7 * 86400);
      expect(payload).toMatchObject({ kind: "license", name: "Ada Lovelace", org: "Analytical Engines Ltd", plan: "pro", chn: ["stable"] });
      for (const claim of ["iss", "aud", "sub", "jti", "iat", "nbf", "exp", "kind", "lic", "name", "org", "plan", "chn", "dev"])
        expect(payload[claim]).toBeDefined();
      expect(String(payload.lic)).toMatch(/^lic_/);
    });

    test("the SPKI printed by `keys generate` verifies the token (what vendors compile in)", async () => {
      const { s, token } = await activated(variant);
      const spki = s.composed.keys.verify.get(v.defaultLicenseKid)!.spki;
      const key = await crypto.subtle.importKey("spki", Buffer.from(spki, "base64"), { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
      await compactVerify(token, key, { algorithms: ["ES256"] });
    });
  });
}

describe("forged tokens are refused with 401 entitlement_invalid", () => {
  async function refused(s: TestSite, token: string) {
    const r = await s.request("GET", "/entitlements/current", { token });
    expect(r.status).toBe(401);
    expect(((await r.json()) as any).error).toBe("entitlement_invalid");
  }

  test("alg none", async () => {
    const { s, token } = await activated("alpha");
    const [, payload] = parts(token);
    await refused(s, new UnsecuredJWT(payload).encode());
    await refused(s, `${b64({ alg: "none", typ: "al-ent+jwt", kid: "alpha-license-2026-10" })}.${b64(payload)}.`);
  });

  test("HS256 keyed with the public key", async () => {
    const { s, token } = await activated("alpha");
    const [, payload] = parts(token);
    const secret = new TextEncoder().encode(spkiPem(s, "alpha-license-2026-10"));
    const forged = await new SignJWT(payload).setProtectedHeader({ alg: "HS256", typ: "al-ent+jwt", kid: "alpha-license-2026-10" }).sign(secret);
    await refused(s, forged);
  });

  test("a foreign key with the same kid", async () => {
    const { s, token } = await activated("alpha");
    const [header, payload] = parts(token);
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const input = `${b64(header)}.${b64(payload)}`;
    const sig = nodeSign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url");
    await refused(s, `${input}.${sig}`);
  });

  test("a changed claim (the signature no longer matches)", async () => {
    const { s, token } = await activated("alpha");
    const [h, , sig] = token.split(".");
    const [, payload] = parts(token);
    await refused(s, `${h}.${b64({ ...payload, chn: ["stable", "preview"] })}.${sig}`);
  });

  test("wrong aud, wrong iss, wrong typ, unknown kid — each signed with the site's own key", async () => {
    const { s, token } = await activated("alpha");
    const [header, payload] = parts(token);
    const privateKey = readFileSync(join(s.dir, "keys", "alpha-license-2026-10.pem"), "utf8");
    const resign = (h: object, p: object) => {
      const input = `${b64(h)}.${b64(p)}`;
      return `${input}.${nodeSign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")}`;
    };
    // control: re-signing the same header and payload is accepted
    expect((await s.request("GET", "/entitlements/current", { token: resign(header, payload) })).status).toBe(200);
    await refused(s, resign(header, { ...payload, aud: "beta" }));
    await refused(s, resign(header, { ...payload, iss: "https://evil.example.com" }));
    await refused(s, resign({ ...header, typ: "JWT" }, payload));
    await refused(s, resign({ ...header, typ: "be-ent+jwt" }, payload));
    await refused(s, resign({ ...header, kid: "alpha-license-2099-01" }, payload));
    await refused(s, resign(header, { ...payload, sub: "lic_notanactivation" }));
  });

  test("another variant's token (its own key, typ and aud) is not for this site", async () => {
    const beta = await activated("beta");
    const { s } = await activated("alpha");
    await refused(s, beta.token);
  });

  test("a token not yet valid (nbf in the future) is refused; no leeway for our own tokens", async () => {
    const { s, token } = await activated("gamma");
    s.clock.advance(-1000);
    await refused(s, token);
  });
});

describe("token cache", () => {
  test("a token differing by one byte is not a cache hit, and expiry applies to cached tokens", async () => {
    const { s, token } = await activated("alpha");
    expect((await s.request("GET", "/entitlements/current", { token })).status).toBe(200);
    const last = token.at(-2) === "A" ? "B" : "A";
    const tampered = token.slice(0, -2) + last + token.at(-1);
    expect((await s.request("GET", "/entitlements/current", { token: tampered })).status).toBe(401);
    s.clock.advance(7 * 86400_000);
    const expired = await s.request("GET", "/entitlements/current", { token });
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as any).error).toBe("entitlement_expired");
  });

  test("the cache is bounded by token-cache-size", async () => {
    const s = await testSite("alpha", { settings: { "token-cache-size": "2" } });
    sites.push(s);
    const { key } = await createLicense(s, { seats: 5 });
    for (let i = 0; i < 4; i++) {
      const body = (await (await s.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).json()) as any;
      expect((await s.request("GET", "/entitlements/current", { token: body.token })).status).toBe(200);
    }
    const verifier = (s.composed.services.licensing as any).deps.verifier;
    expect(verifier.cached).toBe(2);
  });
});

describe("TokenVerifier's cache of verified tokens", () => {
  const alpha = VARIANTS.alpha;
  const ISS = "https://licenses.example.com";

  /** A verifier whose key map the test can empty: then only a cache hit can still verify. */
  async function setup(cacheSize = 10) {
    const keysDir = join(tempDir(), "keys");
    generateKeyFiles(keysDir, alpha.defaultLicenseKid);
    const ring = await loadKeyRing(keysDir, alpha);
    const verifyKeys = new Map(ring.verify);
    const clock = testClock();
    const verifier = new TokenVerifier(alpha, ISS, { ...ring, verify: verifyKeys }, clock, cacheSize);
    const signer = new TokenSigner(alpha, ISS, ring.signing!);
    const issue = (sub = `act_${randomBytes(8).toString("hex")}`) =>
      signer.sign({ sub, kind: "license", lic: "lic_x", name: "N", org: "O", plan: "p", chn: ["stable"], dev: "d" }, clock(), clock() + 3600_000).token;
    const restoreKeys = () => ring.verify.forEach((v, k) => verifyKeys.set(k, v));
    return { verifier, verifyKeys, restoreKeys, clock, issue };
  }
  const code = async (p: Promise<unknown>) =>
    p.then(
      () => "ok",
      (e: KeyturnError) => e.code,
    );

  test("a verified token is served from the cache (its key may even be gone) until its exp", async () => {
    const { verifier, verifyKeys, restoreKeys, clock, issue } = await setup();
    const token = issue();
    expect((await verifier.verify(token)).sub).toMatch(/^act_/);
    verifyKeys.clear();
    expect(await code(verifier.verify(token))).toBe("ok");
    clock.advance(3600_000 - 1000);
    expect(await code(verifier.verify(token))).toBe("ok");
    clock.advance(1000);
    restoreKeys();
    // At exp the cached entry is dropped and the token checked afresh: expired.
    expect(await code(verifier.verify(token))).toBe("entitlement_expired");
    expect(verifier.cached).toBe(0);
  });

  test("a token differing by one byte is not a hit, even one whose signature decodes to the same bytes", async () => {
    const { verifier, verifyKeys, issue } = await setup();
    const token = issue();
    await verifier.verify(token);
    verifyKeys.clear();
    // 86 base64url characters carry the 64-byte signature; the last one's low 2 bits are padding,
    // so changing them leaves the decoded signature as it was. Still not the cached text: no key, refused.
    const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const sameBytes = token.slice(0, -1) + B64URL[B64URL.indexOf(token.at(-1)!) ^ 1];
    expect(Buffer.from(sameBytes.split(".")[2]!, "base64url")).toEqual(Buffer.from(token.split(".")[2]!, "base64url"));
    expect(await code(verifier.verify(sameBytes))).toBe("entitlement_invalid");
    expect(await code(verifier.verify(token + " "))).toBe("entitlement_invalid");
    expect(await code(verifier.verify(token))).toBe("ok");
  });

  test("bounded: the oldest token leaves first, and size 0 keeps nothing", async () => {
    const { verifier, verifyKeys, issue } = await setup(2);
    const [a, b, c] = [issue(), issue(), issue()];
    for (const t of [a, b, c]) await verifier.verify(t);
    expect(verifier.cached).toBe(2);
    verifyKeys.clear();
    expect(await code(verifier.verify(a))).toBe("entitlement_invalid");
    expect(await code(verifier.verify(b))).toBe("ok");
    expect(await code(verifier.verify(c))).toBe("ok");

    const off = await setup(0);
    await off.verifier.verify(off.issue());
    expect(off.verifier.cached).toBe(0);
  });

  test("revocation applies at once to a cached token (deactivation, operator's deactivation, license revoked)", async () => {
    for (const revoke of ["deactivate", "operator", "license"] as const) {
      const s = await testSite("alpha");
      sites.push(s);
      const { key, license } = await createLicense(s);
      const body = (await (await s.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).json()) as any;
      expect((await s.request("GET", "/entitlements/current", { token: body.token })).status).toBe(200);
      const verifier = (s.composed.services.licensing as any).deps.verifier as TokenVerifier;
      expect(verifier.cached).toBe(1);
      if (revoke === "deactivate") expect((await s.request("POST", "/entitlements/deactivate", { token: body.token })).status).toBe(200);
      if (revoke === "operator") await s.admin.deactivate(body.entitlement.id);
      if (revoke === "license") await s.admin.revokeLicense(license.id);
      const r = await s.request("GET", "/entitlements/current", { token: body.token });
      expect(((await r.json()) as any).error).toBe(revoke === "license" ? "license_revoked" : "entitlement_revoked");
      expect(verifier.cached).toBe(1); // still cached: the refusal came from the records
    }
  });
});
