import { Type } from "@sinclair/typebox";
import type { Variant } from "../../config/variants";
import { KeyturnError } from "../../domain/errors";
import type { ReleaseHolder } from "../../domain/releases/holder";
import { laneName } from "../../domain/releases/release-controls";
import { installationOf } from "../../domain/releases/release-rules";
import type { ReleaseSelection } from "../../domain/releases/release-selection";
import { isInstallerName } from "../../domain/releases/manifest";
import { visitorInstallation } from "../../domain/releases/public-lanes";
import { installerEtag } from "../../domain/releases/release-index";
import { endpoint, type Endpoint, type ExtraAnswer, type ParamDoc } from "../endpoint";
import { serveBytes, serveFile } from "../file-serving";
import { BEARER_ERRORS } from "./shared";

const FILE_HEADERS = ["ETag", "Cache-Control", "Accept-Ranges"];

/** The update path's query: `version`, and whatever an updater adds of its own (a cache buster), ignored. */
const UpdateQuery = Type.Object(
  {
    version: Type.Optional(
      Type.String({
        description:
          "That release's manifest, signature or installer, when this installation may install it (GET /releases gives each release's manifest address; several releases may name the same installer file)",
      }),
    ),
    installed: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "The version this installation runs, when it says: a release halted by its rollout's autoHalt is still offered to the installations running it",
      }),
    ),
  },
  { additionalProperties: true },
);

/** The documented answers of the update files beyond refusals. */
const UPDATE_ANSWERS: Record<string, ExtraAnswer> = {
  "200": {
    description: "The manifest or its signature, byte for byte as signed (Accept-Ranges: none); or the whole installer (Accept-Ranges: bytes)",
    content: {
      "application/json": { schema: { description: "The signed manifest" } },
      "application/jose": { schema: { type: "string", description: "Detached compact JWS over the manifest's bytes" } },
      "application/octet-stream": { schema: { type: "string", format: "binary" } },
    },
    headers: FILE_HEADERS,
  },
  "206": {
    description: "One byte range of the installer (Range: bytes=a-b, a-, -n; If-Range honoured)",
    content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
    headers: ["Content-Range", "ETag", "Accept-Ranges"],
  },
  "304": { description: "If-None-Match matched the ETag", headers: ["ETag"] },
};

/**
 * GET /updates/{product}/{channel}/{platform}/{file} (no {product} when the variant has none): the
 * newest live release's manifest, its `.sig`, or the installer of any live release of that lane.
 * `?version=V` on the manifest or its `.sig` names an older release (GET /releases gives each
 * release that address): answered when this installation may install it, as its installer is.
 * Files are found in the release index by exact name, never by joining the URL onto a path, so no
 * request can reach a file outside the tree.
 */
export function updateEndpoints(v: Variant, releases: ReleaseHolder, selection: ReleaseSelection): Endpoint[] {
  const withProduct = v.products.length > 0;
  const sigFile = `${v.manifestFile}.sig`;
  const params: ParamDoc[] = [
    ...(withProduct ? [{ name: "product", description: "A product of this variant", values: v.products }] : []),
    { name: "channel", description: "Update channel", values: v.channels },
    { name: "platform", description: "Platform of the installation", values: v.platforms },
    {
      name: "file",
      description: `${v.manifestFile} (the manifest), ${sigFile} (its detached JWS), or the installer file name a live release's manifest names`,
    },
  ];
  return [
    endpoint({
      method: "GET",
      path: `/updates/${withProduct ? "{product}/" : ""}{channel}/{platform}/{file}`,
      summary:
        "The manifest or signature of the release this installation is served (its newest admitted by any rollout, not withdrawn), or the installer of that release or an older one",
      auth: "entitlement",
      publicLanes: true,
      budget: "api",
      audit: "update",
      params,
      querySchema: UpdateQuery,
      answers: UPDATE_ANSWERS,
      errors: [...BEARER_ERRORS, "channel_not_allowed", "no_release", "not_found", "range_not_satisfiable", "unavailable", "updates_window_ended"],
      handler: async ({ request, params: p, queryValues, principal, visitor, sightedOn }) => {
        // The product, channel and platform are among their declared values (the lifecycle refused others).
        const { channel, platform, file } = p;
        const product = withProduct ? (p.product ?? "") : null;
        if (file !== v.manifestFile && file !== sigFile && !isInstallerName(file)) throw new KeyturnError("not_found", "There is nothing at this address.");
        // A public lane's visitor (no bearer) holds that lane's channel; a bearer, its licence's channels.
        if (!visitor && !principal.claims.chn.includes(channel))
          throw new KeyturnError("channel_not_allowed", `The entitlement does not include the ${channel} channel.`);

        const index = await releases.ready();
        const who = visitor ? visitorInstallation(visitor) : installationOf(principal.claims, queryValues.installed);
        const served = await selection.served(index, who, product, channel, platform);
        if (!served) {
          if (releases.verifying(product, channel, platform)) throw new KeyturnError("unavailable", "The release is being verified; try again shortly.");
          throw new KeyturnError("no_release", `Nothing has been released on ${laneName(product, channel, platform)}.`);
        }
        const version = queryValues.version;
        if (version !== undefined && file !== v.manifestFile && file !== sigFile) {
          // An installer named by several releases' manifests: that version's.
          const release = await selection.installerNamed(index, who, { product, channel, platform }, file, version);
          if (!release)
            throw new KeyturnError(
              "not_found",
              `${laneName(product, channel, platform)} has no release ${version.slice(0, 64)} of ${file} for this installation.`,
            );
          return serveFile(request, releases.verifiedInstaller(release), release.manifest.size, installerEtag(release), release.manifest.installer);
        }
        if (version !== undefined) {
          // An older release's own manifest: only one this installation could install (not withdrawn, not ahead of its rollout).
          const named = index.releasesOf(product, channel, platform).find((r) => r.manifest.version === version);
          const release = named && (await selection.installerAllowed(index, who, named)) ? index.withBytes(named) : null;
          if (!release)
            throw new KeyturnError("not_found", `${laneName(product, channel, platform)} has no release ${version.slice(0, 64)} for this installation.`);
          if (file === sigFile) return serveBytes(request, release.signatureBytes, release.signatureEtag, "application/jose");
          return serveBytes(request, release.manifestBytes, release.manifestEtag, "application/json");
        }
        if (file === v.manifestFile) {
          sightedOn(laneName(product, channel, platform));
          return serveBytes(request, served.manifestBytes, served.manifestEtag, "application/json");
        }
        if (file === sigFile) return serveBytes(request, served.signatureBytes, served.signatureEtag, "application/jose");

        // The installer of the release served to this installation, or of an older one not withdrawn.
        const release = await selection.installerNamed(index, who, { product, channel, platform }, file);
        if (!release) throw new KeyturnError("not_found", "There is nothing at this address.");
        return serveFile(request, releases.verifiedInstaller(release), release.manifest.size, installerEtag(release), release.manifest.installer);
      },
    }),
  ];
}
