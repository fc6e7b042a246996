import { expect, test } from "bun:test";
import { newId } from "../src/domain/ids";

test("ids: prefix and 20 lowercase base32 characters", () => {
  for (const prefix of ["act", "lic", "ref"] as const) expect(newId(prefix)).toMatch(new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{20}$`));
});

test("ids sort in the order they were made (their time first), so the indexes keyed by them grow at the end", () => {
  const times = [0, 1, 31, 32, 1_000, Date.parse("2026-11-22T00:00:00Z"), Date.parse("2026-11-22T00:00:00.001Z"), Date.parse("2999-01-01T00:00:00Z")];
  const ids = times.map((t) => newId("act", t));
  expect([...ids].sort()).toEqual(ids);
});

test("ids made in the same millisecond differ (50 random bits)", () => {
  const now = Date.now();
  const ids = new Set(Array.from({ length: 10_000 }, () => newId("ref", now)));
  expect(ids.size).toBe(10_000);
  expect(new Set([...ids].map((id) => id.slice(0, 14))).size).toBe(1);
});
