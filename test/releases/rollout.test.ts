import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { VARIANTS } from "../../src/config/variants";
import { laneName } from "../../src/domain/releases/release-controls";
import { admittedAfterMs, bucketOf, FULL, parseRollout, thresholdOf } from "../../src/domain/releases/rollout";
import { deviceHash } from "../helpers";

// The bucket formula (design.md "Staged rollouts"), checked against an independent computation:
// u = first 8 bytes of SHA-256("<dev>:<lane>:<version>") big-endian / 2^64 (node:crypto here), and
// the verdict u < share decided by python3 with exact fractions.

const DAY = 86_400_000;
const TWO64 = 1n << 64n;

/** u × 2^64, computed with node:crypto (not the code under test's hasher). */
const uInt = (dev: string, lane: string, version: string) => BigInt("0x" + createHash("sha256").update(`${dev}:${lane}:${version}`).digest("hex").slice(0, 16));

/** python3's verdicts with exact fractions: each case is [dev, lane, version, share as "num/den"]. */
function pythonVerdicts(cases: [string, string, string, string][]): boolean[] {
  const program = `
import hashlib, json, sys
from fractions import Fraction
out = []
for dev, lane, version, share in json.load(sys.stdin):
    u = Fraction(int.from_bytes(hashlib.sha256(f"{dev}:{lane}:{version}".encode()).digest()[:8], "big"), 2**64)
    out.append(u < Fraction(share))
print(json.dumps(out))`;
  const r = Bun.spawnSync(["python3", "-c", program], { stdin: Buffer.from(JSON.stringify(cases)) });
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  return JSON.parse(r.stdout.toString());
}

/** The admission the code under test gives: bucket < threshold. */
const admitted = (dev: string, lane: string, version: string, threshold: bigint) => bucketOf(dev, lane, version) < threshold;

/** A double as an exact fraction, for python. */
function exact(x: number): { num: bigint; den: bigint } {
  let den = 1n;
  while (!Number.isInteger(x)) (x *= 2), (den *= 2n);
  return { num: BigInt(x), den };
}

const nextUp = (x: number) => {
  const b = new Float64Array([x]);
  new BigInt64Array(b.buffer)[0]! += 1n;
  return b[0]!;
};
const nextDown = (x: number) => {
  const b = new Float64Array([x]);
  new BigInt64Array(b.buffer)[0]! -= 1n;
  return b[0]!;
};

describe("the bucket: first 8 bytes of SHA-256(dev:lane:version), big-endian", () => {
  test.each(["alpha", "beta", "gamma"] as const)("%s: equals node:crypto's, lane named as the variant names it", (variant) => {
    const v = VARIANTS[variant];
    const lane = laneName(v.products[0] ?? null, "stable", "win-x64");
    expect(lane).toBe(variant === "gamma" ? "stable/win-x64" : `${v.products[0]}/stable/win-x64`);
    for (let i = 0; i < 20; i++) {
      const dev = deviceHash(variant);
      expect(bucketOf(dev, lane, "2.0.0")).toBe(uInt(dev, lane, "2.0.0"));
    }
  });
});

describe("percent: u < percent/100, exactly at the boundary", () => {
  test.each(["alpha", "beta", "gamma"] as const)("%s: shares just over and just under each installation's u, against python's exact verdict", (variant) => {
    const v = VARIANTS[variant];
    const lane = laneName(v.products[0] ?? null, "preview", "win-x64");
    const cases: [string, string, string, string][] = [];
    const ours: boolean[] = [];
    for (let i = 0; i < 30; i++) {
      const dev = deviceHash(variant);
      const u = uInt(dev, lane, "3.1.0");
      // The double closest to u × 100 and two on either side of it: u × 100 lies between two of them.
      const near = Number(u * 100n) / 2 ** 64;
      for (const percent of [nextDown(nextDown(near)), nextDown(near), near, nextUp(near), nextUp(nextUp(near))]) {
        const { num, den } = exact(percent);
        cases.push([dev, lane, "3.1.0", `${num}/${den * 100n}`]);
        ours.push(admitted(dev, lane, "3.1.0", thresholdOf({ percent }, 0)));
      }
    }
    const theirs = pythonVerdicts(cases);
    expect(ours).toEqual(theirs);
    // The window really straddles: some admitted, some not.
    expect(theirs.some(Boolean) && theirs.some((x) => !x)).toBe(true);
  });

  test("0 % admits no one, 100 % everyone (u < 1 always)", () => {
    expect(thresholdOf({ percent: 0 }, 0)).toBe(0n);
    expect(thresholdOf({ percent: 100 }, 0)).toBe(FULL);
    expect(thresholdOf(null, 0)).toBe(FULL);
  });

  test("a 10 % rollout over 10,000 synthetic installations admits 10 % ± 1 %", () => {
    const t = thresholdOf({ percent: 10 }, 0);
    let n = 0;
    for (let i = 0; i < 10_000; i++) if (admitted(deviceHash("alpha", `synthetic-${i}`), "alpha/stable/win-x64", "2.0.0", t)) n++;
    expect(n).toBeGreaterThanOrEqual(900);
    expect(n).toBeLessThanOrEqual(1100);
  });
});

describe("days: a linear ramp, u < (now − released) / (D days), to the millisecond", () => {
  test.each(["alpha", "beta", "gamma"] as const)("%s: one ms before an installation's moment it is out, at it it is in (python agrees)", (variant) => {
    const v = VARIANTS[variant];
    const lane = laneName(v.products.at(-1) ?? null, "stable", "win-x64");
    const cases: [string, string, string, string][] = [];
    const ours: boolean[] = [];
    const expected: boolean[] = [];
    for (const days of [10, 0.5, 7.25]) {
      for (let i = 0; i < 10; i++) {
        const dev = deviceHash(variant);
        const u = uInt(dev, lane, "4.0.0");
        // Independently: the first whole ms e with e / (days × DAY) > u / 2^64.
        const daysDen = days === 0.5 ? 2n : days === 7.25 ? 4n : 1n;
        const daysNum = BigInt(days * Number(daysDen));
        const first = Number((u * daysNum * BigInt(DAY)) / (daysDen * TWO64)) + 1;
        expect(admittedAfterMs({ days }, u)).toBe(first);
        for (const elapsed of [first - 1, first]) {
          ours.push(admitted(dev, lane, "4.0.0", thresholdOf({ days }, elapsed)));
          expected.push(elapsed === first);
          cases.push([dev, lane, "4.0.0", `${BigInt(elapsed) * daysDen}/${daysNum * BigInt(DAY)}`]);
        }
      }
    }
    expect(ours).toEqual(expected);
    expect(pythonVerdicts(cases)).toEqual(expected);
  });

  test("before released: 0 %; at D days and after: 100 %", () => {
    expect(thresholdOf({ days: 3 }, -5)).toBe(0n);
    expect(thresholdOf({ days: 3 }, 0)).toBe(0n);
    expect(thresholdOf({ days: 3 }, 3 * DAY)).toBe(FULL);
    expect(thresholdOf({ days: 3 }, 30 * DAY)).toBe(FULL);
    expect(thresholdOf({ days: 4 }, DAY)).toBe(TWO64 / 4n);
  });
});

describe("a manifest's rollout", () => {
  test("percent or days alone parse", () => {
    expect(parseRollout(undefined)).toBeNull();
    expect(parseRollout({ percent: 12.5 })).toEqual({ percent: 12.5 });
    expect(parseRollout({ percent: 0 })).toEqual({ percent: 0 });
    expect(parseRollout({ days: 7 })).toEqual({ days: 7 });
  });

  test.each([
    ["negative percent", { percent: -1 }, "percent must be a number from 0 to 100"],
    ["percent over 100", { percent: 100.5 }, "percent must be a number from 0 to 100"],
    ["percent as text", { percent: "10" }, "percent must be a number from 0 to 100"],
    ["negative days", { days: -2 }, "days must be a number above 0"],
    ["zero days", { days: 0 }, "days must be a number above 0"],
    ["days as text", { days: "7" }, "days must be a number above 0"],
    ["both fields", { percent: 10, days: 7 }, "exactly one of percent or days"],
    ["no field", {}, "exactly one of percent or days"],
    ["an unknown field", { percent: 10, when: "now" }, 'unknown field "when"'],
    ["not an object", 10, "must be an object"],
    ["null", null, "must be an object"],
    ["an array", [10], "must be an object"],
  ])("%s is refused", (_name, value, reason) => {
    expect(() => parseRollout(value)).toThrow(reason);
  });
});
