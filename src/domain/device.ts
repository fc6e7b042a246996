import { hasProducts, type Variant } from "../config/variants";
import { KeyturnError } from "./errors";

/** A device as sent by an installation, after the spec's rules have been checked. */
export interface Device {
  readonly hash: string;
  readonly name: string;
  readonly platform: string;
  readonly version: string;
  /** Present in alpha and beta, absent (null) in gamma. */
  readonly product: string | null;
}

const HASH = /^[A-Za-z0-9_-]{43}$/;
const MAX_TEXT = 200;

function text(raw: Record<string, unknown>, field: string): string {
  const v = raw[field];
  if (typeof v !== "string" || v.trim().length === 0)
    throw new KeyturnError("invalid_request", `device.${field} is required and must be a non-empty string`);
  if (v.length > MAX_TEXT) throw new KeyturnError("invalid_request", `device.${field} is longer than ${MAX_TEXT} characters`);
  return v;
}

/** Checks a device against the spec's Device table for this variant; throws invalid_request naming the field. */
export function parseDevice(variant: Variant, raw: unknown): Device {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new KeyturnError("invalid_request", "device is required and must be an object");
  const d = raw as Record<string, unknown>;
  const hash = text(d, "hash");
  if (!HASH.test(hash))
    throw new KeyturnError("invalid_request", "device.hash must be 43 base64url characters (SHA-256 of the device text)");
  const platform = text(d, "platform");
  if (!variant.platforms.includes(platform))
    throw new KeyturnError("invalid_request", `device.platform must be one of: ${variant.platforms.join(", ")}`);
  let product: string | null = null;
  if (hasProducts(variant)) {
    product = text(d, "product");
    if (!variant.products.includes(product))
      throw new KeyturnError("invalid_request", `device.product must be one of: ${variant.products.join(", ")}`);
  } else if (d.product !== undefined) {
    throw new KeyturnError("invalid_request", `device.product is not part of the ${variant.name} variant`);
  }
  return { hash, name: text(d, "name"), platform, version: text(d, "version"), product };
}

/** The seat key: the hash alone when the variant's programs share a seat, else hash and product. */
export function installationOf(variant: Variant, device: Device): string {
  return variant.installationBy === "device" ? device.hash : `${device.hash}:${device.product}`;
}
