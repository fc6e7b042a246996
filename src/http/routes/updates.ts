import { Elysia } from "elysia";
import { CHANNELS, PLATFORMS, type Variant } from "../../config/variants";
import { KeyturnError } from "../../domain/errors";
import { isInstallerName } from "../../domain/releases/manifest";
import { installerEtag } from "../../domain/releases/release-index";
import type { AppDeps } from "../deps";
import { serveBytes, serveFile } from "../file-serving";

/**
 * GET (and HEAD) /updates/{product}/{channel}/{platform}/{file} (no {product} when the variant has
 * no products): the newest live release's manifest, its `.sig`, or the installer of any live
 * release of that lane. Files are found in the release index by exact name, never by joining the
 * URL onto a path, so no request can reach a file outside the tree.
 */
export function updateRoutes(d: AppDeps, serve: UpdateHandler) {
  return new Elysia().get(updatePath(d.variant), ({ request, params }) => serve(request, params as UpdateParams));
}

/** The route's path below the API prefix, with Elysia's `:param` segments. */
export function updatePath(v: Variant): string {
  return v.products.length > 0 ? "/updates/:product/:channel/:platform/:file" : "/updates/:channel/:platform/:file";
}

/** The path segments as decoded; null for a segment that is not valid percent-encoded UTF-8. */
export type UpdateParams = Readonly<Record<"product" | "channel" | "platform" | "file", string | null | undefined>>;
export type UpdateHandler = (request: Request, params: UpdateParams) => Promise<Response>;

/** The update route's work, the same whether Elysia or the fast path (src/http/fast-path.ts) routed the request. */
export function updateHandler(d: AppDeps): UpdateHandler {
  const v = d.variant;
  const withProduct = v.products.length > 0;
  const sigFile = `${v.manifestFile}.sig`;
  const text = (value: string | null | undefined) => (typeof value === "string" ? value : "");

  return async (request, p) => {
    const principal = await d.authenticate(request);
    const product = withProduct ? text(p.product) : null;
    const channel = text(p.channel);
    const platform = text(p.platform);
    const file = text(p.file);
    const known =
      !request.url.split("?", 1)[0]!.endsWith("/") &&
      (product === null || v.products.includes(product)) &&
      (CHANNELS as readonly string[]).includes(channel) &&
      (PLATFORMS as readonly string[]).includes(platform) &&
      (file === v.manifestFile || file === sigFile || isInstallerName(file));
    if (!known) throw new KeyturnError("not_found", "There is nothing at this address.");
    if (!principal.claims.chn.includes(channel))
      throw new KeyturnError("channel_not_allowed", `The entitlement does not include the ${channel} channel.`);

    const index = await d.releases.ready();
    const latest = index.latest(product, channel, platform);
    if (!latest) {
      if (d.releases.verifying(product, channel, platform)) throw new KeyturnError("unavailable", "The release is being verified; try again shortly.");
      throw new KeyturnError("no_release", `Nothing has been released on ${[product, channel, platform].filter(Boolean).join("/")}.`);
    }
    if (file === v.manifestFile) return serveBytes(request, latest.manifestBytes, latest.manifestEtag, "application/json");
    if (file === sigFile) return serveBytes(request, latest.signatureBytes, latest.signatureEtag, "application/jose");

    const release = index.installer(product, channel, platform, file);
    if (!release) throw new KeyturnError("not_found", "There is nothing at this address.");
    // Only bytes hashed to the manifest's sha256 are sent, read through the descriptor that was checked.
    const verified = d.releases.openInstaller(release);
    if (verified === null) throw new KeyturnError("unavailable", "The installer is being replaced; try again shortly.");
    return serveFile(request, verified, release.manifest.size, installerEtag(release), release.manifest.installer);
  };
}
