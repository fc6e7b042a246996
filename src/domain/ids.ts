import { randomBytes } from "node:crypto";

/** Crockford base32: the license key alphabet, also used for random ids. */
export const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

export function randomBase32(length: number): string {
  const bytes = randomBytes(length);
  let out = "";
  for (let i = 0; i < length; i++) out += CROCKFORD[bytes[i]! & 31];
  return out;
}

/** `act_…`, `lic_…`, `ref_…`: 20 random base32 characters (100 bits). */
export function newId(prefix: "act" | "lic" | "ref"): string {
  return `${prefix}_${randomBase32(20).toLowerCase()}`;
}

export function sha256Hex(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
