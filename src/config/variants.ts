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
  /** The site's update channels: the spec's (CHANNELS) unless configured (--channels). */
  readonly channels: readonly string[];
  /** The site's platforms: the spec's (PLATFORMS) unless configured (--platforms). */
  readonly platforms: readonly string[];
}

/** The spec's update channels and platforms, the same in every variant: a site's defaults. */
export const CHANNELS = ["stable", "preview"] as const;
export const PLATFORMS = ["win-x64"] as const;

/**
 * A channel or platform name: it is a directory of the release tree, a segment of the update path
 * and part of a lane's name, so plain lower-case words joined by dashes, nothing else.
 */
export const LANE_WORD = /^[a-z0-9]+(-[a-z0-9]+)*$/;
export const LANE_WORD_MAX = 32;
/** Upper bound on a site's channels and platforms each (every lane is kept in memory). */
export const LANE_LIST_MAX = 16;

/** Whether a name can be a channel or platform (LANE_WORD, at most LANE_WORD_MAX characters). */
export function isLaneWord(name: string): boolean {
  return name.length <= LANE_WORD_MAX && LANE_WORD.test(name);
}

/**
 * A variant with the site's own channels and platforms; the lists are checked by the caller (config.ts).
 */
export function withLanes(v: Variant, lanes: { readonly channels?: readonly string[]; readonly platforms?: readonly string[] }): Variant {
  return Object.freeze({
    ...v,
    channels: Object.freeze([...(lanes.channels ?? v.channels)]),
    platforms: Object.freeze([...(lanes.platforms ?? v.platforms)]),
  });
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
    channels: CHANNELS,
    platforms: PLATFORMS,
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
    channels: CHANNELS,
    platforms: PLATFORMS,
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
    channels: CHANNELS,
    platforms: PLATFORMS,
  },
});

export const VARIANT_NAMES = Object.keys(VARIANTS) as VariantName[];

export function hasProducts(v: Variant): boolean {
  return v.products.length > 0;
}

/**
 * Whether a product, channel and platform name one of this variant's lanes: the product null
 * exactly when the variant has none; without a platform, whether any platform of that channel is.
 */
export function isLane(v: Variant, product: string | null, channel: string, platform?: string): boolean {
  return (
    (product === null ? v.products.length === 0 : v.products.includes(product)) &&
    v.channels.includes(channel) &&
    (platform === undefined || v.platforms.includes(platform))
  );
}
