import { isLane } from "../../config/variants";
import { installationOf } from "../../domain/releases/release-rules";
import { KeyturnError } from "../../domain/errors";
import { isoTime } from "../../domain/clock";
import {
  electronChannelFile,
  electronSuffix,
  electronYaml,
  macPlatforms,
  sparkleAppcast,
  tauriJson,
  tauriPlatform,
  velopackJson,
  velopackPlatforms,
} from "../../domain/releases/feed-formats";
import { notesOf, type FeedCaller, type FeedService } from "../../domain/releases/feeds";
import { isInstallerName } from "../../domain/releases/manifest";
import { laneName } from "../../domain/releases/release-controls";
import { etagOf, installerEtag, type Release } from "../../domain/releases/release-index";
import { compareVersions } from "../../domain/releases/version-order";
import type { Principal } from "../../domain/licensing";
import { API_PREFIX, endpoint, type Endpoint, type ExtraAnswer, type ParamDoc } from "../endpoint";
import { serveBytes, serveFileRanges } from "../file-serving";
import { BEARER_ERRORS } from "./shared";

const VERSION = /^v?([0-9A-Za-z][0-9A-Za-z.+-]{0,63})$/;
const VELOPACK_FILE = /^releases\.(win|osx|linux)\.json$/;

const sha256Hex = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
const callerOf = (p: Principal): FeedCaller => ({ who: installationOf(p.claims), channels: p.claims.chn });
/** A feed's document: generated per installation, so private and revalidated; its ETag is its bytes' SHA-256. */
const feedDocument = (request: Request, text: string, contentType: string) => {
  const bytes = new TextEncoder().encode(text);
  return serveBytes(request, bytes, etagOf(sha256Hex(bytes)), contentType);
};

const DOCUMENT_HEADERS = ["ETag", "Cache-Control"];
const NOT_MODIFIED: ExtraAnswer = { description: "If-None-Match matched the ETag", headers: ["ETag"] };
/** Every feed: the bearer check, the licence's channels, and an address that names nothing. */
const FEED_ERRORS = [...BEARER_ERRORS, "channel_not_allowed", "not_found"] as const;
/** Feeds that answer one release: none released yet, or it is being verified or replaced. */
const RELEASE_ERRORS = ["no_release", "unavailable"] as const;

/**
 * The feeds of the updaters vendors already use, under
 * /feeds: electron-updater's generic provider, Tauri v2, Sparkle and Velopack. Each needs the
 * entitlement token and answers from the same index, controls and rollouts as the update path.
 */
export function feedEndpoints(feeds: FeedService): Endpoint[] {
  const v = feeds.variant;
  const withProduct = v.products.length > 0;
  const productParam: ParamDoc[] = withProduct ? [{ name: "product", description: "A product of this variant", values: v.products }] : [];
  const channelParam: ParamDoc = { name: "channel", description: "Update channel", values: v.channels };
  const lanePath = (kind: string) => `/feeds/${kind}/${withProduct ? "{product}/" : ""}{channel}`;
  const laneOf = (p: Readonly<Record<string, string | null>>) => ({ product: withProduct ? (p.product ?? "") : null, channel: p.channel ?? "" });
  /** The installer on the update path (Tauri, Sparkle and Velopack download from there, on keyturn's own origin). */
  const updateUrl = (r: Release) =>
    `${feeds.baseUrl}${API_PREFIX}/updates/${[r.manifest.product, r.manifest.channel, r.manifest.platform, r.manifest.installer].filter((x) => x !== null).join("/")}`;
  const electronPlatforms = v.platforms.filter((p) => electronSuffix(p) !== null);

  const electron = endpoint({
    method: "GET",
    path: `${lanePath("electron")}/{file}`,
    summary:
      "electron-updater's generic provider: the channel file (latest.yml, latest-mac.yml, latest-linux.yml …) of the release this installation is served, its installer (multi-range requests answered multipart/byteranges) and the .blockmap files of it and older releases",
    auth: "entitlement",
    budget: "api",
    audit: "update",
    params: [
      ...productParam,
      channelParam,
      {
        name: "file",
        description:
          "latest.yml or <channel>.yml with -mac, -linux, -linux-<arch> for those platforms; an installer a channel file names; <installer>.blockmap",
      },
    ],
    answers: {
      "200": {
        description: "The channel file (YAML: version, files[url, sha512, size], path, sha512, releaseDate), a blockmap, or the whole installer",
        content: {
          "application/yaml": { schema: { type: "string" } },
          "application/octet-stream": { schema: { type: "string", format: "binary" } },
        },
        headers: DOCUMENT_HEADERS,
      },
      "206": {
        description: "One range of the installer, or several as multipart/byteranges: one part per range in the order asked (at most 1000, none overlapping)",
        content: {
          "application/octet-stream": { schema: { type: "string", format: "binary" } },
          "multipart/byteranges": { schema: { type: "string", format: "binary" } },
        },
        headers: ["ETag", "Accept-Ranges"],
      },
      "304": NOT_MODIFIED,
    },
    errors: [...FEED_ERRORS, ...RELEASE_ERRORS, "range_not_satisfiable", "updates_window_ended"],
    handler: async ({ request, params: p, principal, sightedOn }) => {
      const { product, channel } = laneOf(p);
      const file = p.file ?? "";
      const caller = callerOf(principal);
      const index = await feeds.lane(caller, product, channel);
      const platforms = electronChannelFile(file, channel, electronPlatforms);
      if (platforms) {
        const served = await feeds.servedCascading(index, caller, product, channel, platforms);
        const newest = served[0]!;
        sightedOn(laneName(product, newest.manifest.channel, newest.manifest.platform));
        const yaml = electronYaml({
          version: newest.manifest.version,
          files: served.map((r) => ({ url: r.manifest.installer, sha512: feeds.sha512(r), size: r.manifest.size })),
          releaseDate: new Date(newest.manifest.released).toISOString(),
          notes: notesOf(newest),
        });
        return feedDocument(request, yaml, "application/yaml");
      }
      const blockmap = file.endsWith(".blockmap");
      const installer = blockmap ? file.slice(0, -".blockmap".length) : file;
      const release = isInstallerName(installer) ? await feeds.fileOf(index, caller, product, channel, electronPlatforms, installer) : null;
      if (!release) throw new KeyturnError("not_found", "There is nothing at this address.");
      if (!blockmap) return serveFileRanges(request, feeds.installerPath(release), release.manifest.size, installerEtag(release), release.manifest.installer);
      const map = release.manifest.feeds?.electron?.blockmap;
      if (!map) throw new KeyturnError("not_found", "There is nothing at this address.");
      return serveBytes(request, feeds.feedFile(release, map), etagOf(map.sha256), "application/octet-stream");
    },
  });

  const tauri = endpoint({
    method: "GET",
    path: `${lanePath("tauri")}/{target}/{arch}/{current_version}`,
    summary:
      "Tauri v2's updater: the release this installation is served when it is newer than current_version (its minisign .sig text as signature), else 204",
    auth: "entitlement",
    budget: "api",
    audit: "update",
    params: [
      ...productParam,
      channelParam,
      { name: "target", description: "Tauri's {{target}}", values: ["windows", "darwin", "linux"] },
      { name: "arch", description: "Tauri's {{arch}}; with target, one of the site's platforms", values: ["x86_64", "aarch64", "i686", "armv7", "riscv64"] },
      { name: "current_version", description: "Tauri's {{current_version}}" },
    ],
    answers: {
      "200": {
        description: "{ version, url, signature, notes, pub_date }: url is the installer on the update path",
        content: { "application/json": { schema: { type: "object", required: ["version", "url", "signature", "notes", "pub_date"] } } },
        headers: DOCUMENT_HEADERS,
      },
      "204": { description: "Nothing newer than current_version (or the release is not offered to Tauri)" },
      "304": NOT_MODIFIED,
    },
    errors: [...FEED_ERRORS, ...RELEASE_ERRORS, "invalid_request"],
    handler: async ({ request, params: p, principal, sightedOn }) => {
      const { product, channel } = laneOf(p);
      const caller = callerOf(principal);
      const index = await feeds.lane(caller, product, channel);
      const platform = tauriPlatform(p.target ?? "", p.arch ?? "");
      if (platform === null || !isLane(v, product, channel, platform)) throw new KeyturnError("not_found", "There is nothing at this address.");
      const current = VERSION.exec(p.current_version ?? "");
      if (!current) throw new KeyturnError("invalid_request", "current_version must be a version like 1.4.2.");
      const served = await feeds.served(index, caller, product, channel, platform);
      sightedOn(laneName(product, channel, platform));
      const signature = served.manifest.feeds?.tauri?.signature;
      if (!signature || compareVersions(served.manifest.version, current[1]!) <= 0) return new Response(null, { status: 204 });
      const text = new TextDecoder().decode(feeds.feedFile(served, signature));
      const body = tauriJson({
        version: served.manifest.version,
        url: updateUrl(served),
        signature: text,
        notes: notesOf(served),
        pubDate: isoTime(served.manifest.released),
      });
      return feedDocument(request, body, "application/json");
    },
  });

  const sparkle = endpoint({
    method: "GET",
    path: `${lanePath("sparkle")}/appcast.xml`,
    summary:
      "Sparkle's appcast: the releases of the site's macOS platforms this installation may install, newest first, with the vendor's edSignature (only on a site with a mac-* platform)",
    auth: "entitlement",
    budget: "api",
    audit: "update",
    params: [...productParam, channelParam],
    answers: {
      "200": {
        description: "An RSS 2.0 appcast with Sparkle's namespace",
        content: { "application/rss+xml": { schema: { type: "string" } } },
        headers: DOCUMENT_HEADERS,
      },
      "304": NOT_MODIFIED,
    },
    errors: [...FEED_ERRORS],
    handler: async ({ request, params: p, principal, sightedOn }) => {
      const { product, channel } = laneOf(p);
      const caller = callerOf(principal);
      const platforms = macPlatforms(v.platforms);
      if (platforms.length === 0) throw new KeyturnError("not_found", "This site has no macOS platform (--platforms).");
      const index = await feeds.lane(caller, product, channel);
      const listed = await feeds.listed(index, caller, product, channel, platforms, (r) => r.manifest.feeds?.sparkle !== undefined);
      if (listed[0]) sightedOn(laneName(product, channel, listed[0].manifest.platform));
      const items = listed.map((r) => {
        const s = r.manifest.feeds!.sparkle!;
        return { release: r, url: updateUrl(r), edSignature: s.edSignature, bundleVersion: s.bundleVersion ?? r.manifest.version, notes: notesOf(r) };
      });
      return feedDocument(request, sparkleAppcast({ title: product ?? v.name, items }), "application/rss+xml");
    },
  });

  const velopack = endpoint({
    method: "GET",
    path: `${lanePath("velopack")}/{file}`,
    summary:
      "Velopack's releases.{os}.json: the full packages of the site's platforms of that system this installation may install, FileName on the update path",
    auth: "entitlement",
    budget: "api",
    audit: "update",
    params: [...productParam, channelParam, { name: "file", description: "releases.win.json, releases.osx.json or releases.linux.json" }],
    answers: {
      "200": {
        description: '{ "Assets": [{ PackageId, Version, Type, FileName, SHA1, SHA256, Size, NotesMarkdown }] }',
        content: { "application/json": { schema: { type: "object", required: ["Assets"] } } },
        headers: DOCUMENT_HEADERS,
      },
      "304": NOT_MODIFIED,
    },
    errors: [...FEED_ERRORS],
    handler: async ({ request, params: p, principal, sightedOn }) => {
      const { product, channel } = laneOf(p);
      const caller = callerOf(principal);
      const os = VELOPACK_FILE.exec(p.file ?? "");
      const platforms = os ? velopackPlatforms(os[1]!, v.platforms) : [];
      if (platforms.length === 0) throw new KeyturnError("not_found", "There is nothing at this address.");
      const index = await feeds.lane(caller, product, channel);
      const listed = await feeds.listed(index, caller, product, channel, platforms, (r) => r.manifest.feeds?.velopack !== undefined);
      if (listed[0]) sightedOn(laneName(product, channel, listed[0].manifest.platform));
      const assets = listed.map((r) => ({ ...r.manifest.feeds!.velopack!, release: r, url: updateUrl(r), notes: notesOf(r) }));
      return feedDocument(request, velopackJson(assets), "application/json");
    },
  });

  return [electron, tauri, sparkle, velopack];
}
