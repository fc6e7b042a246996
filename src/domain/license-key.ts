import type { Variant } from "../config/variants";
import { CROCKFORD, randomBase32, sha256Hex } from "./ids";

/** A new license key: the variant prefix and five groups of five Crockford base32 characters (125 bits). */
export function generateLicenseKey(variant: Variant): string {
  const groups = Array.from({ length: 5 }, () => randomBase32(5));
  return `${variant.keyPrefix}-${groups.join("-")}`;
}

const READ_AS: Record<string, string> = { O: "0", I: "1", L: "1" };

/**
 * The canonical form of a typed key, or null when it cannot be one of this variant's keys.
 * Trimmed and upper-cased; inside the groups O reads as 0 and I or L as 1 (docs/architecture.md).
 */
export function normalizeLicenseKey(variant: Variant, input: string): string | null {
  const text = input.trim().toUpperCase();
  const prefix = `${variant.keyPrefix}-`;
  if (!text.startsWith(prefix)) return null;
  const groups = text.slice(prefix.length).split("-");
  if (groups.length !== 5) return null;
  const canonical: string[] = [];
  for (const group of groups) {
    if (group.length !== 5) return null;
    let g = "";
    for (const ch of group) {
      const c = READ_AS[ch] ?? ch;
      if (!CROCKFORD.includes(c)) return null;
      g += c;
    }
    canonical.push(g);
  }
  return `${prefix}${canonical.join("-")}`;
}

/** What the records keep instead of the key. */
export function hashLicenseKey(canonicalKey: string): string {
  return sha256Hex(canonicalKey);
}
