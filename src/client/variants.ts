/**
 * The spec's variants table, the part an installed program needs. A copy, not an import of the
 * site's table: the kit ships to vendors on its own (a test keeps the two in step).
 */
export type VariantName = "alpha" | "beta" | "gamma";

export interface ClientVariant {
  readonly name: VariantName;
  readonly deviceTextPrefix: string;
  readonly tokenTyp: string;
  readonly audience: string;
  readonly manifestFile: string;
  readonly releaseTyp: string;
  /** Empty when the variant has no product concept (device.product absent). */
  readonly products: readonly string[];
}

export const CLIENT_VARIANTS: Readonly<Record<VariantName, ClientVariant>> = Object.freeze({
  alpha: {
    name: "alpha",
    deviceTextPrefix: "alpha-device:",
    tokenTyp: "al-ent+jwt",
    audience: "alpha",
    manifestFile: "alpha-update.json",
    releaseTyp: "al-rel+jws",
    products: ["alpha", "alpha-cli"],
  },
  beta: {
    name: "beta",
    deviceTextPrefix: "beta-device:",
    tokenTyp: "be-ent+jwt",
    audience: "beta",
    manifestFile: "beta-update.json",
    releaseTyp: "be-rel+jws",
    products: ["beta", "beta-studio"],
  },
  gamma: {
    name: "gamma",
    deviceTextPrefix: "gamma-device:",
    tokenTyp: "ga-ent+jwt",
    audience: "gamma",
    manifestFile: "gamma-update.json",
    releaseTyp: "ga-rel+jws",
    products: [],
  },
});

export function clientVariant(name: string): ClientVariant {
  const v = (CLIENT_VARIANTS as Record<string, ClientVariant>)[name];
  if (!v) throw new TypeError(`variant must be one of ${Object.keys(CLIENT_VARIANTS).join(", ")}`);
  return v;
}
