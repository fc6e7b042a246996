/**
 * The spec's variants table, as data. Everything that differs between alpha, beta and gamma is
 * read from here; no other module branches on the variant's name.
 */
export type VariantName = "alpha" | "beta" | "gamma";

export interface Variant {
  readonly name: VariantName;
  /** License keys look like `<keyPrefix>-XXXXX-XXXXX-XXXXX-XXXXX-XXXXX`. */
  readonly keyPrefix: string;
  /** The text an installation hashes (with its random identifier) to make device.hash. */
  readonly deviceTextPrefix: string;
  readonly tokenTyp: string;
  readonly audience: string;
  /** The kid of the spec's published signing key for this variant. */
  readonly defaultLicenseKid: string;
  readonly manifestFile: string;
  /** The `typ` header of a manifest's detached signature (`<manifestFile>.sig`). */
  readonly releaseTyp: string;
  /** Product values; empty when the variant has no product concept (device.product absent). */
  readonly products: readonly string[];
  /**
   * What makes one installation (one seat): the device hash alone (one seat per computer, shared
   * by the variant's programs), or the hash together with the product (each program its own seat).
   */
  readonly installationBy: "device" | "device+product";
  /** How seat_limit's message names the holders of the seats. */
  readonly seatHolders: "installations" | "computers";
}

export const VARIANTS: Readonly<Record<VariantName, Variant>> = Object.freeze({
  alpha: {
    name: "alpha",
    keyPrefix: "AL",
    deviceTextPrefix: "alpha-device:",
    tokenTyp: "al-ent+jwt",
    audience: "alpha",
    defaultLicenseKid: "alpha-license-2026-10",
    manifestFile: "alpha-update.json",
    releaseTyp: "al-rel+jws",
    products: ["alpha", "alpha-cli"],
    installationBy: "device",
    seatHolders: "installations",
  },
  beta: {
    name: "beta",
    keyPrefix: "BE",
    deviceTextPrefix: "beta-device:",
    tokenTyp: "be-ent+jwt",
    audience: "beta",
    defaultLicenseKid: "beta-license-2026-10",
    manifestFile: "beta-update.json",
    releaseTyp: "be-rel+jws",
    products: ["beta", "beta-studio"],
    installationBy: "device+product",
    seatHolders: "installations",
  },
  gamma: {
    name: "gamma",
    keyPrefix: "GA",
    deviceTextPrefix: "gamma-device:",
    tokenTyp: "ga-ent+jwt",
    audience: "gamma",
    defaultLicenseKid: "gamma-license-2026-09",
    manifestFile: "gamma-update.json",
    releaseTyp: "ga-rel+jws",
    products: [],
    installationBy: "device",
    seatHolders: "computers",
  },
});

export const VARIANT_NAMES = Object.keys(VARIANTS) as VariantName[];

/** Update channels and platforms are the same in every variant. */
export const CHANNELS = ["stable", "preview"] as const;
export type Channel = (typeof CHANNELS)[number];
export const PLATFORMS = ["win-x64"] as const;

export function hasProducts(v: Variant): boolean {
  return v.products.length > 0;
}
