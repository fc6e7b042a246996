/**
 * Writes docs/clients/vectors/: fixed keys, good and bad entitlement tokens, a manifest with good
 * and bad signatures, and device hashes per variant, each with its expected verdict in index.json.
 * Every run writes the same bytes (fixed keys, fixed times, RFC 6979 nonces); a test compares the
 * committed files with what this script makes. Run: `bun scripts/client-vectors.ts`.
 */
import { createHash, createHmac, createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CLIENT_VARIANTS, type VariantName } from "../src/client/variants";
import { privateScalarBytes, publicOf, scalarFrom, signEs256 } from "./deterministic-ecdsa";
import { installReportVectors } from "./install-report-vectors";

export const VECTORS_DIR = join(import.meta.dir, "..", "docs", "clients", "vectors");

const b64url = (data: string | Uint8Array) => Buffer.from(data).toString("base64url");
const seconds = (iso: string) => Date.parse(iso) / 1000;

const SITE = { variant: "alpha" as const, iss: "https://licenses.example.com" };
const NOW = "2026-12-01T00:00:00+00:00";
const IAT = seconds("2026-01-01T00:00:00Z");
const EXP = seconds("2099-12-31T00:00:00Z");
const EXPIRED = seconds("2026-01-02T00:00:00Z");

interface FixedKey {
  readonly kid: string;
  readonly d: bigint;
  readonly publicKey: KeyObject;
  readonly privatePem: string;
}

function fixedKey(kid: string, seed: string): FixedKey {
  const d = scalarFrom(seed);
  const jwk = { kty: "EC", crv: "P-256", ...publicOf(d), d: b64url(privateScalarBytes(d)) };
  const privateKey = createPrivateKey({ key: jwk, format: "jwk" });
  return { kid, d, publicKey: createPublicKey(privateKey), privatePem: privateKey.export({ type: "pkcs8", format: "pem" }) as string };
}

const spki = (k: FixedKey) => (k.publicKey.export({ type: "spki", format: "der" }) as Buffer).toString("base64");
const publicPem = (k: FixedKey) => k.publicKey.export({ type: "spki", format: "pem" }) as string;

function jws(header: object, payload: Uint8Array | string, sign: (input: Buffer) => Buffer): string {
  const input = `${b64url(JSON.stringify(header))}.${b64url(payload)}`;
  return `${input}.${b64url(sign(Buffer.from(input)))}`;
}

export function deviceHashOf(variant: VariantName, id: string): string {
  return createHash("sha256")
    .update(CLIENT_VARIANTS[variant].deviceTextPrefix + id)
    .digest("base64url");
}

/** Every file of the vectors directory, by name, with its exact contents. */
export function generateVectors(): Map<string, string> {
  const v = CLIENT_VARIANTS[SITE.variant];
  const license = fixedKey(`${v.name}-license-2026-10`, "keyturn client vectors: license key");
  const release = fixedKey(`${v.name}-release-2026-11`, "keyturn client vectors: release key");
  const stranger = fixedKey(`${v.name}-release-2026-11`, "keyturn client vectors: a key the program does not hold");
  const files = new Map<string, string>();
  files.set("license.pub.pem", publicPem(license));
  files.set("license.private.pem", license.privatePem);
  files.set("release.pub.pem", publicPem(release));
  files.set("release.private.pem", release.privatePem);

  const deviceId = "vectors-device-0001";
  const dev = deviceHashOf(v.name, deviceId);
  const header = { alg: "ES256", typ: v.tokenTyp, kid: license.kid };
  const claims = {
    iss: SITE.iss,
    aud: v.audience,
    sub: "act_01kvectors0000000000000000",
    jti: "vectorsjti0000000000000000",
    iat: IAT,
    nbf: IAT,
    exp: EXP,
    kind: "license",
    lic: "lic_01kvectors0000000000000000",
    name: "Vector Licensee",
    org: "Vector Org",
    plan: "pro",
    chn: ["stable"],
    dev,
  };
  const es256 = (key: FixedKey) => (input: Buffer) => signEs256(key.d, input);
  const good = jws(header, JSON.stringify(claims), es256(license));
  const [gh, , gs] = good.split(".");
  const tokens = [
    { name: "good", token: good, verdict: "valid" },
    {
      name: "alg",
      verdict: "invalid",
      reason: "alg",
      why: "HS256 keyed with the license key's SPKI bytes (key confusion); otherwise the good token",
      token: jws({ ...header, alg: "HS256" }, JSON.stringify(claims), (i) =>
        createHmac("sha256", Buffer.from(spki(license), "base64"))
          .update(i)
          .digest(),
      ),
    },
    { name: "typ", verdict: "invalid", reason: "typ", why: "typ JWT", token: jws({ ...header, typ: "JWT" }, JSON.stringify(claims), es256(license)) },
    { name: "aud", verdict: "invalid", reason: "aud", why: "aud beta", token: jws(header, JSON.stringify({ ...claims, aud: "beta" }), es256(license)) },
    {
      name: "iss",
      verdict: "invalid",
      reason: "iss",
      why: "iss of another site",
      token: jws(header, JSON.stringify({ ...claims, iss: "https://other.example.com" }), es256(license)),
    },
    {
      name: "kid",
      verdict: "invalid",
      reason: "kid",
      why: "kid names no key the program holds (signed by the license key)",
      token: jws({ ...header, kid: `${v.name}-license-2099-01` }, JSON.stringify(claims), es256(license)),
    },
    {
      name: "exp",
      verdict: "invalid",
      reason: "exp",
      why: "expired on 2026-01-02",
      token: jws(header, JSON.stringify({ ...claims, exp: EXPIRED }), es256(license)),
    },
    {
      name: "signature",
      verdict: "invalid",
      reason: "signature",
      why: "the good token's signature over a payload changed after signing (chn gained preview)",
      token: `${gh}.${b64url(JSON.stringify({ ...claims, chn: ["stable", "preview"] }))}.${gs}`,
    },
    {
      name: "device",
      verdict: "invalid",
      reason: "device",
      why: "dev is another installation's hash",
      token: jws(header, JSON.stringify({ ...claims, dev: deviceHashOf(v.name, "vectors-device-0002") }), es256(license)),
    },
  ];

  const manifest = Buffer.from(
    JSON.stringify(
      {
        product: "alpha",
        channel: "stable",
        platform: "win-x64",
        version: "1.4.2",
        released: "2026-11-01T09:00:00+00:00",
        installer: "alpha-1.4.2-win-x64.exe",
        size: 3840,
        sha256: createHash("sha256").update("vectors installer").digest("hex"),
        notes: "Vector release.",
        minimumVersion: "1.2.0",
        critical: false,
      },
      null,
      2,
    ) + "\n",
  );
  const tamperedManifest = Buffer.from(manifest.toString().replace('"1.4.2"', '"1.4.3"'));
  const detached = (h: object, key: FixedKey, payload: Buffer = manifest) => {
    const [hp, , sp] = jws(h, payload, es256(key)).split(".");
    return `${hp}..${sp}\n`;
  };
  const relHeader = { alg: "ES256", kid: release.kid, typ: v.releaseTyp };
  files.set("manifest.json", manifest.toString());
  files.set("manifest-tampered.json", tamperedManifest.toString());
  files.set("manifest.json.sig", detached(relHeader, release));
  files.set("other-key.sig", detached(relHeader, stranger));
  files.set("wrong-typ.sig", detached({ ...relHeader, typ: "JWT" }, release));
  files.set("unknown-kid.sig", detached({ ...relHeader, kid: `${v.name}-release-2099-01` }, release));
  const lane = { product: "alpha", channel: "stable", platform: "win-x64" };
  const manifests = [
    { name: "good", manifest: "manifest.json", signature: "manifest.json.sig", verdict: "valid" },
    {
      name: "tampered",
      manifest: "manifest-tampered.json",
      signature: "manifest.json.sig",
      verdict: "invalid",
      reason: "signature",
      why: "version changed after signing",
    },
    {
      name: "other-key",
      manifest: "manifest.json",
      signature: "other-key.sig",
      verdict: "invalid",
      reason: "signature",
      why: "signed by another key under the release kid",
    },
    { name: "typ", manifest: "manifest.json", signature: "wrong-typ.sig", verdict: "invalid", reason: "typ", why: "typ JWT" },
    {
      name: "kid",
      manifest: "manifest.json",
      signature: "unknown-kid.sig",
      verdict: "invalid",
      reason: "kid",
      why: "kid names no release key the program holds",
    },
  ];

  // A licence's terms (docs/clients.md "Features and the maintenance window"): what hasFeature,
  // feature, updatesUntil and updatesCover answer for a token, and two tokens whose terms are malformed.
  const WINDOW = seconds("2026-09-15T00:00:00Z");
  const withTerms = { ...claims, upd: WINDOW, ent: { "export-pdf": true, "max-projects": "50" } };
  const terms = [
    {
      name: "perpetual-pro",
      verdict: "valid",
      why: "updates until 2026-09-15, features export-pdf and max-projects=50",
      token: jws(header, JSON.stringify(withTerms), es256(license)),
      answers: [
        { call: "hasFeature", name: "export-pdf", answer: true },
        { call: "hasFeature", name: "ai-credits", answer: false },
        { call: "feature", name: "export-pdf", answer: true },
        { call: "feature", name: "max-projects", answer: "50" },
        { call: "feature", name: "ai-credits", answer: null },
        { call: "updatesUntil", answer: "2026-09-15T00:00:00+00:00" },
        { call: "updatesCover", released: "2026-09-15T00:00:00+00:00", answer: true },
        { call: "updatesCover", released: "2026-09-15T00:00:01+00:00", answer: false },
      ],
    },
    {
      name: "no-terms",
      verdict: "valid",
      why: "the good token: no upd, no ent",
      token: good,
      answers: [
        { call: "hasFeature", name: "export-pdf", answer: false },
        { call: "feature", name: "export-pdf", answer: null },
        { call: "updatesUntil", answer: null },
        { call: "updatesCover", released: "2099-01-01T00:00:00+00:00", answer: true },
      ],
    },
    {
      name: "upd-text",
      verdict: "invalid",
      reason: "claims",
      why: "upd is text, not seconds",
      token: jws(header, JSON.stringify({ ...withTerms, upd: "2026-09-15" }), es256(license)),
    },
    {
      name: "ent-list",
      verdict: "invalid",
      reason: "claims",
      why: "ent is a list, not an object",
      token: jws(header, JSON.stringify({ ...withTerms, ent: ["export-pdf"] }), es256(license)),
    },
  ];

  const devices = (Object.keys(CLIENT_VARIANTS) as VariantName[]).flatMap((variant) =>
    [deviceId, "0123456789abcdef0123456789abcdef"].map((id) => ({
      variant,
      id,
      text: CLIENT_VARIANTS[variant].deviceTextPrefix + id,
      hash: deviceHashOf(variant, id),
    })),
  );

  const index = {
    about:
      "keyturn client test vectors (docs/clients.md). Generated by `bun scripts/client-vectors.ts`; do not edit by hand. The private keys are public test material: never use them for anything else.",
    site: { variant: v.name, iss: SITE.iss, aud: v.audience, typ: v.tokenTyp, releaseTyp: v.releaseTyp },
    now: NOW,
    nowSeconds: seconds(NOW),
    toleranceSec: 60,
    verdictsHold: "for any now from 2026-01-02T00:01:00Z to 2099-12-30T23:59:00Z (tokens: iat 2026-01-01, exp 2099-12-31; the exp token expired 2026-01-02)",
    keys: {
      license: [{ kid: license.kid, spki: spki(license), publicPem: "license.pub.pem", privatePem: "license.private.pem" }],
      release: [{ kid: release.kid, spki: spki(release), publicPem: "release.pub.pem", privatePem: "release.private.pem" }],
    },
    device: { variant: v.name, id: deviceId, hash: dev },
    tokens,
    lane,
    manifests,
    devices,
    terms,
  };
  files.set("index.json", JSON.stringify(index, null, 2) + "\n");
  for (const [name, text] of installReportVectors()) files.set(name, text);
  return files;
}

export function writeVectors(dir = VECTORS_DIR): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of generateVectors()) writeFileSync(join(dir, name), text);
}

if (import.meta.main) {
  writeVectors();
  console.log(`wrote ${readdirSync(VECTORS_DIR).length} files to ${VECTORS_DIR}`);
}
