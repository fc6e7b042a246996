import { describe, expect, test } from "bun:test";
import { VARIANTS } from "../../src/config/variants";
import { isInstallerName, parseManifest } from "../../src/domain/releases/manifest";
import { compareVersions } from "../../src/domain/releases/version-order";

const alpha = VARIANTS.alpha;
const gamma = VARIANTS.gamma;
const place = { product: "alpha", channel: "stable", platform: "win-x64" };
const good = {
  product: "alpha",
  channel: "stable",
  platform: "win-x64",
  version: "1.2.0",
  released: "2026-11-01T10:00:00+02:00",
  installer: "alpha-1.2.0.exe",
  size: 1234,
  sha256: "a".repeat(64),
};
const bytes = (doc: unknown) => Buffer.from(typeof doc === "string" ? doc : JSON.stringify(doc));
const problemOf = (doc: unknown, v = alpha, p: typeof place | { product: null; channel: string; platform: string } = place) => {
  try {
    parseManifest(bytes(doc), v, p);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
};

describe("manifest (design.md: product, channel, platform, version, released, installer, size, sha256, notes?, minimumVersion?, critical?)", () => {
  test("a valid manifest parses, with released in ms; the optional fields are checked but not kept (clients get them in the bytes)", () => {
    const m = parseManifest(bytes({ ...good, notes: "n", minimumVersion: "1.0.0", critical: true, vendorField: 1 }), alpha, place);
    expect(m).toEqual({ ...good, released: Date.parse("2026-11-01T08:00:00Z"), rollout: null, feeds: null });
  });

  test("sha512, when stated (release make writes it), is kept for release sign and release check to verify", () => {
    expect(parseManifest(bytes({ ...good, sha512: "b".repeat(128) }), alpha, place).sha512).toBe("b".repeat(128));
  });

  test.each([
    ["not JSON", "{", "alpha-update.json is not valid JSON"],
    ["an array", "[]", "not a JSON object"],
    ["no product", { ...good, product: undefined }, "manifest has no product"],
    ["unknown product", { ...good, product: "beta" }, "manifest product must be one of alpha, alpha-cli"],
    ["bad channel", { ...good, channel: "nightly" }, "manifest channel must be one of stable, preview"],
    ["sha512 in upper case", { ...good, sha512: "A".repeat(128) }, "manifest sha512 must be 128 lower-case hex digits"],
    ["sha512 too short", { ...good, sha512: "a".repeat(64) }, "manifest sha512 must be 128 lower-case hex digits"],
    ["bad platform", { ...good, platform: "linux" }, "manifest platform"],
    ["no version", { ...good, version: undefined }, "manifest has no version"],
    ["version with a slash", { ...good, version: "1/2" }, "manifest version"],
    ["released without offset", { ...good, released: "2026-11-01T10:00:00" }, "manifest released"],
    ["released not a date", { ...good, released: "yesterday" }, "manifest released"],
    ["installer with a path", { ...good, installer: "sub/setup.exe" }, "manifest installer"],
    ["installer with backslash", { ...good, installer: "..\\setup.exe" }, "manifest installer"],
    ["installer with ..", { ...good, installer: "a..exe" }, "manifest installer"],
    ["hidden installer", { ...good, installer: ".setup.exe" }, "manifest installer"],
    ["installer named as the manifest", { ...good, installer: "alpha-update.json" }, "must not be the manifest"],
    ["installer named as the signature", { ...good, installer: "alpha-update.json.sig" }, "must not be the manifest"],
    ["negative size", { ...good, size: -1 }, "manifest size"],
    ["fractional size", { ...good, size: 1.5 }, "manifest size"],
    ["upper-case sha256", { ...good, sha256: "A".repeat(64) }, "manifest sha256"],
    ["short sha256", { ...good, sha256: "a".repeat(63) }, "manifest sha256"],
    ["critical not boolean", { ...good, critical: "yes" }, "manifest critical"],
  ])("refuses %s", (_name, doc, reason) => {
    expect(problemOf(doc)).toContain(reason);
  });

  test("must agree with its folder: product, channel and platform", () => {
    expect(problemOf(good, alpha, { ...place, channel: "preview" })).toBe("manifest says channel stable, but the folder is under preview");
    expect(problemOf(good, alpha, { ...place, product: "alpha-cli" })).toBe("manifest says product alpha, but the folder is under alpha-cli");
  });

  test("gamma has no product level: a product field is refused, none is required", () => {
    const { product: _, ...gammaDoc } = good;
    const gammaPlace = { product: null, channel: "stable", platform: "win-x64" };
    expect(problemOf(gammaDoc, gamma, gammaPlace)).toBeNull();
    expect(problemOf(good, gamma, gammaPlace)).toContain("gamma has no products");
  });

  test("installer names: bare names only", () => {
    for (const ok of ["setup.exe", "alpha-1.2.0-win-x64.exe", "A_b+c.msi"]) expect(isInstallerName(ok)).toBe(true);
    for (const bad of ["", ".", "..", "../x", "a/b", "a\\b", "%2e%2e", "a\u0000b", ".hidden", "a..b", "x".repeat(201), "/etc/passwd", "C:x"])
      expect(isInstallerName(bad)).toBe(false);
  });
});

describe("version order", () => {
  test("numeric parts compare as numbers, pre-releases before their release", () => {
    const sorted = ["1.10.0", "1.2.0", "1.2.0-beta.1", "1.2.0-beta.10", "1.2.0-beta.2", "2.0.0", "1.2.0-alpha", "1.2.0+build.5"].sort(compareVersions);
    expect(sorted).toEqual(["1.2.0-alpha", "1.2.0-beta.1", "1.2.0-beta.2", "1.2.0-beta.10", "1.2.0", "1.2.0+build.5", "1.10.0", "2.0.0"]);
  });
});
