import { isLane } from "../../config/variants";
import { KeyturnError } from "../../domain/errors";
import { isoTime } from "../../domain/clock";
import {
  ELECTRON,
  electronArchIs,
  electronChannelFile,
  electronSuffix,
  electronYaml,
  macPlatforms,
  sparkleAppcast,
  tauriJson,
  tauriPlatform,
  refuseMixedVelopack,
  velopackFeedPlatforms,
  velopackJson,
} from "../../domain/releases/feed-formats";
import { criticalOf, notesOf, type FeedService } from "../../domain/releases/feeds";
import { isInstallerName } from "../../domain/releases/manifest";
import { laneName } from "../../domain/releases/release-controls";
import type { Release } from "../../domain/releases/release-index";
import { compareVersions } from "../../domain/releases/version-order";
import type { PublicLanes } from "../../domain/releases/public-lanes";
import { API_PREFIX, endpoint, type Endpoint } from "../endpoint";
import { DOCUMENT_HEADERS, FEED_ERRORS, NOT_MODIFIED, VERSION, feedDocument, feedLanes, nothingHere, serveFeedFile, serveInstaller } from "./feed-lane";

const VELOPACK_FILE = /^releases\.((?:win|osx|linux)(?:-[a-z0-9]{1,16})?)\.json$/;
/** `appcast.xml`, or `appcast-<arch>.xml` for the platform `mac-<arch>`. */
const APPCAST = /^appcast(?:-([a-z0-9]{1,16}))?\.xml$/;
/** electron-updater keeps a feed URL's query on every URL it derives from it (peers.md 1.3): `?arch=` names the architecture. */
const ARCH = /^[a-z0-9]{1,16}$/;

/** Feeds that answer one release: none released yet, or it is being verified or replaced. */
const RELEASE_ERRORS = ["no_release", "unavailable"] as const;

/**
 * The feeds of the updaters vendors already use, under
 * /feeds: electron-updater's generic provider, Tauri v2, Sparkle and Velopack. Each needs the
 * entitlement token and answers from the same index, controls and rollouts as the update path.
 */
export function feedEndpoints(feeds: FeedService, publicLanes: PublicLanes): Endpoint[] {
  const v = feeds.variant;
  const { laneParams, lanePath, open, updateUrl } = feedLanes(feeds, publicLanes);
  const electronPlatforms = v.platforms.filter((p) => electronSuffix(p) !== null);
  /** A Sparkle delta, on keyturn's origin (feeds-squirrel.ts serves it). */
  const sparkleDeltaUrl = (r: Release, file: string) =>
    `${feeds.baseUrl}${API_PREFIX}/feeds/sparkle/${[r.manifest.product, r.manifest.channel, "deltas", r.manifest.platform, file].filter((x) => x !== null).join("/")}`;

  const electron = endpoint({
    method: "GET",
    path: `${lanePath("electron")}/{file}`,
    summary:
      "electron-updater's generic provider: the channel file (latest.yml, latest-mac.yml, latest-linux.yml …) of the release this installation is served, its installer (multi-range requests answered multipart/byteranges) and the .blockmap files of it and older releases",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...laneParams,
      {
        name: "file",
        description:
          "latest.yml or <channel>.yml with -mac, -linux, -linux-<arch> for those platforms; an installer a channel file names; <installer>.blockmap",
      },
    ],
    query: [
      {
        name: "arch",
        description:
          "The architecture of the asking build (x64, arm64 …): the channel file of that platform alone, so each architecture gets its own newest release. Put it in the feed URL; electron-updater repeats it on every request",
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
    handler: async (call) => {
      const { request, query, sightedOn } = call;
      const { product, channel, caller, index } = await open(call);
      const file = call.params.file ?? "";
      const arch = new URLSearchParams(query).get("arch");
      // With ?arch= (the feed URL's query, which electron-updater repeats on every request), the
      // channel file is of that architecture alone, so each gets its own newest release.
      const covered = electronChannelFile(file, channel, electronPlatforms);
      const platforms = covered && arch !== null ? covered.filter((p) => ARCH.test(arch) && electronArchIs(p, arch)) : covered;
      if (platforms?.length === 0) throw nothingHere();
      if (platforms) {
        const served = await feeds.servedCascading(index, caller, product, channel, platforms, ELECTRON);
        const newest = served[0]!;
        sightedOn(laneName(product, newest.manifest.channel, newest.manifest.platform));
        const yaml = electronYaml({
          version: newest.manifest.version,
          files: served.map((r) => ({
            url: r.manifest.installer,
            sha512: feeds.sha512(r),
            size: r.manifest.size,
            blockMapSize: r.manifest.feeds?.electron?.blockMapSize ?? null,
          })),
          releaseDate: new Date(newest.manifest.released).toISOString(),
          notes: notesOf(newest),
        });
        return feedDocument(request, yaml, "application/yaml");
      }
      const blockmap = file.endsWith(".blockmap");
      const installer = blockmap ? file.slice(0, -".blockmap".length) : file;
      const release = isInstallerName(installer) ? await feeds.fileOf(index, caller, product, channel, electronPlatforms, installer) : null;
      if (!release) throw nothingHere();
      if (!blockmap) return serveInstaller(request, feeds, release);
      const map = release.manifest.feeds?.electron?.blockmap;
      if (!map) throw nothingHere();
      return serveFeedFile(request, feeds, release, map);
    },
  });

  const tauri = endpoint({
    method: "GET",
    path: `${lanePath("tauri")}/{target}/{arch}/{current_version}`,
    summary:
      "Tauri v2's updater: the release this installation is served when it is newer than current_version (its minisign .sig text as signature), else 204",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...laneParams,
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
      "204": { description: "Nothing newer than current_version, nothing released for this platform, or the release is not offered to Tauri" },
      "304": NOT_MODIFIED,
    },
    errors: [...FEED_ERRORS, "unavailable", "invalid_request"],
    handler: async (call) => {
      const { request, params: p, sightedOn } = call;
      const { product, channel, caller, index } = await open(call);
      const platform = tauriPlatform(p.target ?? "", p.arch ?? "");
      if (platform === null || !isLane(v, product, channel, platform)) throw nothingHere();
      const current = VERSION.exec(p.current_version ?? "");
      if (!current) throw new KeyturnError("invalid_request", "current_version must be a version like 1.4.2.");
      // Nothing for this installation is "no update" (204), never an error the plugin would report.
      const served = await feeds.servedOrNone(index, caller, product, channel, platform);
      sightedOn(laneName(product, channel, platform));
      const signature = served?.manifest.feeds?.tauri?.signature;
      if (!served || !signature || compareVersions(served.manifest.version, current[1]!) <= 0) return new Response(null, { status: 204 });
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
    path: `${lanePath("sparkle")}/{file}`,
    summary:
      "Sparkle's appcast: the releases of the site's macOS platforms (appcast.xml) or of one architecture (appcast-arm64.xml, appcast-x64.xml …) this installation may install, newest first, with the vendor's edSignature (only on a site with a mac-* platform)",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [...laneParams, { name: "file", description: "appcast.xml (every macOS platform), or appcast-<arch>.xml for the platform mac-<arch> alone" }],
    answers: {
      "200": {
        description: "An RSS 2.0 appcast with Sparkle's namespace",
        content: { "application/rss+xml": { schema: { type: "string" } } },
        headers: DOCUMENT_HEADERS,
      },
      "304": NOT_MODIFIED,
    },
    errors: [...FEED_ERRORS],
    handler: async (call) => {
      const { request, params: p, sightedOn } = call;
      const mac = macPlatforms(v.platforms);
      if (mac.length === 0) throw new KeyturnError("not_found", "This site has no macOS platform (--platforms).");
      // Two items of one version cannot be told apart by Sparkle: each architecture's build reads its own appcast.
      const arch = APPCAST.exec(p.file ?? "");
      const platforms = arch ? mac.filter((m) => arch[1] === undefined || m === `mac-${arch[1]}`) : [];
      if (platforms.length === 0) throw nothingHere();
      const { product, channel, caller, index } = await open(call);
      const listed = await feeds.listed(index, caller, product, channel, platforms, (r) => r.manifest.feeds?.sparkle !== undefined);
      if (listed[0]) sightedOn(laneName(product, channel, listed[0].manifest.platform));
      const items = listed.map((r) => {
        const s = r.manifest.feeds!.sparkle!;
        return {
          release: r,
          url: updateUrl(r),
          edSignature: s.edSignature,
          bundleVersion: s.bundleVersion ?? r.manifest.version,
          notes: notesOf(r),
          critical: criticalOf(r),
          deltas: (s.deltas ?? []).map((delta) => ({ url: sparkleDeltaUrl(r, delta.file), delta })),
        };
      });
      return feedDocument(request, sparkleAppcast({ title: product ?? v.name, items }), "application/rss+xml");
    },
  });

  const velopack = endpoint({
    method: "GET",
    path: `${lanePath("velopack")}/{file}`,
    summary:
      "Velopack's releases.{os}.json and releases.{os}-{arch}.json: the full packages this installation may install of one platform of that system, FileName relative to the feed (the client saves the package under that name), and those packages",
    auth: "entitlement",
    publicLanes: true,
    budget: "api",
    audit: "update",
    params: [
      ...laneParams,
      {
        name: "file",
        description:
          "releases.<os>.json (os: win, osx, linux) or releases.<os>-<arch>.json (one platform, such as releases.osx-arm64.json); or a package (-full.nupkg, -delta.nupkg) a feed names",
      },
    ],
    query: [
      { name: "rid", description: "Velopack's C# client: the machine's runtime id, which picks a platform when releases.<os>.json covers several" },
      { name: "arch", description: "Velopack's C# client: the machine's architecture, the same without rid" },
    ],
    answers: {
      "200": {
        description: '{ "Assets": [{ PackageId, Version, Type, FileName, SHA1, SHA256, Size, NotesMarkdown }] }, or the package',
        content: {
          "application/json": { schema: { type: "object", required: ["Assets"] } },
          "application/octet-stream": { schema: { type: "string", format: "binary" } },
        },
        headers: DOCUMENT_HEADERS,
      },
      "206": {
        description: "A range of the package",
        content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
        headers: ["ETag", "Accept-Ranges"],
      },
      "304": NOT_MODIFIED,
    },
    errors: [...FEED_ERRORS, "unavailable", "range_not_satisfiable"],
    handler: async (call) => {
      const { request, sightedOn } = call;
      const file = call.params.file ?? "";
      const os = VELOPACK_FILE.exec(file);
      const platforms = os ? velopackFeedPlatforms(os[1]!, v.platforms, new URLSearchParams(call.query)) : v.platforms;
      if (platforms === null) throw nothingHere();
      const { product, channel, caller, index } = await open(call);
      if (!os && file.toLowerCase().endsWith("-delta.nupkg")) {
        // A delta, named relatively as the full package is: a release's of any system this installation may install.
        const found = await feeds.deltaOf(index, caller, product, channel, v.platforms, "velopack", file);
        if (!found) throw nothingHere();
        return serveFeedFile(request, feeds, found.release, found.delta);
      }
      if (!os) {
        // A package the feed names: FileName is relative, because the client saves the package under it (velopack src/lib-rust/src/manager.rs).
        const release = isInstallerName(file) ? await feeds.fileOf(index, caller, product, channel, v.platforms, file) : null;
        if (!release?.manifest.feeds?.velopack) throw nothingHere();
        return serveInstaller(request, feeds, release);
      }
      const listed = await feeds.listed(index, caller, product, channel, platforms, (r) => r.manifest.feeds?.velopack !== undefined);
      refuseMixedVelopack(os[1]!, listed);
      if (listed[0]) sightedOn(laneName(product, channel, listed[0].manifest.platform));
      const assets = listed.flatMap((r) => {
        const full = { ...r.manifest.feeds!.velopack!, release: r, notes: notesOf(r) };
        return [full, ...(r.manifest.feeds!.velopack!.deltas ?? []).map((delta) => ({ ...full, delta }))];
      });
      return feedDocument(request, velopackJson(assets), "application/json");
    },
  });

  return [electron, tauri, sparkle, velopack];
}
