import { isLane } from "../../config/variants";
import { KeyturnError } from "../../domain/errors";
import { isSquirrelMacRelease } from "../../domain/releases/feed-formats";
import { notesOf, type FeedCaller, type FeedService } from "../../domain/releases/feeds";
import { visitorInstallation, type PublicLanes, type Visitor } from "../../domain/releases/public-lanes";
import { laneName } from "../../domain/releases/release-controls";
import { etagOf, installerEtag, type Release } from "../../domain/releases/release-index";
import { squirrelEntries, squirrelMacJson, squirrelReleasesFile } from "../../domain/releases/squirrel";
import { compareVersions } from "../../domain/releases/version-order";
import type { Principal } from "../../domain/licensing";
import { FEED_CREDENTIAL_SEGMENT, type FeedCredentials } from "../../domain/feed-credential";
import { credentialOfPath } from "./feed-credentials";
import { API_PREFIX, endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { serveBytes, serveFileRanges } from "../file-serving";
import { jsonText } from "../respond";
import { BEARER_ERRORS, NO_STORE } from "./shared";

const VERSION = /^v?([0-9A-Za-z][0-9A-Za-z.+-]{0,63})$/;
const sha256Hex = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const FEED_ERRORS = [...BEARER_ERRORS, "channel_not_allowed", "not_found", "invalid_request"] as const;

/** The feed's document: per installation, so revalidated; its ETag is its bytes' SHA-256. */
const document = (request: Request, text: string, contentType: string) => {
  const bytes = new TextEncoder().encode(text);
  return serveBytes(request, bytes, etagOf(sha256Hex(bytes)), contentType);
};

/**
 * The feeds of Electron's built-in autoUpdater (Electron Forge's makers): Squirrel.Windows'
 * `RELEASES` with its full and delta packages, and Squirrel.Mac's update JSON. Gated, staged and
 * mirrored like the other feeds (feeds.ts), from the same index, controls and rollouts; and the
 * Sparkle deltas the appcast names.
 */
export function squirrelFeedEndpoints(feeds: FeedService, publicLanes: PublicLanes, credentials: FeedCredentials): Endpoint[] {
  const v = feeds.variant;
  const withProduct = v.products.length > 0;
  const productParam: ParamDoc[] = withProduct ? [{ name: "product", description: "A product of this variant", values: v.products }] : [];
  const channelParam: ParamDoc = { name: "channel", description: "Update channel", values: v.channels };
  const lanePath = (kind: string) => `/feeds/${kind}/${withProduct ? "{product}/" : ""}{channel}/{platform}`;
  const laneOf = (p: Readonly<Record<string, string | null>>) => ({
    product: withProduct ? (p.product ?? "") : null,
    channel: p.channel ?? "",
    platform: p.platform ?? "",
  });
  const callerOf = (principal: Principal, visitor: Visitor | null, product: string | null): FeedCaller =>
    visitor
      ? { who: visitorInstallation(visitor), channels: publicLanes.channelsOf(product) }
      : { who: { dev: principal.claims.dev, kind: principal.claims.kind }, channels: principal.claims.chn };
  /** The installer on the update path (a public lane's visitor downloads it there without a bearer). */
  const updateUrl = (r: Release) =>
    `${feeds.baseUrl}${API_PREFIX}/updates/${[r.manifest.product, r.manifest.channel, r.manifest.platform, r.manifest.installer].filter((x) => x !== null).join("/")}`;
  /**
   * Where Squirrel.Mac downloads the zip. It sends no header on that request (SQRLUpdater's
   * requestForDownload makes a bare request: https://github.com/Squirrel/Squirrel.Mac/blob/8d808803bc89ec0e2aa1450474856dfee3b00c6b/Squirrel/SQRLUpdater.m),
   * so an installation's url carries a feed credential: the one of the check's own URL, else one
   * made from its bearer. A visitor's is the public update path. A mirror makes no credential: a
   * bearer check there is answered the update path (configure Squirrel.Mac with a credential URL).
   */
  const macDownloadUrl = (r: Release, request: Request, principal: Principal, visitor: Visitor | null) => {
    if (visitor) return updateUrl(r);
    let credential = credentialOfPath(new URL(request.url).pathname);
    if (credential === "") {
      try {
        credential = credentials.issue(principal).credential;
      } catch (e) {
        if (e instanceof KeyturnError && e.code === "licensing_unavailable") return updateUrl(r);
        throw e;
      }
    }
    const lane = [r.manifest.product, r.manifest.channel, r.manifest.platform].filter((x) => x !== null).join("/");
    return `${feeds.baseUrl}${API_PREFIX}/feeds/${FEED_CREDENTIAL_SEGMENT}/${credential}/squirrel-mac/${lane}/zip/${r.manifest.installer}`;
  };
  const winPlatforms = v.platforms.filter((p) => p.startsWith("win-"));
  const macPlatforms = v.platforms.filter((p) => p.startsWith("mac-"));

  const squirrelWindows = endpoint({
    method: "GET",
    path: `${lanePath("squirrel")}/{file}`,
    summary:
      "Squirrel.Windows (Electron's autoUpdater on Windows): RELEASES (SHA1 name size per line) of the packages this installation may install, and those -full.nupkg and -delta.nupkg files",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...productParam,
      channelParam,
      { name: "platform", description: "A Windows platform of the site", values: winPlatforms },
      { name: "file", description: "RELEASES (Squirrel adds ?id=&localVersion=&arch=), or a package RELEASES names" },
    ],
    answers: {
      "200": {
        description: "RELEASES (text), or a package",
        content: { "text/plain": { schema: { type: "string" } }, "application/octet-stream": { schema: { type: "string", format: "binary" } } },
        headers: ["ETag", "Cache-Control"],
      },
      "206": { description: "A range of a full package", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
      "304": { description: "If-None-Match matched the ETag", headers: ["ETag"] },
    },
    errors: [...FEED_ERRORS, "no_release", "unavailable", "range_not_satisfiable"],
    handler: async ({ request, params: p, principal, visitor, query, sightedOn }) => {
      const { product, channel, platform } = laneOf(p);
      const file = p.file ?? "";
      const caller = callerOf(principal, visitor, product);
      const index = await feeds.lane(caller, product, channel);
      if (file === "RELEASES") {
        const listed = await feeds.listed(index, caller, product, channel, [platform], (r) => r.manifest.feeds?.squirrel !== undefined);
        if (listed.length === 0) throw new KeyturnError("no_release", `Nothing has been released for Squirrel on ${laneName(product, channel, platform)}.`);
        sightedOn(laneName(product, channel, platform));
        const local = VERSION.exec(new URLSearchParams(query).get("localVersion") ?? "")?.[1] ?? null;
        const laneOf = (r: Release) => index.releasesOf(r.manifest.product, r.manifest.channel, r.manifest.platform);
        return document(request, squirrelReleasesFile(squirrelEntries(listed, local, laneOf)), "text/plain;charset=utf-8");
      }
      if (file.toLowerCase().endsWith("-delta.nupkg")) {
        const found = await feeds.deltaOf(index, caller, product, channel, [platform], file);
        if (!found || !found.release.manifest.feeds?.squirrel?.deltas.includes(found.delta))
          throw new KeyturnError("not_found", "There is nothing at this address.");
        return serveBytes(request, feeds.feedFile(found.release, found.delta), etagOf(found.delta.sha256), "application/octet-stream");
      }
      const release = await feeds.fileOf(index, caller, product, channel, [platform], file);
      if (!release?.manifest.feeds?.squirrel) throw new KeyturnError("not_found", "There is nothing at this address.");
      return serveFileRanges(request, feeds.installerPath(release), release.manifest.size, installerEtag(release), release.manifest.installer);
    },
  });

  const squirrelMac = endpoint({
    method: "GET",
    path: `${lanePath("squirrel-mac")}/{current_version}`,
    summary:
      "Squirrel.Mac (Electron's autoUpdater on macOS): the zip of the release this installation is served when newer than current_version ({ url, name, notes, pub_date }), else 204",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...productParam,
      channelParam,
      { name: "platform", description: "A macOS platform of the site", values: macPlatforms },
      { name: "current_version", description: "The running app's version (Electron's app.getVersion())" },
    ],
    answers: {
      "200": {
        description:
          "{ url, name, notes, pub_date }: url is the release's zip, with a feed credential in its path for an installation (Squirrel.Mac downloads it without headers), on the update path for a public lane's visitor; not stored (the credential is made per answer)",
        content: { "application/json": { schema: { type: "object", required: ["url", "name", "notes", "pub_date"] } } },
        headers: ["Cache-Control"],
      },
      "204": { description: "Nothing newer than current_version for this installation" },
    },
    errors: [...FEED_ERRORS],
    handler: async ({ request, params: p, principal, visitor, sightedOn }) => {
      const { product, channel, platform } = laneOf(p);
      const caller = callerOf(principal, visitor, product);
      const index = await feeds.lane(caller, product, channel);
      if (!isLane(v, product, channel, platform)) throw new KeyturnError("not_found", "There is nothing at this address.");
      const current = VERSION.exec(p.current_version ?? "");
      if (!current) throw new KeyturnError("invalid_request", "current_version must be a version like 1.4.2.");
      sightedOn(laneName(product, channel, platform));
      // Squirrel.Mac has "no update" (204) and no "no release": a lane with nothing yet is the former.
      const listed = await feeds.listed(index, caller, product, channel, [platform], (r) => isSquirrelMacRelease(r.manifest));
      const newest = listed[0];
      if (!newest || compareVersions(newest.manifest.version, current[1]!) <= 0) return new Response(null, { status: 204 });
      const url = macDownloadUrl(newest, request, principal, visitor);
      return jsonText(squirrelMacJson({ url, version: newest.manifest.version, notes: notesOf(newest), released: newest.manifest.released }), NO_STORE);
    },
  });

  const squirrelMacZip = endpoint({
    method: "GET",
    path: `${lanePath("squirrel-mac")}/zip/{file}`,
    summary:
      "The zip a Squirrel.Mac answer names, of a release this installation may install (with a feed credential in the path: Squirrel.Mac sends no header here)",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...productParam,
      channelParam,
      { name: "platform", description: "A macOS platform of the site", values: macPlatforms },
      { name: "file", description: "The release's zip" },
    ],
    answers: {
      "200": { description: "The zip", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } }, headers: ["ETag"] },
      "206": { description: "A range of the zip", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
      "304": { description: "If-None-Match matched the ETag", headers: ["ETag"] },
    },
    errors: [...FEED_ERRORS, "unavailable", "range_not_satisfiable"],
    handler: async ({ request, params: p, principal, visitor }) => {
      const { product, channel, platform } = laneOf(p);
      const caller = callerOf(principal, visitor, product);
      const index = await feeds.lane(caller, product, channel);
      const release = await feeds.fileOf(index, caller, product, channel, [platform], p.file ?? "");
      if (!release || !isSquirrelMacRelease(release.manifest)) throw new KeyturnError("not_found", "There is nothing at this address.");
      return serveFileRanges(request, feeds.installerPath(release), release.manifest.size, installerEtag(release), release.manifest.installer);
    },
  });

  const sparkleDelta = endpoint({
    method: "GET",
    // `deltas/` keeps it apart from the appcast's `{file}` at the same depth (one parameter name per position).
    path: `/feeds/sparkle/${withProduct ? "{product}/" : ""}{channel}/deltas/{platform}/{file}`,
    summary: "A Sparkle delta the appcast names (<sparkle:deltas>), of a release this installation may install",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...productParam,
      channelParam,
      { name: "platform", description: "A macOS platform of the site", values: macPlatforms },
      { name: "file", description: "The delta's file name" },
    ],
    answers: {
      "200": { description: "The delta archive", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } }, headers: ["ETag"] },
      "304": { description: "If-None-Match matched the ETag", headers: ["ETag"] },
    },
    errors: [...FEED_ERRORS, "unavailable"],
    handler: async ({ request, params: p, principal, visitor }) => {
      const { product, channel, platform } = laneOf(p);
      const caller = callerOf(principal, visitor, product);
      const index = await feeds.lane(caller, product, channel);
      const found = await feeds.deltaOf(index, caller, product, channel, [platform], p.file ?? "");
      if (!found || !found.release.manifest.feeds?.sparkle?.deltas?.includes(found.delta as never))
        throw new KeyturnError("not_found", "There is nothing at this address.");
      return serveBytes(request, feeds.feedFile(found.release, found.delta), etagOf(found.delta.sha256), "application/octet-stream");
    },
  });

  return [...(winPlatforms.length > 0 ? [squirrelWindows] : []), ...(macPlatforms.length > 0 ? [squirrelMac, squirrelMacZip, sparkleDelta] : [])];
}
