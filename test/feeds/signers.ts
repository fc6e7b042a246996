import nacl from "tweetnacl";

/**
 * The vendor's own signatures, made here as their tools make them, so tests can check that keyturn
 * passes them through untouched and that they verify over the bytes keyturn serves.
 */

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

/**
 * A minisign key pair and the `.sig` file `tauri build` writes: base64 of the minisign signature
 * text (untrusted comment, `Ed` + key id + Ed25519 signature of the file, trusted comment, and the
 * global signature over the signature and the trusted comment).
 */
export function minisignKey() {
  const pair = nacl.sign.keyPair();
  const keyId = nacl.randomBytes(8);
  return {
    /** Tauri's `pubkey`: base64 of the minisign public key file. */
    publicKey: b64(Buffer.from(`untrusted comment: minisign public key\n${b64(Buffer.concat([Buffer.from("Ed"), keyId, pair.publicKey]))}\n`)),
    sign(data: Uint8Array, fileName: string): string {
      const signature = nacl.sign.detached(data, pair.secretKey);
      const trusted = `timestamp:1790000000\tfile:${fileName}`;
      const global = nacl.sign.detached(Buffer.concat([signature, Buffer.from(trusted)]), pair.secretKey);
      const text = `untrusted comment: signature from tauri secret key\n${b64(Buffer.concat([Buffer.from("Ed"), keyId, signature]))}\ntrusted comment: ${trusted}\n${b64(global)}\n`;
      return b64(Buffer.from(text));
    },
    /** What Tauri's verify_signature checks: the signature line over the whole downloaded bytes. */
    verify(data: Uint8Array, sigFileText: string): boolean {
      const lines = Buffer.from(sigFileText, "base64").toString("utf8").split("\n");
      const sig = Buffer.from(lines[1]!, "base64");
      return sig.subarray(0, 2).toString() === "Ed" && sig.subarray(2, 10).equals(keyId) && nacl.sign.detached.verify(data, sig.subarray(10), pair.publicKey);
    },
  };
}

/** Sparkle's EdDSA key: `sign_update` prints the base64 Ed25519 signature of the archive. */
export function sparkleKey() {
  const pair = nacl.sign.keyPair();
  return {
    sign: (data: Uint8Array) => b64(nacl.sign.detached(data, pair.secretKey)),
    verify: (data: Uint8Array, edSignature: string) => nacl.sign.detached.verify(data, Buffer.from(edSignature, "base64"), pair.publicKey),
  };
}
