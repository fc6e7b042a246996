import { expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { loadKeyRing } from "../../src/domain/keys";
import { cliFolder } from "../processes";

// `keyturn keys rotate` and `keys promote` (docs/operating.md "Rotating the license key"): the
// next key is made without signing, the promotion makes it sign, each writes an audit line.

const { cwd, keyturn } = cliFolder("keyturn-keys-cli-");
const signingKid = async () => (await loadKeyRing(join(cwd, "keys"), VARIANTS.alpha)).signing?.kid ?? null;

test("rotate makes the next key without signing with it; promote makes it sign; each is an audit line; mistakes exit 1 naming them", async () => {
  const none = keyturn("keys", "rotate");
  expect(none.code).toBe(1);
  expect(none.stderr).toContain("no alpha license key in ./keys to rotate from");

  expect(keyturn("keys", "generate", "--kid", "alpha-license-2026-01").code).toBe(0);
  const rotated = keyturn("keys", "rotate", "--kid", "alpha-license-2026-05", "--json");
  expect(rotated.code).toBe(0);
  const next = JSON.parse(rotated.stdout) as { kid: string; spki: string; signing: string };
  expect(next).toMatchObject({ kid: "alpha-license-2026-05", signing: "alpha-license-2026-01" });
  // The newest key exists, verifies, and does not sign: the pin names the old one.
  expect(readFileSync(join(cwd, "keys", "alpha-license.signing"), "utf8").trim()).toBe("alpha-license-2026-01");
  expect(await signingKid()).toBe("alpha-license-2026-01");
  expect((await loadKeyRing(join(cwd, "keys"), VARIANTS.alpha)).verify.get("alpha-license-2026-05")!.spki).toBe(next.spki);

  const older = keyturn("keys", "rotate", "--kid", "alpha-license-2025-12");
  expect(older.code).toBe(1);
  expect(older.stderr).toContain("alpha-license-2025-12 is not newer than alpha-license-2026-01, which signs now");
  const unknown = keyturn("keys", "promote", "alpha-license-2026-09");
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toContain("alpha-license-2026-09.pem is not in");
  expect(keyturn("keys", "promote", "beta-license-2026-05").code).toBe(1);
  expect(await signingKid()).toBe("alpha-license-2026-01");

  const promoted = keyturn("keys", "promote", "alpha-license-2026-05");
  expect(promoted.code).toBe(0);
  expect(promoted.stdout).toContain("alpha-license-2026-05 signs from the next SIGHUP");
  expect(await signingKid()).toBe("alpha-license-2026-05");

  // A pin naming a key whose file is gone falls back to the newest, with a warning.
  rmSync(join(cwd, "keys", "alpha-license-2026-05.pem"));
  const ring = await loadKeyRing(join(cwd, "keys"), VARIANTS.alpha);
  expect(ring.signing?.kid).toBe("alpha-license-2026-01");
  expect(ring.warnings.join(" ")).toContain("names alpha-license-2026-05, whose private key is not in");
  expect(existsSync(join(cwd, "keys", "alpha-license-2026-05.pub.pem"))).toBe(true);

  const audit = JSON.parse(keyturn("audit", "--json").stdout) as { audit: { action: string; actor?: string }[] };
  expect(audit.audit.map((l) => [l.action, l.actor])).toEqual([
    ["key-promote", "cli (signing key alpha-license-2026-05)"],
    ["key-rotate", "cli (next key alpha-license-2026-05)"],
  ]);
}, 60_000);
