import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { createHash, createPrivateKey } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  CLIENT_VARIANTS,
  compareVersions,
  KeySet,
  KeyturnClient,
  KeyturnClientError,
  loadDeviceId,
  offlineRequestCode,
  parseManifest,
  readOfflineRequestCode,
  verifyEntitlementToken,
  type VariantName,
} from "../../src/client";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles } from "../../src/domain/keys";
import { compareVersions as siteCompareVersions } from "../../src/domain/releases/version-order";
import { TokenSigner } from "../../src/domain/tokens";
import { nonce, signEs256 } from "../../scripts/deterministic-ecdsa";
import { tempDir } from "../helpers";

const dir = tempDir("keyturn-kit-unit-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the kit's variant table agrees with the site's", () => {
  for (const name of Object.keys(VARIANTS) as VariantName[]) {
    const { deviceTextPrefix, tokenTyp, audience, manifestFile, releaseTyp, products } = VARIANTS[name];
    expect(CLIENT_VARIANTS[name]).toEqual({ name, deviceTextPrefix, tokenTyp, audience, manifestFile, releaseTyp, products });
  }
});

test("versions order as semver does, pre-releases included, and as the site orders them", () => {
  const ordered = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.9.0",
    "1.10.0",
    "2.0.0",
  ];
  for (let i = 0; i < ordered.length; i++)
    for (let j = 0; j < ordered.length; j++) {
      const want = Math.sign(i - j);
      expect([ordered[i], ordered[j], Math.sign(compareVersions(ordered[i]!, ordered[j]!))]).toEqual([ordered[i], ordered[j], want]);
      expect(Math.sign(siteCompareVersions(ordered[i]!, ordered[j]!))).toBe(want);
    }
  expect(compareVersions("1.2.0+build.7", "1.2.0")).toBe(0);
});

test("the device identifier is made once and kept by the caller's storage; a damaged one is replaced", async () => {
  let stored: string | null = null;
  const storage = { read: () => stored, write: (v: string) => void (stored = v) };
  const id = await loadDeviceId(storage);
  expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(await loadDeviceId(storage)).toBe(id);
  stored = "not an id!";
  const fresh = await loadDeviceId(storage);
  expect(fresh).not.toBe(id);
  expect(stored!).toBe(fresh);
});

describe("offline token checks: tolerance and the clock-rollback guard", () => {
  const kid = VARIANTS.gamma.defaultLicenseKid;
  const { spki } = generateKeyFiles(dir, kid);
  const signer = new TokenSigner(VARIANTS.gamma, "https://licenses.example.com", {
    kid,
    privateKey: createPrivateKey(readFileSync(join(dir, `${kid}.pem`), "utf8")),
  });
  const dev = "d".repeat(43);
  const t0 = Date.parse("2026-11-21T12:00:00Z");
  const { token } = signer.sign({ sub: "act_x", kind: "license", lic: "lic_x", name: "N", org: "O", plan: "p", chn: ["stable"], dev }, t0, t0 + 3600_000);
  const check = (now: number, lastSeen?: number) =>
    verifyEntitlementToken(token, {
      variant: CLIENT_VARIANTS.gamma,
      issuer: "https://licenses.example.com",
      keys: new KeySet({ [kid]: spki }),
      deviceHash: dev,
      now,
      toleranceSec: 60,
      ...(lastSeen !== undefined ? { lastSeen } : {}),
    });
  const codeOf = async (p: Promise<unknown>) =>
    p.then(
      () => "valid",
      (e: KeyturnClientError) => e.code,
    );

  test("exp is honoured with 60 s of tolerance, and not a second more", async () => {
    expect(await codeOf(check(t0 + 3600_000 + 59_000))).toBe("valid");
    expect(await codeOf(check(t0 + 3600_000 + 60_000))).toBe("entitlement_expired");
  });

  test("a token issued in the clock's future, or a clock behind the last seen time, is a rollback", async () => {
    expect(await codeOf(check(t0 - 60_000))).toBe("valid");
    expect(await codeOf(check(t0 - 61_000))).toBe("clock_rollback");
    const { seen } = await check(t0 + 1000);
    expect(seen).toBe(t0 + 1000);
    expect((await check(t0, t0 + 1000)).seen).toBe(t0 + 1000);
    expect(await codeOf(check(t0 + 10_000, t0 + 10 * 60_000))).toBe("clock_rollback");
  });

  test("a token carries the license's own expiry as lex, which the kit reads back; a lex that is not a time is refused", async () => {
    const end = Date.parse("2027-12-31T00:00:00Z") / 1000;
    const claims = { sub: "act_x", kind: "license" as const, lic: "lic_x", name: "N", org: "O", plan: "p", chn: ["stable"], dev };
    const withTerm = signer.sign({ ...claims, lex: end }, t0, t0 + 3600_000).token;
    const keys = new KeySet({ [kid]: spki });
    const opts = { variant: CLIENT_VARIANTS.gamma, issuer: "https://licenses.example.com", keys, deviceHash: dev, now: t0, toleranceSec: 60 };
    expect((await verifyEntitlementToken(withTerm, opts)).claims.lex).toBe(end);
    expect((await check(t0)).claims.lex).toBeUndefined();
    const bad = signer.sign({ ...claims, lex: "2027" as unknown as number }, t0, t0 + 3600_000).token;
    expect(
      await verifyEntitlementToken(bad, opts).then(
        () => "valid",
        (e: KeyturnClientError) => e.reason,
      ),
    ).toBe("claims");
  });
});

test("the client takes the site's iss and the transport URL apart, and refuses plain http off loopback", () => {
  const base = { variant: "gamma" as const, licenseKeys: {} };
  expect(() => new KeyturnClient({ ...base, issuer: "http://licenses.example.com" })).toThrow(/https/);
  expect(() => new KeyturnClient({ ...base, issuer: "https://licenses.example.com", baseUrl: "http://10.0.0.5:8080" })).toThrow(/loopback/);
  const c = new KeyturnClient({ ...base, issuer: "https://licenses.example.com/", baseUrl: "http://127.0.0.1:8080" });
  expect(c.issuer).toBe("https://licenses.example.com");
  expect(c.updatePath("gamma-update.json")).toBe("/updates/stable/win-x64/gamma-update.json");
  expect(() => new KeyturnClient({ ...base, issuer: "https://x.example", product: "alpha" })).toThrow(/no products/);
});

test("a signed manifest for another lane is refused", () => {
  const bytes = new TextEncoder().encode(
    JSON.stringify({
      product: "alpha-cli",
      channel: "stable",
      platform: "win-x64",
      version: "1.0.0",
      released: "2026-11-01T00:00:00+00:00",
      installer: "a.exe",
      size: 1,
      sha256: "0".repeat(64),
    }),
  );
  const lane = { product: "alpha", channel: "stable", platform: "win-x64" };
  expect(() => parseManifest(bytes, CLIENT_VARIANTS.alpha, lane, "k")).toThrow(expect.objectContaining({ code: "manifest_invalid" }));
  expect(parseManifest(bytes, CLIENT_VARIANTS.alpha, { ...lane, product: "alpha-cli" }, "k").version).toBe("1.0.0");
});

test("an offline request code is the activate body, which `basenc --base64url -d` reads back for curl", () => {
  const device = { hash: "h".repeat(43), name: "Büro-PC", platform: "win-x64", version: "1.0.0", product: "alpha" };
  const code = offlineRequestCode({ key: " AL-AAAAA-BBBBB-CCCCC-DDDDD-EEEEE ", device });
  expect(code).toMatch(/^[A-Za-z0-9_-]+={0,2}$/);
  const body = { key: "AL-AAAAA-BBBBB-CCCCC-DDDDD-EEEEE", device };
  expect(readOfflineRequestCode(code)).toEqual(body);
  expect(JSON.parse(execFileSync("basenc", ["--base64url", "-d"], { input: code, encoding: "utf8" }))).toEqual(body);
  expect(() => readOfflineRequestCode("not a code!")).toThrow(expect.objectContaining({ code: "bad_request_code" }));
});

test("the vectors' signer gives RFC 6979's answer for P-256 with SHA-256 (appendix A.2.5, message \"sample\")", () => {
  const d = 0xc9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721n;
  expect(nonce(d, createHash("sha256").update("sample").digest()).toString(16)).toBe("a6e3c57dd01abe90086538398355dd4c3b17aa873382b0f24d6129493d8aad60");
  expect(signEs256(d, Buffer.from("sample")).toString("hex")).toBe(
    "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8",
  );
});
