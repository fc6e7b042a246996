import { hasProducts, type Variant } from "../config/variants";
import { type Static, Type } from "@sinclair/typebox";
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

/** A device's text field: at most 200 characters, not empty, not only spaces. */
const DeviceText = Type.String({ minLength: 1, maxLength: 200, pattern: "\\S", description: "text with at least one visible character" });

/**
 * A device as an installation sends it (the spec's Device table): the shape only. The variant's
 * platforms and products are rules a schema of this module cannot state; `checkDevice` applies them.
 */
export const DeviceModel = Type.Object({
  hash: Type.String({ pattern: "^[A-Za-z0-9_-]{43}$", description: "43 base64url characters (the SHA-256 of the device text)" }),
  name: DeviceText,
  platform: DeviceText,
  version: DeviceText,
  product: Type.Optional(DeviceText),
});
export type DeviceInput = Static<typeof DeviceModel>;

/** A decoded device checked against this variant's platforms and products; throws invalid_request naming the field. */
export function checkDevice(variant: Variant, input: DeviceInput): Device {
  if (!variant.platforms.includes(input.platform))
    throw new KeyturnError("invalid_request", `device.platform must be one of: ${variant.platforms.join(", ")}.`);
  let product: string | null = null;
  if (hasProducts(variant)) {
    if (input.product === undefined) throw new KeyturnError("invalid_request", "device.product is required.");
    if (!variant.products.includes(input.product)) throw new KeyturnError("invalid_request", `device.product must be one of: ${variant.products.join(", ")}.`);
    product = input.product;
  } else if (input.product !== undefined) {
    throw new KeyturnError("invalid_request", `device.product is not part of the ${variant.name} variant.`);
  }
  return { hash: input.hash, name: input.name, platform: input.platform, version: input.version, product };
}

/** The seat key: the hash alone when the variant's programs share a seat, else hash and product. */
export function installationOf(variant: Variant, device: Device): string {
  return variant.installationBy === "device" ? device.hash : `${device.hash}:${device.product}`;
}
