import { Elysia } from "elysia";
import { isoTime } from "../../domain/clock";
import { KeyturnError } from "../../domain/errors";
import type { Release, ReleaseIndex } from "../../domain/releases/release-index";
import { API_PREFIX } from "../app";
import type { AppDeps } from "../deps";
import { jsonText } from "../respond";

const serialised = new WeakMap<ReleaseIndex, Map<string, string>>();

/** GET /releases: every live release on the entitlement's channels, newest first (docs/architecture.md's record). */
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
    // An index never changes once built (a re-scan swaps in a new one), so each answer is built and
    // serialised once per index: with 10,000 releases it is a megabyte of JSON.
    let answers = serialised.get(index);
    if (!answers) serialised.set(index, (answers = new Map()));
    const key = `${channels.join(",")}|${product ?? ""}`;
    let body = answers.get(key);
    if (body === undefined) {
      const releases = index.all.filter((r) => channels.includes(r.manifest.channel) && (product === null || r.manifest.product === product));
      body = JSON.stringify({ ok: true, releases: releases.map(record) });
      answers.set(key, body);
    }
    return jsonText(body);
  });
}
