import type { Variant } from "../../config/variants";
import { isoTime } from "../../domain/clock";
import { KeyturnError } from "../../domain/errors";
import type { ReleaseHolder } from "../../domain/releases/holder";
import type { Release, ReleaseIndex } from "../../domain/releases/release-index";
import * as A from "../answer-schemas";
import { API_PREFIX, endpoint, type Endpoint } from "../endpoint";
import { jsonText } from "../respond";
import { BEARER_ERRORS } from "./shared";

/** GET /releases: every live release on the entitlement's channels, newest first. */
export function releasesEndpoints(v: Variant, releases: ReleaseHolder): Endpoint[] {
  const serialised = new WeakMap<ReleaseIndex, Map<string, string>>();
  const record = (r: Release) => {
    const m = r.manifest;
    const lane = [m.product, m.channel, m.platform].filter((s) => s !== null).join("/");
    return {
      ...(m.product !== null ? { product: m.product } : {}),
      channel: m.channel,
      platform: m.platform,
      version: m.version,
      released: isoTime(m.released),
      installer: m.installer,
      size: m.size,
      sha256: m.sha256,
      manifest: `${API_PREFIX}/updates/${lane}/${v.manifestFile}`,
    };
  };

  return [
    endpoint({
      method: "GET",
      path: "/releases",
      summary: "Every live release the entitlement includes, newest first",
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
        const channels = principal.claims.chn;
        // An index never changes once built (a re-scan swaps in a new one), so each answer is built and
        // serialised once per index: with 10,000 releases it is a megabyte of JSON.
        let answers = serialised.get(index);
        if (!answers) serialised.set(index, (answers = new Map()));
        const key = `${channels.join(",")}|${product ?? ""}`;
        let body = answers.get(key);
        if (body === undefined) {
          const list = index.all.filter((r) => channels.includes(r.manifest.channel) && (product === null || r.manifest.product === product));
          body = JSON.stringify({ ok: true, releases: list.map(record) });
          answers.set(key, body);
        }
        return jsonText(body);
      },
    }),
  ];
}
