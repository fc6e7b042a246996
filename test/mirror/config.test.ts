import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { toConfig } from "../../src/config/config";
import { tempDir } from "../helpers";

const TOKEN = `kta_${"a".repeat(32)}`;
const base = () => {
  const dir = tempDir();
  return { variant: "alpha", "base-url": "https://mirror.example.com", data: join(dir, "data"), keys: dir, releases: dir };
};
const mirrorOf = (settings: Record<string, string>) => toConfig({ ...base(), ...settings }, "serve").mirror;
const refusal = (settings: Record<string, string>) => {
  try {
    mirrorOf(settings);
  } catch (e) {
    return `--${(e as { setting: string }).setting}: ${(e as Error).message}`;
  }
  return null;
};

describe("mirror settings", () => {
  test("a vendor address and token make a mirror; its address is normalised like --base-url; the poll may be in ms", () => {
    expect(mirrorOf({})).toBeNull();
    expect(mirrorOf({ "mirror-of": "https://Vendor.example/", "mirror-token": TOKEN })).toEqual({
      of: "https://vendor.example",
      token: TOKEN,
      pollMs: 30_000,
      maxStalenessSeconds: null,
      maxEntries: 4_000_000,
    });
    const m = mirrorOf({ "mirror-of": "http://127.0.0.1:8443", "mirror-token": TOKEN, "mirror-poll": "250ms", "mirror-max-staleness": "1h" });
    expect(m).toMatchObject({ of: "http://127.0.0.1:8443", pollMs: 250, maxStalenessSeconds: 3600 });
  });

  test("refused: plain http off loopback, no token, a token alone, a malformed token (not echoed), PostgreSQL records, a tiny poll", () => {
    expect(refusal({ "mirror-of": "http://vendor.example", "mirror-token": TOKEN })).toContain("--mirror-of: must be https");
    expect(refusal({ "mirror-of": "https://vendor.example" })).toContain("--mirror-token: required with --mirror-of");
    expect(refusal({ "mirror-token": TOKEN })).toContain("--mirror-token: goes with --mirror-of");
    const bad = refusal({ "mirror-of": "https://vendor.example", "mirror-token": "kta_short-secret" });
    expect(bad).toContain("--mirror-token: not an admin token");
    expect(bad).not.toContain("short-secret");
    expect(refusal({ "mirror-of": "https://vendor.example", "mirror-token": TOKEN, database: "postgres://x@127.0.0.1/y" })).toContain(
      "--database: a mirror keeps",
    );
    expect(refusal({ "mirror-of": "https://vendor.example", "mirror-token": TOKEN, "mirror-poll": "10ms" })).toContain("--mirror-poll: must be at least 50ms");
  });
});
