import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { loadKeyRing } from "../../src/domain/keys";
import { scanReleaseTree } from "../../src/domain/releases/scan";
import { releaseKeysOf, signManifest } from "../../src/domain/releases/signature";
import { SignatureCache } from "../../src/domain/releases/signature-cache";
import { tempDir } from "../helpers";
import { ReleaseTree } from "../release-tree";

const trees: ReleaseTree[] = [];
afterEach(() => trees.splice(0).forEach((t) => t.remove()));

describe("signature cache", () => {
  test("a newline moved from the end of the .sig to the start of the manifest is not taken as verified", async () => {
    const t = new ReleaseTree("gamma");
    trees.push(t);
    const v = VARIANTS.gamma;
    const r = t.add({ version: "1.0.0" });
    const manifest = Buffer.from(r.manifestBytes.toString("utf8").trimEnd());
    const sig = signManifest(manifest, { kid: t.kid, privateKey: t.privateKey }, v);
    // As signed, with the tolerated trailing newline on the .sig: live, and remembered.
    writeFileSync(r.manifestPath, manifest);
    writeFileSync(`${r.manifestPath}.sig`, `${sig}\n`);
    const releaseKeys = releaseKeysOf(await loadKeyRing(t.keysDir, v));
    const cacheFile = join(tempDir("keyturn-sigcache-"), "release-signatures.cache");
    const first = SignatureCache.open(cacheFile);
    const a = await scanReleaseTree(t.root, { variant: v, releaseKeys, signatures: first });
    first.finishScan();
    expect(a.problems).toEqual([]);
    expect(a.stats.verified).toBe(1);

    // The newline moved to the manifest's start: still valid JSON, but the signature no longer covers these bytes.
    writeFileSync(r.manifestPath, Buffer.concat([Buffer.from("\n"), manifest]));
    writeFileSync(`${r.manifestPath}.sig`, sig);
    const b = await scanReleaseTree(t.root, { variant: v, releaseKeys, signatures: SignatureCache.open(cacheFile) });
    expect(b.stats.cached).toBe(0);
    expect(b.index.size).toBe(0);
    expect(b.problems.map((p) => p.reason).join()).toContain("does not verify");
  });

  test("keys differ whenever the parts differ, however the bytes are split between them", () => {
    const spki = "MFkw";
    const key = (s: string, m: string) => SignatureCache.keyOf(spki, Buffer.from(s), Buffer.from(m));
    expect(key("a.b\n", "{}")).not.toBe(key("a.b", "\n{}"));
    expect(key("a.b", "{}")).toBe(key("a.b", "{}"));
    expect(SignatureCache.keyOf("MFkw\n", Buffer.from("a"), Buffer.from("{}"))).not.toBe(SignatureCache.keyOf("MFkw", Buffer.from("\na"), Buffer.from("{}")));
  });
});
