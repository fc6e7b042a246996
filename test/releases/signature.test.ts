import { afterAll, describe, expect, test } from "bun:test";
import { sign } from "node:crypto";
import { compactVerify, importSPKI } from "jose";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles, loadKeyRing } from "../../src/domain/keys";
import { checkSignature, parseSignature, releaseKeysOf, signManifest } from "../../src/domain/releases/signature";
import { ReleaseTree } from "../release-tree";
import { tempDir } from "../helpers";

const tree = new ReleaseTree("alpha");
afterAll(() => tree.remove());
const alpha = VARIANTS.alpha;
const manifest = Buffer.from('{"version":"1.0.0"}\n');
const b64 = (x: unknown) => Buffer.from(typeof x === "string" || x instanceof Uint8Array ? x : JSON.stringify(x)).toString("base64url");

async function keys() {
  return releaseKeysOf(await loadKeyRing(tree.keysDir, alpha));
}
async function problem(sig: string | Buffer, bytes = manifest) {
  try {
    checkSignature(bytes, parseSignature(Buffer.from(sig), await keys(), alpha));
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

describe("manifest signature: detached compact JWS, ES256, header {alg, kid, typ}", () => {
  test("the .sig is header..signature and verifies with jose over the manifest's exact bytes (RFC 7515 appendix F)", async () => {
    const sig = signManifest(manifest, { kid: tree.kid, privateKey: tree.privateKey }, alpha);
    const [header, empty, signature] = sig.split(".");
    expect(empty).toBe("");
    expect(JSON.parse(Buffer.from(header!, "base64url").toString())).toEqual({ alg: "ES256", kid: "alpha-release-2026-11", typ: "al-rel+jws" });
    // A vendor's client: put the base64url manifest back between the dots and verify as any JWS.
    const pub = await importSPKI(readFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), "utf8"), "ES256");
    const { payload, protectedHeader } = await compactVerify(`${header}.${b64(manifest)}.${signature}`, pub, { algorithms: ["ES256"] });
    expect(Buffer.from(payload).equals(manifest)).toBe(true);
    expect(protectedHeader.kid).toBe(tree.kid);
    expect(await problem(sig)).toBeNull();
    expect(await problem(sig + "\n")).toBeNull();
  });

  test("a changed byte of the manifest fails", async () => {
    const sig = signManifest(manifest, { kid: tree.kid, privateKey: tree.privateKey }, alpha);
    expect(await problem(sig, Buffer.from('{"version":"1.0.1"}\n'))).toContain("does not verify");
    expect(await problem(sig, Buffer.from('{"version":"1.0.0"}'))).toContain("does not verify");
  });

  test("pinned: only ES256, this variant's typ, a release key we hold, no crit/b64", async () => {
    const sigPart = (header: object) => {
      const h = b64(header);
      const s = sign("sha256", Buffer.from(`${h}.${b64(manifest)}`), { key: tree.privateKey, dsaEncoding: "ieee-p1363" });
      return `${h}..${s.toString("base64url")}`;
    };
    expect(await problem(sigPart({ alg: "ES256", kid: tree.kid, typ: "al-rel+jws" }))).toBeNull();
    expect(await problem(sigPart({ alg: "none", kid: tree.kid, typ: "al-rel+jws" }))).toContain("alg must be ES256");
    expect(await problem(sigPart({ alg: "HS256", kid: tree.kid, typ: "al-rel+jws" }))).toContain("alg must be ES256");
    expect(await problem(sigPart({ alg: "ES256", kid: tree.kid, typ: "ga-rel+jws" }))).toContain("typ must be al-rel+jws");
    expect(await problem(sigPart({ alg: "ES256", kid: "alpha-release-2020-01", typ: "al-rel+jws" }))).toContain("not a release key");
    expect(await problem(sigPart({ alg: "ES256", typ: "al-rel+jws" }))).toContain("no kid");
    expect(await problem(sigPart({ alg: "ES256", kid: tree.kid, typ: "al-rel+jws", crit: ["b64"], b64: false }))).toContain("crit");
    expect(await problem(`${b64({ alg: "ES256", kid: tree.kid, typ: "al-rel+jws" })}.${b64(manifest)}.AAAA`)).toContain("not a detached");
    expect(await problem(`${b64({ alg: "ES256", kid: tree.kid, typ: "al-rel+jws" })}..${Buffer.alloc(65).toString("base64url")}`)).toContain("64 bytes");
    expect(await problem("")).toContain("not a detached");
  });

  test("a license key of the same variant is not a release key", async () => {
    const dir = tempDir();
    generateKeyFiles(dir, "alpha-license-2026-10");
    generateKeyFiles(dir, "alpha-release-2026-10");
    const ring = await loadKeyRing(dir, alpha);
    expect([...releaseKeysOf(ring).keys()]).toEqual(["alpha-release-2026-10"]);
    const privateKey = ring.signing!.privateKey;
    const sig = signManifest(manifest, { kid: "alpha-license-2026-10", privateKey }, alpha);
    expect(() => parseSignature(Buffer.from(sig), releaseKeysOf(ring), alpha)).toThrow("not a release key");
  });
});
