import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Variant } from "../config/variants";
import { KeyturnError } from "./errors";
import { defaultKid, generateKeyFiles, loadKeyRing, parseKid, readSigningPin, writeSigningPin } from "./keys";

/**
 * Rotating the license signing key with overlap (docs/operating.md "Rotating the license key"):
 * `prepare` makes the next key and keeps the current one signing, so the next is published (/meta,
 * the mirror feed) and verifies but signs nothing yet; programs and mirrors take it up; `promote`
 * makes it sign. The old key stays, verifying, until its tokens have expired.
 */
export interface PreparedKey {
  readonly kid: string;
  readonly spki: string;
  readonly privatePath: string;
  /** The key that keeps signing until the promotion. */
  readonly signing: string;
}

/** The next license key: `kid`, or this month's, with a two-digit suffix when that one exists or is not newer. */
export async function prepareNextKey(dir: string, variant: Variant, now: Date, kid?: string): Promise<PreparedKey> {
  const ring = await loadKeyRing(dir, variant);
  if (!ring.signing)
    throw new KeyturnError("invalid_request", `no ${variant.name} license key in ${dir} to rotate from: make the first with keyturn keys generate`);
  const signing = ring.signing.kid;
  const next = kid ?? nextKid(dir, variant, now, signing);
  const parsed = parseKid(next);
  if (!parsed || parsed.variant !== variant.name || parsed.purpose !== "license")
    throw new KeyturnError("invalid_request", `--kid must look like ${variant.name}-license-YYYY-MM (got "${next}")`);
  if (parsed.order <= parseKid(signing)!.order) throw new KeyturnError("invalid_request", `${next} is not newer than ${signing}, which signs now`);
  // Pinned first: from the moment the new file exists, a reload must not make it sign.
  if (readSigningPin(dir, variant) === null) writeSigningPin(dir, variant, signing);
  const made = generateKeyFiles(dir, next);
  return { kid: made.kid, spki: made.spki, privatePath: made.privatePath, signing };
}

function nextKid(dir: string, variant: Variant, now: Date, signing: string): string {
  const base = defaultKid(variant, "license", now);
  const taken = (kid: string) =>
    existsSync(join(dir, `${kid}.pem`)) || existsSync(join(dir, `${kid}.pub.pem`)) || parseKid(kid)!.order <= parseKid(signing)!.order;
  if (!taken(base)) return base;
  for (let n = 2; n < 100; n++) {
    const kid = `${base}-${String(n).padStart(2, "0")}`;
    if (!taken(kid)) return kid;
  }
  throw new KeyturnError("invalid_request", `no free kid left for ${base}: give one with --kid`);
}

/** Makes `kid` the key that signs; returns the one it replaces. Its private key must be in `dir`. */
export async function promoteKey(dir: string, variant: Variant, kid: string): Promise<{ readonly previous: string | null }> {
  const parsed = parseKid(kid);
  if (!parsed || parsed.variant !== variant.name || parsed.purpose !== "license")
    throw new KeyturnError("invalid_request", `not a ${variant.name} license key id: "${kid.slice(0, 80)}"`);
  const ring = await loadKeyRing(dir, variant);
  if (!existsSync(join(dir, `${kid}.pem`))) throw new KeyturnError("not_found", `${kid}.pem is not in ${dir}`);
  writeSigningPin(dir, variant, kid);
  return { previous: ring.signing?.kid ?? null };
}
