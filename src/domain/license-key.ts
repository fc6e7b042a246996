import type { Variant } from "../config/variants";
import type { LicenseRecord, Store } from "../store/types";
import { CROCKFORD, randomBase32, sha256Hex } from "./ids";

/** A new license key: the variant prefix and five groups of five Crockford base32 characters (125 bits). */
export function generateLicenseKey(variant: Variant): string {
  const groups = Array.from({ length: 5 }, () => randomBase32(5));
  return `${variant.keyPrefix}-${groups.join("-")}`;
}

const READ_AS: Record<string, string> = { O: "0", I: "1", L: "1" };

/** Spaces, hyphens and the dashes a word processor or a phone puts in their place. */
const SEPARATORS = /[\s\-\u2010-\u2015\u2212]+/g;

/**
 * The canonical form of a typed key, or null when it cannot be one of this variant's keys.
 * Upper-cased, with every space and dash dropped and the dashes put back where they belong, so a
 * key typed without dashes, with spaces or split across lines is the same key; inside the groups
 * O reads as 0 and I or L as 1 (docs/architecture.md "License key groups").
 */
export function normalizeLicenseKey(variant: Variant, input: string): string | null {
  const text = input.toUpperCase().replace(SEPARATORS, "");
  if (!text.startsWith(variant.keyPrefix) || text.length !== variant.keyPrefix.length + 25) return null;
  let body = "";
  for (const ch of text.slice(variant.keyPrefix.length)) {
    const c = READ_AS[ch] ?? ch;
    if (!CROCKFORD.includes(c)) return null;
    body += c;
  }
  const groups = Array.from({ length: 5 }, (_, i) => body.slice(i * 5, i * 5 + 5));
  return `${variant.keyPrefix}-${groups.join("-")}`;
}

/** What the records keep instead of the key. */
export function hashLicenseKey(canonicalKey: string): string {
  return sha256Hex(canonicalKey);
}

/**
 * The licence a key as typed names (any case, spaces or dashes the variant's form allows), or null
 * when it is not a key of this form or no licence has it: the one lookup of activation, the
 * portal's sign-in and the admin API's `{id}` given as a key.
 */
export async function findLicenseByTypedKey(store: Pick<Store, "findLicenseByKeyHash">, variant: Variant, typed: string): Promise<LicenseRecord | null> {
  const hash = typedKeyHash(variant, typed);
  return hash === null ? null : store.findLicenseByKeyHash(hash);
}

/** The stored hash of a key as typed, or null when it is not a key of this variant's form. */
export function typedKeyHash(variant: Variant, typed: string): string | null {
  const canonical = normalizeLicenseKey(variant, typed);
  return canonical === null ? null : hashLicenseKey(canonical);
}
