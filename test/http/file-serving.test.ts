import { describe, expect, test } from "bun:test";
import { matchesIfNoneMatch, parseRange } from "../../src/http/file-serving";

describe("Range header (RFC 9110 14.1.2), for a body of 1000 bytes", () => {
  test.each([
    ["bytes=0-99", { start: 0, end: 99 }],
    ["bytes=500-", { start: 500, end: 999 }],
    ["bytes=-100", { start: 900, end: 999 }],
    ["bytes=-5000", { start: 0, end: 999 }],
    ["bytes=990-5000", { start: 990, end: 999 }],
    ["bytes=999-999", { start: 999, end: 999 }],
    ["BYTES = 10 - 19", { start: 10, end: 19 }],
    ["bytes=1000-", "unsatisfiable"],
    ["bytes=1000-2000", "unsatisfiable"],
    ["bytes=99999999999999999999999-", "unsatisfiable"],
    ["bytes=-0", "unsatisfiable"],
    ["bytes=0-1,5-9", null],
    ["bytes=0-1, -5", null],
    ["bytes=20-10", null],
    ["bytes=-", null],
    ["bytes=abc", null],
    ["items=0-10", null],
    ["", null],
  ])("%p → %p", (header, expected) => {
    expect(parseRange(header, 1000)).toEqual(expected as never);
  });

  test("an empty body satisfies no range", () => {
    expect(parseRange("bytes=0-", 0)).toBe("unsatisfiable");
    expect(parseRange("bytes=-1", 0)).toBe("unsatisfiable");
    expect(parseRange(null, 0)).toBeNull();
  });
});

describe("If-None-Match", () => {
  const req = (value: string) => new Request("http://localhost/", { headers: { "if-none-match": value } });
  test("matches a listed tag, a weak form of it, or *", () => {
    expect(matchesIfNoneMatch(req('"abc"'), '"abc"')).toBe(true);
    expect(matchesIfNoneMatch(req('"x", W/"abc"'), '"abc"')).toBe(true);
    expect(matchesIfNoneMatch(req("*"), '"abc"')).toBe(true);
    expect(matchesIfNoneMatch(req('"abcd"'), '"abc"')).toBe(false);
    expect(matchesIfNoneMatch(new Request("http://localhost/"), '"abc"')).toBe(false);
  });
});
