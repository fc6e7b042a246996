import { lstatSync } from "node:fs";
import { Elysia } from "elysia";
import { CHANNELS, PLATFORMS } from "../../config/variants";
import { KeyturnError } from "../../domain/errors";
import { isInstallerName } from "../../domain/releases/manifest";
import type { AppDeps } from "../deps";
import { serveBytes, serveFile } from "../file-serving";

/**
 * GET (and HEAD) /updates/{product}/{channel}/{platform}/{file} (no {product} when the variant has
 * no products): the newest live release's manifest, its `.sig`, or the installer of any live
 * release of that lane. Files are found in the release index by exact name, never by joining the
 * URL onto a path, so no request can reach a file outside the tree.
 */
export function updateRoutes(d: AppDeps) {
  const v = d.variant;
  const withProduct = v.products.length > 0;
  const path = withProduct ? "/updates/:product/:channel/:platform/:file" : "/updates/:channel/:platform/:file";
  const sigFile = `${v.manifestFile}.sig`;

  return new Elysia().get(path, async ({ request, params }) => {
    const principal = await d.authenticate(request);
    // Elysia gives null for a segment that is not valid percent-encoded UTF-8.
    const p = params as Record<string, string | null | undefined>;
    const text = (value: string | null | undefined) => (typeof value === "string" ? value : "");
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
    if (!latest) throw new KeyturnError("no_release", `Nothing has been released on ${[product, channel, platform].filter(Boolean).join("/")}.`);
    if (file === v.manifestFile) return serveBytes(request, latest.manifestBytes, latest.manifestEtag, "application/json");
    if (file === sigFile) return serveBytes(request, latest.signatureBytes, latest.signatureEtag, "application/jose");

    const release = index.installer(product, channel, platform, file);
    if (!release) throw new KeyturnError("not_found", "There is nothing at this address.");
    // The index knows the installer had its declared size when scanned; if it changed since (being
    // replaced in place), refuse rather than send a body that disagrees with the manifest.
    const onDisk = lstatSync(release.installerPath, { throwIfNoEntry: false });
    if (!onDisk?.isFile() || onDisk.size !== release.manifest.size) {
      d.log.warn("installer changed on disk since the last scan", { folder: release.folder });
      void d.releases.rescan();
      throw new KeyturnError("unavailable", "The installer is being replaced; try again shortly.");
    }
    return serveFile(request, release.installerPath, release.manifest.size, release.installerEtag, release.manifest.installer);
  });
}
