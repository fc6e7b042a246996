import type { Variant } from "../../config/variants";
import { KeyturnError } from "../errors";
import type { Installation } from "./release-selection";

/**
 * A visitor of a public lane: no token, so no licence; its device hash when the client sent one
 * (rollouts admit it as they admit an installation with that hash), else null.
 */
export interface Visitor {
  readonly dev: string | null;
}

/** The header and query parameter a client names its device hash with on a public lane. */
export const DEVICE_HEADER = "Keyturn-Device";
export const DEVICE_QUERY = "device";

/** A device hash as the kit makes it (deviceHash in src/client/device.ts): SHA-256, base64url, 43 characters. */
const DEVICE_HASH = /^[A-Za-z0-9_-]{43}$/;

/**
 * The visitor of a request: the device hash from the Keyturn-Device header, else the `device`
 * query parameter (for updaters that cannot send headers but keep the feed URL's query), else
 * none. One that is not a device hash is refused, naming where it came from.
 */
export function visitorOf(header: string | null, query: string): Visitor {
  const fromQuery = header === null ? new URLSearchParams(query).getAll(DEVICE_QUERY) : [];
  if (fromQuery.length > 1) throw new KeyturnError("invalid_request", `Give the ${DEVICE_QUERY} parameter once.`);
  const dev = header ?? fromQuery[0] ?? null;
  if (dev !== null && !DEVICE_HASH.test(dev))
    throw new KeyturnError(
      "invalid_request",
      `${header !== null ? `The ${DEVICE_HEADER} header` : `The ${DEVICE_QUERY} parameter`} must be a device hash (43 characters of base64url).`,
    );
  return { dev };
}

/**
 * The device hash a visitor without one is selected under: no device hash is 43 characters of
 * base64url and empty, so no installation shares it. ReleaseSelection admits it only to releases
 * rolled out to everyone.
 */
export const NO_DEVICE = "";

/** The installation a visitor is selected as: a licence holder with its device hash (staff never). */
export const visitorInstallation = (v: Visitor): Installation => ({ dev: v.dev ?? NO_DEVICE, kind: "license" });

/**
 * The lanes a site marks public (--public-lanes): their manifests, installers, feeds and download
 * page answer without a bearer token, with the same signatures, controls and rollouts. A bearer,
 * when sent, is checked and used as on any lane.
 */
export class PublicLanes {
  private readonly lanes: ReadonlySet<string>;

  constructor(
    private readonly variant: Variant,
    lanes: readonly string[],
  ) {
    this.lanes = new Set(lanes);
  }

  get any(): boolean {
    return this.lanes.size > 0;
  }

  /** Whether product/channel (gamma: channel) is public. */
  has(product: string | null, channel: string): boolean {
    return this.lanes.has(product === null ? channel : `${product}/${channel}`);
  }

  /** The public channels of a product: what a visitor "holds", as a licence holds its channels. */
  channelsOf(product: string | null): string[] {
    return this.variant.channels.filter((c) => this.has(product, c));
  }
}

const OS_OF_AGENT: readonly [RegExp, string][] = [
  [/Windows NT|Win64|WOW64/i, "win-"],
  [/Macintosh|Mac OS X/i, "mac-"],
  [/Linux|X11|CrOS/i, "linux-"],
];

/**
 * The platform a browser's User-Agent says it runs on, among `platforms`, or null. The system
 * from its usual tokens; the architecture arm64 when it names one (aarch64, arm64), else x64. A
 * Mac's browser says "Intel Mac OS X" on Apple silicon too, so on a Mac arm64 is preferred when
 * offered.
 */
export function platformOfAgent(agent: string, platforms: readonly string[]): string | null {
  const os = OS_OF_AGENT.find(([test]) => test.test(agent))?.[1];
  if (os === undefined || /Android|iPhone|iPad/i.test(agent)) return null;
  const ofOs = platforms.filter((p) => p.startsWith(os));
  const arm = /aarch64|arm64/i.test(agent) || os === "mac-";
  const preferred = arm ? [`${os}arm64`, `${os}x64`] : [`${os}x64`, `${os}arm64`];
  return preferred.find((p) => ofOs.includes(p)) ?? ofOs[0] ?? null;
}
