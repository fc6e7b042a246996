import type { Variant } from "../../config/variants";
import { parseFeeds, type Feeds } from "./feed-files";
import { FEATURE_NAME, FEATURE_NAME_MAX } from "../../config/features";
import { ReleaseProblem } from "./problem";
import { parseRollout, type Rollout } from "./rollout";

/** Where a release folder sits in the tree: `<product>/<channel>/<platform>/` (gamma: no product). */
export interface ReleasePlace {
  readonly product: string | null;
  readonly channel: string;
  readonly platform: string;
}

/**
 * The fields of a release manifest keyturn uses. notes, minimumVersion and critical are checked but
 * not kept (they reach clients in the manifest's bytes; 10,000 releases' notes would stay in memory),
 * and vendors may add other fields, served as they are.
 */
export interface Manifest extends ReleasePlace {
  readonly version: string;
  /** `released` as milliseconds since the epoch. */
  readonly released: number;
  readonly installer: string;
  readonly size: number;
  readonly sha256: string;
  /** The installer's SHA-512 (hex) when the manifest states it (`release make` does); `release check` and `release sign` verify it. */
  readonly sha512?: string;
  /** The staged rollout the vendor signed (rollout.ts); null: every installation. */
  readonly rollout: Rollout | null;
  /** The existing updaters' feeds that offer the release (feed-files.ts); null: the update path only. */
  readonly feeds: Feeds | null;
  /** A feature the licence must carry to be offered the release (a paid add-on, licence-terms.ts); absent: none. */
  readonly requiresFeature?: string;
}

const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/;
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
/** A SHA-256 as a manifest states it: 64 lower-case hex digits. */
export const SHA256_HEX = /^[0-9a-f]{64}$/;
const SHA512_HEX = /^[0-9a-f]{128}$/;
/**
 * Installer names are plain, URL- and header-safe file names: they appear in the update path and in
 * Content-Disposition, and are looked up, never joined onto a path from a URL.
 */
const INSTALLER = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;

/** Whether a name can be an installer's: a bare, plain file name (no separator, `..`, `%`, NUL or leading dot). */
export function isInstallerName(name: string): boolean {
  return INSTALLER.test(name) && !name.includes("..");
}

/**
 * Parses a manifest's bytes and checks each field and that it agrees with the folder it sits in.
 * Throws ReleaseProblem naming the first thing wrong.
 */
export function parseManifest(bytes: Uint8Array, variant: Variant, place: ReleasePlace): Manifest {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ReleaseProblem(`${variant.manifestFile} is not valid JSON`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new ReleaseProblem(`${variant.manifestFile} is not a JSON object`);
  const m = doc as Record<string, unknown>;
  const field = (name: string, ok: boolean, rule: string) => {
    if (!ok) throw new ReleaseProblem(m[name] === undefined ? `manifest has no ${name}` : `manifest ${name} ${rule}`);
  };
  const isText = (v: unknown): v is string => typeof v === "string";

  if (variant.products.length > 0) field("product", isText(m.product) && variant.products.includes(m.product), `must be one of ${variant.products.join(", ")}`);
  else if (m.product !== undefined) throw new ReleaseProblem(`manifest has a product, but ${variant.name} has no products`);
  field("channel", isText(m.channel) && variant.channels.includes(m.channel), `must be one of ${variant.channels.join(", ")}`);
  field("platform", isText(m.platform) && variant.platforms.includes(m.platform), `must be one of ${variant.platforms.join(", ")}`);
  field("version", isText(m.version) && VERSION.test(m.version), "must be a version like 1.4.2 or 2.0.0-beta.1");
  const released = isText(m.released) && ISO_WITH_OFFSET.test(m.released) ? Date.parse(m.released) : NaN;
  field("released", !Number.isNaN(released), "must be an ISO 8601 time with an offset, e.g. 2026-11-21T10:00:00+00:00");
  field("installer", isText(m.installer) && isInstallerName(m.installer), "must be a bare file name of letters, digits, . _ + - (no path, no ..)");
  field("size", Number.isSafeInteger(m.size) && (m.size as number) >= 0, "must be a whole number of bytes");
  field("sha256", isText(m.sha256) && SHA256_HEX.test(m.sha256), "must be 64 lower-case hex digits");
  if (m.sha512 !== undefined) field("sha512", isText(m.sha512) && SHA512_HEX.test(m.sha512), "must be 128 lower-case hex digits");
  if (m.notes !== undefined) field("notes", isText(m.notes), "must be a string");
  if (m.minimumVersion !== undefined) field("minimumVersion", isText(m.minimumVersion) && VERSION.test(m.minimumVersion), "must be a version");
  if (m.critical !== undefined) field("critical", typeof m.critical === "boolean", "must be true or false");
  const rollout = parseRollout(m.rollout);
  if (m.requiresFeature !== undefined)
    field(
      "requiresFeature",
      isText(m.requiresFeature) && m.requiresFeature.length <= FEATURE_NAME_MAX && FEATURE_NAME.test(m.requiresFeature),
      "must be a feature's name (lower-case letters and digits joined by . _ or -)",
    );

  const installer = m.installer as string;
  if (installer === variant.manifestFile || installer === `${variant.manifestFile}.sig`)
    throw new ReleaseProblem("manifest installer must not be the manifest or its signature");
  const feeds = parseFeeds(m.feeds, installer, [variant.manifestFile, `${variant.manifestFile}.sig`]);

  const product = variant.products.length > 0 ? (m.product as string) : null;
  const said = { product, channel: m.channel as string, platform: m.platform as string };
  for (const key of ["product", "channel", "platform"] as const)
    if (said[key] !== place[key]) throw new ReleaseProblem(`manifest says ${key} ${said[key]}, but the folder is under ${place[key]}`);
  // The place's strings, not the manifest's copies: 10,000 releases share a handful.
  return Object.freeze({
    product: place.product,
    channel: place.channel,
    platform: place.platform,
    version: m.version as string,
    released,
    installer,
    size: m.size as number,
    sha256: m.sha256 as string,
    ...(m.sha512 !== undefined ? { sha512: m.sha512 as string } : {}),
    rollout,
    feeds,
    ...(m.requiresFeature !== undefined ? { requiresFeature: m.requiresFeature as string } : {}),
  });
}
