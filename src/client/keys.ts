import { fromBase64 } from "./encoding.js";

/** Public keys compiled into the program, by kid: SubjectPublicKeyInfo (DER) in base64, as `/meta` and `keys generate` print them. */
export type PublicKeys = Readonly<Record<string, string>>;

/** The same keys imported for WebCrypto, once. */
export class KeySet {
  private readonly imported = new Map<string, Promise<CryptoKey>>();

  constructor(private readonly spki: PublicKeys) {}

  has(kid: string): boolean {
    return Object.hasOwn(this.spki, kid);
  }

  get(kid: string): Promise<CryptoKey> {
    let key = this.imported.get(kid);
    if (!key) {
      const der = fromBase64(this.spki[kid]!);
      key = crypto.subtle.importKey("spki", der as Uint8Array<ArrayBuffer>, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
      this.imported.set(kid, key);
    }
    return key;
  }
}
