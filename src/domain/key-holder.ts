import { createPublicKey } from "node:crypto";
import type { Variant } from "../config/variants";
import { isP256, loadKeyRing, parseKid, spkiBase64, toCryptoKey, type KeyRing, type PublicKeyInfo } from "./keys";

/** A public key as the vendor's feed publishes it. */
export interface PublishedKey {
  readonly kid: string;
  readonly spki: string;
}

/**
 * The process's keys, which can change while it serves: read again from the keys directory on
 * SIGHUP (a key added, a promotion), and, on a mirror, the vendor's license public keys learnt from
 * its feed. It is a KeyRing read afresh at each use, so every holder of it (the signer, the
 * verifier, /meta) sees a reload at once.
 */
export class KeyHolder implements KeyRing {
  private ring: KeyRing;
  private learned = new Map<string, PublicKeyInfo>();
  private merged: ReadonlyMap<string, PublicKeyInfo>;

  private constructor(
    private readonly dir: string,
    private readonly variant: Variant,
    ring: KeyRing,
  ) {
    this.ring = ring;
    this.merged = ring.verify;
  }

  static async open(dir: string, variant: Variant): Promise<KeyHolder> {
    return new KeyHolder(dir, variant, await loadKeyRing(dir, variant));
  }

  get signing(): KeyRing["signing"] {
    return this.ring.signing;
  }

  get verify(): ReadonlyMap<string, PublicKeyInfo> {
    return this.merged;
  }

  get warnings(): readonly string[] {
    return this.ring.warnings;
  }

  /** Reads the keys directory again; says what changed. A directory that cannot be read leaves the keys as they were. */
  async reload(): Promise<{ readonly signing: string | null; readonly added: string[]; readonly removed: string[]; readonly warnings: readonly string[] }> {
    const before = new Set(this.ring.verify.keys());
    this.ring = await loadKeyRing(this.dir, this.variant);
    this.remerge();
    const after = new Set(this.ring.verify.keys());
    return {
      signing: this.ring.signing?.kid ?? null,
      added: [...after].filter((k) => !before.has(k)),
      removed: [...before].filter((k) => !after.has(k)),
      warnings: this.ring.warnings,
    };
  }

  /** Whether the vendor's feed may teach this key: a license key of this variant (release keys stay in --keys). */
  learnable(kid: string): boolean {
    const parsed = parseKid(kid);
    return parsed !== null && parsed.variant === this.variant.name && parsed.purpose === "license";
  }

  /**
   * The vendor's license public keys as its feed last published them: they replace those learnt
   * before (a key the vendor stopped publishing is no longer trusted here), and never a key of the
   * keys directory by the same kid. Keys that do not parse as P-256 are left out.
   */
  async learn(keys: readonly PublishedKey[]): Promise<{ readonly added: string[]; readonly removed: string[] }> {
    const next = new Map<string, PublicKeyInfo>();
    for (const k of keys) {
      if (!this.learnable(k.kid) || this.ring.verify.has(k.kid)) continue;
      const known = this.learned.get(k.kid);
      if (known && known.spki === k.spki) {
        next.set(k.kid, known);
        continue;
      }
      try {
        const publicKey = createPublicKey({ key: Buffer.from(k.spki, "base64"), format: "der", type: "spki" });
        if (!isP256(publicKey)) continue;
        next.set(k.kid, { kid: k.kid, purpose: "license", spki: spkiBase64(publicKey), publicKey, cryptoKey: await toCryptoKey(publicKey) });
      } catch {
        // Not a key: left out, as a malformed key file is.
      }
    }
    const added = [...next.keys()].filter((k) => !this.learned.has(k));
    const removed = [...this.learned.keys()].filter((k) => !next.has(k));
    this.learned = next;
    this.remerge();
    return { added, removed };
  }

  private remerge(): void {
    if (this.learned.size === 0) {
      this.merged = this.ring.verify;
      return;
    }
    const merged = new Map(this.learned);
    for (const [kid, key] of this.ring.verify) merged.set(kid, key);
    this.merged = merged;
  }
}
