import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  clientVariant,
  deviceHash,
  feature,
  hasFeature,
  KeySet,
  KeyturnClientError,
  parseManifest,
  updatesCover,
  updatesUntil,
  verifyEntitlementToken,
  verifyManifestSignature,
} from "../../src/client";
import { generateVectors, VECTORS_DIR } from "../../scripts/client-vectors";
import { tempDir } from "../helpers";

interface Index {
  site: { variant: "alpha"; iss: string; aud: string; typ: string; releaseTyp: string };
  nowSeconds: number;
  toleranceSec: number;
  keys: { license: { kid: string; spki: string; publicPem: string }[]; release: { kid: string; spki: string; publicPem: string }[] };
  device: { hash: string };
  tokens: { name: string; token: string; verdict: "valid" | "invalid"; reason?: string }[];
  lane: { product: string; channel: string; platform: string };
  manifests: { name: string; manifest: string; signature: string; verdict: "valid" | "invalid"; reason?: string }[];
  devices: { variant: "alpha" | "beta" | "gamma"; id: string; text: string; hash: string }[];
  terms: {
    name: string;
    token: string;
    verdict: "valid" | "invalid";
    reason?: string;
    answers?: { call: "hasFeature" | "feature" | "updatesUntil" | "updatesCover"; name?: string; released?: string; answer: unknown }[];
  }[];
}

const index = JSON.parse(readFileSync(join(VECTORS_DIR, "index.json"), "utf8")) as Index;
const file = (name: string) => readFileSync(join(VECTORS_DIR, name));
const expected = (v: { verdict: string; reason?: string }) => (v.verdict === "valid" ? "valid" : v.reason!);
const byName = <T extends { name: string }>(list: T[]) => Object.fromEntries(list.map((x) => [x.name, expected(x as never)]));
const work = tempDir("keyturn-vectors-");
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The bad vectors cover each way the issue names, once. */
test("the index lists a good token and one token bad in each way, a manifest with good and bad signatures, and device hashes of every variant", () => {
  expect(index.tokens.map(expected).sort()).toEqual(["alg", "aud", "device", "exp", "iss", "kid", "signature", "typ", "valid"]);
  expect(index.manifests.filter((m) => m.verdict === "valid")).toHaveLength(1);
  expect(new Set(index.manifests.map(expected))).toEqual(new Set(["valid", "signature", "typ", "kid"]));
  expect(new Set(index.devices.map((d) => d.variant))).toEqual(new Set(["alpha", "beta", "gamma"]));
});

test("the committed vectors are exactly what scripts/client-vectors.ts makes", () => {
  const made = generateVectors();
  expect(readdirSync(VECTORS_DIR).sort()).toEqual([...made.keys()].sort());
  for (const [name, text] of made) expect({ name, text: file(name).toString() }).toEqual({ name, text });
});

describe("the kit's verdicts", () => {
  const variant = clientVariant(index.site.variant);
  const licenseKeys = new KeySet(Object.fromEntries(index.keys.license.map((k) => [k.kid, k.spki])));
  const releaseKeys = new KeySet(Object.fromEntries(index.keys.release.map((k) => [k.kid, k.spki])));

  test.each(index.tokens.map((t) => [t.name, t] as const))("token %s", async (_name, t) => {
    let verdict = "valid";
    try {
      await verifyEntitlementToken(t.token, {
        variant,
        issuer: index.site.iss,
        keys: licenseKeys,
        deviceHash: index.device.hash,
        now: index.nowSeconds * 1000,
        toleranceSec: index.toleranceSec,
      });
    } catch (e) {
      verdict = (e as KeyturnClientError).reason!;
      expect((e as KeyturnClientError).code).toBe(verdict === "exp" ? "entitlement_expired" : "entitlement_invalid");
    }
    expect(verdict).toBe(expected(t));
  });

  test.each(index.manifests.map((m) => [m.name, m] as const))("manifest %s", async (_name, m) => {
    let verdict = "valid";
    try {
      const bytes = new Uint8Array(file(m.manifest));
      const kid = await verifyManifestSignature(bytes, new Uint8Array(file(m.signature)), variant, releaseKeys);
      expect(parseManifest(bytes, variant, index.lane, kid).version).toBe("1.4.2");
    } catch (e) {
      expect((e as KeyturnClientError).code).toBe("signature_invalid");
      verdict = (e as KeyturnClientError).reason!;
    }
    expect(verdict).toBe(expected(m));
  });

  test.each(index.terms.map((t) => [t.name, t] as const))(
    "terms %s: the token's verdict, then what hasFeature, feature, updatesUntil and updatesCover answer",
    async (_name, t) => {
      let verified;
      try {
        verified = await verifyEntitlementToken(t.token, {
          variant,
          issuer: index.site.iss,
          keys: licenseKeys,
          deviceHash: index.device.hash,
          now: index.nowSeconds * 1000,
          toleranceSec: index.toleranceSec,
        });
      } catch (e) {
        expect((e as KeyturnClientError).reason).toBe(t.reason!);
        expect(t.verdict).toBe("invalid");
        return;
      }
      expect(t.verdict).toBe("valid");
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString().replace(".000Z", "+00:00"));
      for (const a of t.answers!) {
        const got =
          a.call === "hasFeature"
            ? hasFeature(verified, a.name!)
            : a.call === "feature"
              ? feature(verified, a.name!)
              : a.call === "updatesUntil"
                ? iso(updatesUntil(verified))
                : updatesCover(verified, a.released!);
        expect({ ...a, got } as Record<string, unknown>).toEqual({ ...a, got: a.answer });
      }
    },
  );

  test("device hashes", async () => {
    for (const d of index.devices) {
      expect(d.text).toBe(clientVariant(d.variant).deviceTextPrefix + d.id);
      expect(await deviceHash(d.variant, d.id)).toBe(d.hash);
    }
  });
});

/** Debian's python3 (not a virtualenv's): python3-jwt is installed there. */
const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
const hasPyJwt = spawnSync(PYTHON, ["-c", "import jwt, cryptography"]).status === 0;
if (!hasPyJwt && process.env.CI === "true")
  test("python3-jwt and python3-cryptography are installed (CI must have them: .ci/run installs them)", () => {
    throw new Error(`${PYTHON} cannot import jwt and cryptography; install python3-jwt python3-cryptography`);
  });

test.skipIf(!hasPyJwt)("PyJWT (python3-jwt) agrees with every verdict", () => {
  const out = JSON.parse(execFileSync(PYTHON, [join(import.meta.dir, "check_vectors.py"), VECTORS_DIR], { encoding: "utf8" }));
  expect(out.tokens).toEqual(byName(index.tokens));
  expect(out.manifests).toEqual(byName(index.manifests));
  expect(out.devices).toEqual(index.devices.map((d) => d.hash));
  // Every terms token is signed right; PyJWT reads the same upd and ent the kit answers from.
  for (const t of index.terms) expect(out.terms[t.name].signature).toBe("valid");
  expect(out.terms["perpetual-pro"]).toEqual({
    signature: "valid",
    upd: Date.parse("2026-09-15T00:00:00Z") / 1000,
    ent: { "export-pdf": true, "max-projects": "50" },
  });
  expect(out.terms["no-terms"]).toEqual({ signature: "valid", upd: null, ent: null });
});

/** A JOSE ES256 signature (r || s) as the DER ECDSA-Sig-Value openssl reads. */
function joseToDer(sig: Buffer): Buffer {
  const int = (b: Buffer) => {
    let i = 0;
    while (i < b.length - 1 && b[i] === 0) i++;
    const v = b[i]! & 0x80 ? Buffer.concat([Buffer.from([0]), b.subarray(i)]) : b.subarray(i);
    return Buffer.concat([Buffer.from([0x02, v.length]), v]);
  };
  const body = Buffer.concat([int(sig.subarray(0, 32)), int(sig.subarray(32))]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

/** `openssl dgst -sha256 -verify` over a JWS signing input. */
function opensslVerifies(pemName: string, signingInput: string, signature: Buffer): boolean {
  if (signature.length !== 64) return false;
  writeFileSync(join(work, "data"), signingInput);
  writeFileSync(join(work, "sig.der"), joseToDer(signature));
  const r = spawnSync("openssl", ["dgst", "-sha256", "-verify", join(VECTORS_DIR, pemName), "-signature", join(work, "sig.der"), join(work, "data")], {
    encoding: "utf8",
  });
  return r.status === 0 && r.stdout.includes("Verified OK");
}

const decode = (part: string) => JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Record<string, unknown>;

test("openssl, with plain JSON checks of header and claims, agrees with every verdict", () => {
  const now = index.nowSeconds;
  const tol = index.toleranceSec;
  const tokenVerdicts = Object.fromEntries(
    index.tokens.map((t) => {
      const [h, p, s] = t.token.split(".") as [string, string, string];
      const header = decode(h);
      const claims = decode(p);
      const key = index.keys.license.find((k) => k.kid === header.kid);
      const verdict =
        header.alg !== "ES256"
          ? "alg"
          : header.typ !== index.site.typ
            ? "typ"
            : !key
              ? "kid"
              : !opensslVerifies(key.publicPem, `${h}.${p}`, Buffer.from(s, "base64url"))
                ? "signature"
                : claims.iss !== index.site.iss
                  ? "iss"
                  : claims.aud !== index.site.aud
                    ? "aud"
                    : now >= (claims.exp as number) + tol
                      ? "exp"
                      : claims.dev !== index.device.hash
                        ? "device"
                        : "valid";
      return [t.name, verdict];
    }),
  );
  expect(tokenVerdicts).toEqual(byName(index.tokens));

  const manifestVerdicts = Object.fromEntries(
    index.manifests.map((m) => {
      const [h, , s] = file(m.signature).toString().trim().split(".") as [string, string, string];
      const header = decode(h);
      const key = index.keys.release.find((k) => k.kid === header.kid);
      const verdict =
        header.alg !== "ES256"
          ? "alg"
          : header.typ !== index.site.releaseTyp
            ? "typ"
            : !key
              ? "kid"
              : !opensslVerifies(key.publicPem, `${h}.${file(m.manifest).toString("base64url")}`, Buffer.from(s, "base64url"))
                ? "signature"
                : "valid";
      return [m.name, verdict];
    }),
  );
  expect(manifestVerdicts).toEqual(byName(index.manifests));
});
