import { describe, expect, test } from "bun:test";
import type { FileIdentity } from "../../src/domain/releases/files";
import { VerifiedInstallers } from "../../src/domain/releases/verified-installers";

const sha256Of = (n: number) => new Bun.CryptoHasher("sha256").update(`installer ${n}`).digest("hex");
const sha512Of = (n: number) => new Bun.CryptoHasher("sha512").update(`installer ${n}`).digest("base64");
/** A file's identity as lstat gives it: device, inode, size, and fractional mtime and ctime in ms. */
const idOf = (n: number, dev = 65024): FileIdentity => [dev, 2_337_583 + n, 16 + n, 1_795_771_771_257.3953 + n, 1_795_771_772_629.3953 + n];

describe("verified installers, packed", () => {
  test("an entry is found only by all five numbers of its identity and its SHA-256", () => {
    const verified = new VerifiedInstallers();
    verified.set(idOf(1), sha256Of(1), sha512Of(1));
    expect(verified.sha512Of(idOf(1), sha256Of(1))).toBe(sha512Of(1));
    expect(verified.has(idOf(1), sha256Of(1))).toBe(true);
    for (let field = 0; field < 5; field++) {
      const other = [...idOf(1)] as [number, number, number, number, number];
      // A time a microsecond later (lstat's times are nanoseconds) is another file.
      other[field] = other[field]! + (field >= 3 ? 0.001 : 1);
      expect(verified.sha512Of(other, sha256Of(1))).toBeNull();
      expect(verified.has(other, sha256Of(1))).toBe(false);
    }
    expect(verified.sha512Of(idOf(1), sha256Of(2))).toBeNull();
    expect(verified.sha512Of(idOf(1), sha256Of(1).toUpperCase())).toBeNull();
  });

  test("thousands of entries grow the arrays past what was expected; the same inode on two devices is two files", () => {
    const verified = new VerifiedInstallers(4);
    for (let n = 0; n < 5_000; n++) verified.set(idOf(n), sha256Of(n), sha512Of(n));
    verified.set(idOf(7, 2049), sha256Of(7), sha512Of(70));
    expect(verified.size).toBe(5_001);
    for (const n of [0, 1, 3, 4, 5, 2_500, 4_999]) expect(verified.sha512Of(idOf(n), sha256Of(n))).toBe(sha512Of(n));
    expect(verified.sha512Of(idOf(7), sha256Of(7))).toBe(sha512Of(7));
    expect(verified.sha512Of(idOf(7, 2049), sha256Of(7))).toBe(sha512Of(70));
    expect(verified.sha512Of(idOf(5_000), sha256Of(5_000))).toBeNull();
  });

  test("setting a known entry again replaces its SHA-512 and adds nothing; entries() gives back exactly what was set", () => {
    const verified = new VerifiedInstallers();
    verified.set(idOf(1), sha256Of(1), sha512Of(9));
    verified.set(idOf(2), sha256Of(2), sha512Of(2));
    verified.set(idOf(1), sha256Of(1), sha512Of(1));
    expect(verified.size).toBe(2);
    expect([...verified.entries()]).toEqual([
      [idOf(1), sha256Of(1), sha512Of(1)],
      [idOf(2), sha256Of(2), sha512Of(2)],
    ]);
  });

  test("what is not a SHA-256 or a SHA-512 is refused rather than stored as other bytes", () => {
    const verified = new VerifiedInstallers();
    expect(() => verified.set(idOf(1), "zz".repeat(32), sha512Of(1))).toThrow();
    expect(() => verified.set(idOf(1), sha256Of(1), "AAAA")).toThrow();
    expect(verified.size).toBe(0);
    expect(verified.has(idOf(1), sha256Of(1))).toBe(false);
  });
});
