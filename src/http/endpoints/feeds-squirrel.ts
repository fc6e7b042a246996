import { isLane } from "../../config/variants";
import { KeyturnError } from "../../domain/errors";
import { isSquirrelMacRelease } from "../../domain/releases/feed-formats";
import { notesOf, type FeedService } from "../../domain/releases/feeds";
import type { PublicLanes, Visitor } from "../../domain/releases/public-lanes";
import { laneName } from "../../domain/releases/release-controls";
import type { Release } from "../../domain/releases/release-index";
import { squirrelEntries, squirrelMacJson, squirrelReleasesFile } from "../../domain/releases/squirrel";
import { compareVersions } from "../../domain/releases/version-order";
import type { Principal } from "../../domain/licensing";
import type { FeedCredentials } from "../../domain/feed-credential";
import { credentialFeedsUrl, credentialOfPath } from "./feed-credentials";
import { endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { jsonText } from "../respond";
import { DOCUMENT_HEADERS, FEED_ERRORS, NOT_MODIFIED, VERSION, feedDocument, feedLanes, nothingHere, serveFeedFile, serveInstaller } from "./feed-lane";
import { NO_STORE } from "./shared";

/** Squirrel's feeds also refuse a malformed version (Squirrel.Mac's current_version). */
const SQUIRREL_ERRORS = [...FEED_ERRORS, "invalid_request"] as const;

/**
 * The feeds of Electron's built-in autoUpdater (Electron Forge's makers): Squirrel.Windows'
 * `RELEASES` with its full and delta packages, and Squirrel.Mac's update JSON. Gated, staged and
 * mirrored like the other feeds (feeds.ts), from the same index, controls and rollouts; and the
 * Sparkle deltas the appcast names.
 */
export function squirrelFeedEndpoints(feeds: FeedService, publicLanes: PublicLanes, credentials: FeedCredentials): Endpoint[] {
  const v = feeds.variant;
  const { laneParams, lanePath, open, updateUrl } = feedLanes(feeds, publicLanes);
  /** A Squirrel lane's path names its platform: each platform's build reads its own feed. */
  const platformPath = (kind: string) => `${lanePath(kind)}/{platform}`;
  const platformParams = (description: string, values: readonly string[]): ParamDoc[] => [...laneParams, { name: "platform", description, values }];
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
    return `${credentialFeedsUrl(feeds.baseUrl, credential)}/squirrel-mac/${lane}/zip/${r.manifest.installer}`;
  };
  const winPlatforms = v.platforms.filter((p) => p.startsWith("win-"));
  const macPlatforms = v.platforms.filter((p) => p.startsWith("mac-"));

  const squirrelWindows = endpoint({
    method: "GET",
    path: `${platformPath("squirrel")}/{file}`,
    summary:
      "Squirrel.Windows (Electron's autoUpdater on Windows): RELEASES (SHA1 name size per line) of the packages this installation may install, and those -full.nupkg and -delta.nupkg files",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...platformParams("A Windows platform of the site", winPlatforms),
      { name: "file", description: "RELEASES (Squirrel adds ?id=&localVersion=&arch=), or a package RELEASES names" },
    ],
    answers: {
      "200": {
        description: "RELEASES (text), or a package",
        content: { "text/plain": { schema: { type: "string" } }, "application/octet-stream": { schema: { type: "string", format: "binary" } } },
        headers: DOCUMENT_HEADERS,
      },
      "206": { description: "A range of a full package", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
      "304": NOT_MODIFIED,
    },
    errors: [...SQUIRREL_ERRORS, "no_release", "unavailable", "range_not_satisfiable"],
    handler: async (call) => {
      const { request, query, sightedOn } = call;
      const { product, channel, platform, caller, index } = await open(call);
      const file = call.params.file ?? "";
      if (file === "RELEASES") {
        const listed = await feeds.listed(index, caller, product, channel, [platform], (r) => r.manifest.feeds?.squirrel !== undefined);
        if (listed.length === 0) throw new KeyturnError("no_release", `Nothing has been released for Squirrel on ${laneName(product, channel, platform)}.`);
        sightedOn(laneName(product, channel, platform));
        const local = VERSION.exec(new URLSearchParams(query).get("localVersion") ?? "")?.[1] ?? null;
        const laneOf = (r: Release) => index.releasesOf(r.manifest.product, r.manifest.channel, r.manifest.platform);
        return feedDocument(request, squirrelReleasesFile(squirrelEntries(listed, local, laneOf)), "text/plain;charset=utf-8");
      }
      if (file.toLowerCase().endsWith("-delta.nupkg")) {
        const found = await feeds.deltaOf(index, caller, product, channel, [platform], "squirrel", file);
        if (!found) throw nothingHere();
        return serveFeedFile(request, feeds, found.release, found.delta);
      }
      const release = await feeds.fileOf(index, caller, product, channel, [platform], file);
      if (!release?.manifest.feeds?.squirrel) throw nothingHere();
      return serveInstaller(request, feeds, release);
    },
  });

  const squirrelMac = endpoint({
    method: "GET",
    path: `${platformPath("squirrel-mac")}/{current_version}`,
    summary:
      "Squirrel.Mac (Electron's autoUpdater on macOS): the zip of the release this installation is served when newer than current_version ({ url, name, notes, pub_date }), else 204",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...platformParams("A macOS platform of the site", macPlatforms),
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
    errors: [...SQUIRREL_ERRORS],
    handler: async (call) => {
      const { request, params: p, principal, visitor, sightedOn } = call;
      const { product, channel, platform, caller, index } = await open(call);
      if (!isLane(v, product, channel, platform)) throw nothingHere();
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
    path: `${platformPath("squirrel-mac")}/zip/{file}`,
    summary:
      "The zip a Squirrel.Mac answer names, of a release this installation may install (with a feed credential in the path: Squirrel.Mac sends no header here)",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [...platformParams("A macOS platform of the site", macPlatforms), { name: "file", description: "The release's zip" }],
    answers: {
      "200": { description: "The zip", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } }, headers: ["ETag"] },
      "206": { description: "A range of the zip", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
      "304": NOT_MODIFIED,
    },
    errors: [...SQUIRREL_ERRORS, "unavailable", "range_not_satisfiable"],
    handler: async (call) => {
      const { request, params: p } = call;
      const { product, channel, platform, caller, index } = await open(call);
      const release = await feeds.fileOf(index, caller, product, channel, [platform], p.file ?? "");
      if (!release || !isSquirrelMacRelease(release.manifest)) throw nothingHere();
      return serveInstaller(request, feeds, release);
    },
  });

  const sparkleDelta = endpoint({
    method: "GET",
    // `deltas/` keeps it apart from the appcast's `{file}` at the same depth (one parameter name per position).
    path: `${lanePath("sparkle")}/deltas/{platform}/{file}`,
    summary: "A Sparkle delta the appcast names (<sparkle:deltas>), of a release this installation may install",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [...platformParams("A macOS platform of the site", macPlatforms), { name: "file", description: "The delta's file name" }],
    answers: {
      "200": { description: "The delta archive", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } }, headers: ["ETag"] },
      "304": NOT_MODIFIED,
    },
    errors: [...SQUIRREL_ERRORS, "unavailable"],
    handler: async (call) => {
      const { request, params: p } = call;
      const { product, channel, platform, caller, index } = await open(call);
      const found = await feeds.deltaOf(index, caller, product, channel, [platform], "sparkle", p.file ?? "");
      if (!found) throw nothingHere();
      return serveFeedFile(request, feeds, found.release, found.delta);
    },
  });

  return [...(winPlatforms.length > 0 ? [squirrelWindows] : []), ...(macPlatforms.length > 0 ? [squirrelMac, squirrelMacZip, sparkleDelta] : [])];
}
