import { Elysia } from "elysia";
import { isoTime } from "../../domain/clock";
import { KeyturnError } from "../../domain/errors";
import type { Release, ReleaseIndex } from "../../domain/releases/release-index";
import { API_PREFIX } from "../app";
import type { AppDeps } from "../deps";
import { jsonText } from "../respond";

const serialised = new WeakMap<ReleaseIndex, Map<string, string>>();
/** Answers kept per index (up to a megabyte each): one per channel set and product, more while rollouts are under way. */
const MAX_ANSWERS_PER_INDEX = 16;

const laneOf = (r: Release) => ({
  ...(r.manifest.product !== null ? { product: r.manifest.product } : {}),
  channel: r.manifest.channel,
  platform: r.manifest.platform,
});

/**
 * GET /releases: the releases on the entitlement's channels this installation may install, newest
 * first (design.md's record): in each lane the release it is served and every older one not
 * withdrawn. `notYetAvailable` lists, per lane, the newest release that exists but is not rolled
 * out to it yet: `{ product?, channel, platform, version, share }` (share: percent admitted now);
 * empty when everything is.
 */
export function releasesRoutes(d: AppDeps) {
  const v = d.variant;
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

  return new Elysia().get("/releases", async ({ request }) => {
    const principal = await d.authenticate(request);
    const product = new URL(request.url).searchParams.get("product");
    if (product !== null && !v.products.includes(product))
      throw new KeyturnError(
        "invalid_request",
        v.products.length > 0 ? `product must be one of ${v.products.join(", ")}.` : `${v.name} has no products; send no product parameter.`,
      );
    const index = await d.releases.ready();
    const channels = principal.claims.chn;
    const listing = await d.selection.listing(index, { dev: principal.claims.dev, kind: principal.claims.kind }, channels, product);
    // An index never changes once built (a re-scan swaps in a new one), so each answer is built and
    // serialised once per index and listing key (release-selection.ts): with 10,000 releases it is
    // a megabyte of JSON, and installations in the same place of every rollout share it.
    let answers = serialised.get(index);
    if (!answers || answers.size >= MAX_ANSWERS_PER_INDEX) serialised.set(index, (answers = new Map()));
    let body = answers.get(listing.key);
    if (body === undefined) {
      const { releases, notYetAvailable } = listing.build();
      body = JSON.stringify({
        ok: true,
        releases: releases.map(record),
        notYetAvailable: notYetAvailable.map((n) => ({ ...laneOf(n.release), version: n.release.manifest.version, share: n.share })),
      });
      answers.set(listing.key, body);
    }
    return jsonText(body);
  });
}
