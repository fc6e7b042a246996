import { lstatSync } from "node:fs";
import { Elysia } from "elysia";
import { CHANNELS, PLATFORMS, type Variant } from "../../config/variants";
import { KeyturnError } from "../../domain/errors";
import { isInstallerName } from "../../domain/releases/manifest";
import { laneName } from "../../domain/releases/release-controls";
import { installerEtag } from "../../domain/releases/release-index";
import type { AppDeps } from "../deps";
import { serveBytes, serveFile } from "../file-serving";

/**
 * GET (and HEAD) /updates/{product}/{channel}/{platform}/{file} (no {product} when the variant has
 * no products): the manifest or `.sig` of the release this installation is served (its newest
 * admitted, not withdrawn: release-selection.ts), or the installer of that release or an older one
 * not withdrawn. Files are found in the release index by exact name, never by joining the
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
    const who = { dev: principal.claims.dev, kind: principal.claims.kind };
    const served = await d.selection.served(index, who, product, channel, platform);
    if (!served) throw new KeyturnError("no_release", `Nothing has been released on ${[product, channel, platform].filter(Boolean).join("/")}.`);
    if (file === v.manifestFile) {
      d.adoption.seen(principal.claims.sub, laneName(product, channel, platform));
      return serveBytes(request, served.manifestBytes, served.manifestEtag, "application/json");
    }
    if (file === sigFile) return serveBytes(request, served.signatureBytes, served.signatureEtag, "application/jose");

    const release = index.installer(product, channel, platform, file);
    if (!release || !(await d.selection.installerAllowed(index, who, release))) throw new KeyturnError("not_found", "There is nothing at this address.");
    // The index knows the installer had its declared size when scanned; if it changed since (being
    // replaced in place), refuse rather than send a body that disagrees with the manifest.
    const onDisk = lstatSync(release.installerPath, { throwIfNoEntry: false });
    if (!onDisk?.isFile() || onDisk.size !== release.manifest.size) {
      d.log.warn("installer changed on disk since the last scan", { folder: release.folder });
      void d.releases.rescan();
      throw new KeyturnError("unavailable", "The installer is being replaced; try again shortly.");
    }
    return serveFile(request, release.installerPath, release.manifest.size, installerEtag(release), release.manifest.installer);
  };
}
