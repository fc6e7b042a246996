import { KeyturnError } from "../../domain/errors";
import type { Principal } from "../../domain/licensing";
import type { FeedFile } from "../../domain/releases/feed-files";
import type { FeedCaller, FeedService } from "../../domain/releases/feeds";
import { visitorInstallation, type PublicLanes, type Visitor } from "../../domain/releases/public-lanes";
import { etagOf, installerEtag, type Release, type ReleaseIndex } from "../../domain/releases/release-index";
import { installationOf } from "../../domain/releases/release-rules";
import { API_PREFIX, type ExtraAnswer, type ParamDoc } from "../endpoint";
import { serveBytes, serveFileRanges } from "../file-serving";
import { BEARER_ERRORS } from "./shared";

/** A version in a feed's path or query (Tauri's and Squirrel.Mac's current_version, Squirrel.Windows' localVersion). */
export const VERSION = /^v?([0-9A-Za-z][0-9A-Za-z.+-]{0,63})$/;

/** Every feed: the bearer check, the licence's channels, and an address that names nothing. */
export const FEED_ERRORS = [...BEARER_ERRORS, "channel_not_allowed", "not_found"] as const;
export const DOCUMENT_HEADERS = ["ETag", "Cache-Control"];
export const NOT_MODIFIED: ExtraAnswer = { description: "If-None-Match matched the ETag", headers: ["ETag"] };

/** The one refusal of a feed address that names nothing this installation may have. */
export const nothingHere = () => new KeyturnError("not_found", "There is nothing at this address.");

const sha256Hex = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

/** A feed's document: generated per installation, so private and revalidated; its ETag is its bytes' SHA-256. */
export function feedDocument(request: Request, text: string, contentType: string): Response {
  const bytes = new TextEncoder().encode(text);
  return serveBytes(request, bytes, etagOf(sha256Hex(bytes)), contentType);
}

/** A release's installer (a full package, a zip), with ranges. */
export function serveInstaller(request: Request, feeds: FeedService, release: Release): Response {
  return serveFileRanges(request, feeds.installerPath(release), release.manifest.size, installerEtag(release), release.manifest.installer);
}

/** A file the release's manifest names for a feed (a delta, a blockmap), hashed again as it is served. */
export function serveFeedFile(request: Request, feeds: FeedService, release: Release, file: FeedFile): Response {
  return serveBytes(request, feeds.feedFile(release, file), etagOf(file.sha256), "application/octet-stream");
}

/** What a feed handler is given that names its lane and its caller. */
interface LaneCall {
  readonly params: Readonly<Record<string, string | null>>;
  readonly principal: Principal;
  readonly visitor: Visitor | null;
}

/** A feed request's lane (platform "" where the path names none) and who asks. */
export interface FeedLane {
  readonly product: string | null;
  readonly channel: string;
  readonly platform: string;
  readonly caller: FeedCaller;
}

/**
 * The lane parameters every feed's path shares (`/feeds/<kind>/{product}/{channel}`, {product} on
 * a variant with products), and the caller: the bearer's installation and channels, or on a public
 * lane without a bearer the visitor holding the product's public channels.
 */
export function feedLanes(feeds: FeedService, publicLanes: PublicLanes) {
  const v = feeds.variant;
  const withProduct = v.products.length > 0;
  const productParam: ParamDoc[] = withProduct ? [{ name: "product", description: "A product of this variant", values: v.products }] : [];
  const channelParam: ParamDoc = { name: "channel", description: "Update channel", values: v.channels };
  const callerOf = (principal: Principal, visitor: Visitor | null, product: string | null): FeedCaller =>
    visitor
      ? { who: visitorInstallation(visitor), channels: publicLanes.channelsOf(product) }
      : { who: installationOf(principal.claims), channels: principal.claims.chn };
  const laneOf = ({ params: p, principal, visitor }: LaneCall): FeedLane => {
    const product = withProduct ? (p.product ?? "") : null;
    return { product, channel: p.channel ?? "", platform: p.platform ?? "", caller: callerOf(principal, visitor, product) };
  };
  return {
    /** The product (where the variant has products) and channel parameters of every feed path. */
    laneParams: [...productParam, channelParam] as ParamDoc[],
    /** `/feeds/<kind>/{product}/{channel}`. */
    lanePath: (kind: string) => `/feeds/${kind}/${withProduct ? "{product}/" : ""}{channel}`,
    /** The lane, its caller, and the lane's index (refusing a channel the caller does not hold). */
    open: async (call: LaneCall): Promise<FeedLane & { readonly index: ReleaseIndex }> => {
      const lane = laneOf(call);
      return { ...lane, index: await feeds.lane(lane.caller, lane.product, lane.channel) };
    },
    /** The installer on the update path (Tauri, Sparkle, Velopack and a public lane's visitor download from there, on keyturn's own origin). */
    updateUrl: (r: Release) =>
      `${feeds.baseUrl}${API_PREFIX}/updates/${[r.manifest.product, r.manifest.channel, r.manifest.platform, r.manifest.installer].filter((x) => x !== null).join("/")}`,
  };
}
