import { afterAll, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { KeyHolder } from "../../src/domain/key-holder";
import { generateKeyFiles, spkiBase64 } from "../../src/domain/keys";
import { tempDir } from "../helpers";

// src/domain/key-holder.ts: the keys a process holds, read again on SIGHUP and, on a mirror,
// taught by its vendor's feed.

const dir = tempDir("keyturn-key-holder-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const p256 = () => spkiBase64(generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey);

test("learnt keys: this variant's license keys that parse as P-256 only, replaced by each publication, never over a key of the directory", async () => {
  const keys = join(dir, "mirror");
  const own = generateKeyFiles(keys, "alpha-license-2026-10");
  const holder = await KeyHolder.open(keys, VARIANTS.alpha);
  const next = p256();
  const learnt = await holder.learn([
    { kid: "alpha-license-2026-12", spki: next },
    { kid: "alpha-license-2026-10", spki: p256() },
    { kid: "alpha-release-2026-12", spki: p256() },
    { kid: "beta-license-2026-12", spki: p256() },
    { kid: "alpha-license-2027-01", spki: spkiBase64(generateKeyPairSync("ec", { namedCurve: "secp384r1" }).publicKey) },
    { kid: "alpha-license-2027-02", spki: "bm90IGEga2V5" },
  ]);
  expect(learnt).toEqual({ added: ["alpha-license-2026-12"], removed: [] });
  expect(holder.verify.get("alpha-license-2026-12")!.spki).toBe(next);
  expect(holder.verify.get("alpha-license-2026-10")!.spki).toBe(own.spki);
  expect([...holder.verify.keys()].sort()).toEqual(["alpha-license-2026-10", "alpha-license-2026-12"]);
  // The vendor stops publishing it: no longer trusted here.
  expect(await holder.learn([])).toEqual({ added: [], removed: ["alpha-license-2026-12"] });
  expect(holder.verify.has("alpha-license-2026-12")).toBe(false);
});

test("reload: a key added to or removed from the directory is seen at once, the signing key with it", async () => {
  const keys = join(dir, "vendor");
  generateKeyFiles(keys, "alpha-license-2026-10");
  const holder = await KeyHolder.open(keys, VARIANTS.alpha);
  expect(holder.signing!.kid).toBe("alpha-license-2026-10");
  generateKeyFiles(keys, "alpha-license-2026-11");
  expect(holder.verify.has("alpha-license-2026-11")).toBe(false);
  expect(await holder.reload()).toMatchObject({ signing: "alpha-license-2026-11", added: ["alpha-license-2026-11"], removed: [] });
  expect(holder.verify.has("alpha-license-2026-11")).toBe(true);
  rmSync(join(keys, "alpha-license-2026-11.pem"));
  rmSync(join(keys, "alpha-license-2026-11.pub.pem"));
  expect(await holder.reload()).toMatchObject({ signing: "alpha-license-2026-10", removed: ["alpha-license-2026-11"] });
});
