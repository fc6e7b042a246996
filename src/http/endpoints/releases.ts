import type { Variant } from "../../config/variants";
import { installationOf } from "../../domain/releases/release-rules";
import { isoTime } from "../../domain/clock";
import { KeyturnError } from "../../domain/errors";
import type { ReleaseHolder } from "../../domain/releases/holder";
import { laneName } from "../../domain/releases/release-controls";
import type { ReleaseSelection } from "../../domain/releases/release-selection";
import type { Manifest } from "../../domain/releases/manifest";
import type { Release, ReleaseIndex } from "../../domain/releases/release-index";
import * as A from "../answer-schemas";
import { API_PREFIX, endpoint, type Endpoint } from "../endpoint";
import { jsonText } from "../respond";
import { BEARER_ERRORS } from "./shared";

/** GET /releases: every live release on the entitlement's channels, newest first. */
/** Answers kept per index (up to a megabyte each): one per channel set and product, more while rollouts are under way. */
const MAX_ANSWERS_PER_INDEX = 16;

const laneOf = (r: Release) => ({
  ...(r.manifest.product !== null ? { product: r.manifest.product } : {}),
  channel: r.manifest.channel,
  platform: r.manifest.platform,
});

/**
 * GET /releases: the releases on the entitlement's channels this installation may install, newest
 * first: in each lane the release it is served and every older one not withdrawn. `notYetAvailable`
 * lists, per lane, the newest release that exists but is not rolled out to it yet.
 */
export function releasesEndpoints(v: Variant, releases: ReleaseHolder, selection: ReleaseSelection): Endpoint[] {
  const serialised = new WeakMap<ReleaseIndex, Map<string, Blob>>();
  const record = (m: Manifest) => {
    return {
      ...(m.product !== null ? { product: m.product } : {}),
      channel: m.channel,
      platform: m.platform,
      version: m.version,
      released: isoTime(m.released),
      installer: m.installer,
      size: m.size,
      sha256: m.sha256,
      // Each release its own manifest (the lane's plain address is the one served now, which moves on).
      manifest: `${API_PREFIX}/updates/${laneName(m.product, m.channel, m.platform)}/${v.manifestFile}?version=${encodeURIComponent(m.version)}`,
    };
  };

  return [
    endpoint({
      method: "GET",
      path: "/releases",
      summary: "The releases this installation may install on its entitlement's channels, newest first, and those not yet rolled out to it",
      auth: "entitlement",
      budget: "api",
      audit: "releases",
      ...(v.products.length > 0 ? { query: [{ name: "product", description: "Only this product's releases", values: v.products }] } : {}),
      answer: A.ReleasesAnswer,
      errors: [...BEARER_ERRORS, "invalid_request"],
      handler: async ({ query, principal }) => {
        const product = query === "" ? null : new URLSearchParams(query).get("product");
        if (product !== null && !v.products.includes(product))
          throw new KeyturnError(
            "invalid_request",
            v.products.length > 0 ? `product must be one of ${v.products.join(", ")}.` : `${v.name} has no products; send no product parameter.`,
          );
        const index = await releases.ready();
        const listing = await selection.listing(index, installationOf(principal.claims), principal.claims.chn, product);
        // An index never changes once built (a re-scan swaps in a new one), so each answer is built and
        // serialised once per index and listing key: installations in the same place of every rollout share it.
        let answers = serialised.get(index);
        if (!answers || answers.size >= MAX_ANSWERS_PER_INDEX) serialised.set(index, (answers = new Map()));
        let body = answers.get(listing.key);
        if (body === undefined) {
          const { releases: list, notYetAvailable } = listing.build();
          body = new Blob([
            JSON.stringify({
              ok: true,
              releases: list.map(record),
              notYetAvailable: notYetAvailable.map((n) => ({ ...laneOf(n.release), version: n.release.manifest.version, share: n.share })),
            }),
          ]);
          answers.set(listing.key, body);
        }
        return jsonText(body);
      },
    }),
  ];
}
