import { describe, expect, test } from "bun:test";
import { VARIANTS } from "../../src/config/variants";
import { generateLicenseKey, hashLicenseKey, normalizeLicenseKey } from "../../src/domain/license-key";

describe("license keys", () => {
  for (const v of Object.values(VARIANTS))
    test(`${v.name}: ${v.keyPrefix}-XXXXX-XXXXX-XXXXX-XXXXX-XXXXX in Crockford base32`, () => {
      const keys = new Set(Array.from({ length: 200 }, () => generateLicenseKey(v)));
      expect(keys.size).toBe(200);
      for (const key of keys) {
        expect(key).toMatch(new RegExp(`^${v.keyPrefix}(-[0-9A-HJKMNP-TV-Z]{5}){5}$`));
        expect(normalizeLicenseKey(v, key)).toBe(key);
      }
    });

  const alpha = VARIANTS.alpha;
  test("trimmed, upper-cased; O reads as 0 and I or L as 1 inside the groups only", () => {
    expect(normalizeLicenseKey(alpha, "  al-oooo1-iiLLl-abcde-fghjk-mnpqr \n")).toBe("AL-00001-11111-ABCDE-FGHJK-MNPQR");
  });

  test("typed without dashes, with spaces, split across lines or with a typographic dash: the dashes are put back", () => {
    const key = "AL-Q0V6A-A0KE5-5H9WD-5RSFF-G471A";
    for (const typed of [
      "ALQ0V6AA0KE55H9WD5RSFFG471A",
      "al q0v6a a0ke5 5h9wd 5rsff g471a",
      "AL-Q0V6A A0KE5\n5H9WD-5RSFF G471A",
      "AL\u2013Q0V6A\u2013A0KE5\u20135H9WD\u20135RSFF\u2013G471A",
      "AL-Q0V6AA0KE5-5H9WD5RSFF-G471A",
    ])
      expect(normalizeLicenseKey(alpha, typed)).toBe(key);
  });

  test("another variant's prefix, too few or too many characters or a character outside the alphabet is no key", () => {
    for (const bad of [
      "BE-00000-00000-00000-00000-00000",
      "AL-00000-00000-00000-00000",
      "AL-00000-00000-00000-00000-0000U",
      "AL000000000000000000000000",
      "",
      "AL-00000-00000-00000-00000-00000-00000",
      "AL-00000-00000-00000-00000-0000*",
    ])
      expect(normalizeLicenseKey(alpha, bad)).toBeNull();
  });

  test("stored as SHA-256 hex of the canonical key", () => {
    const h = hashLicenseKey("AL-00000-00000-00000-00000-00000");
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(h).toBe(new Bun.CryptoHasher("sha256").update("AL-00000-00000-00000-00000-00000").digest("hex"));
  });
});
