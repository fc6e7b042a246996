import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { resolveSetting, type Environment } from "../config/settings";
import { VARIANTS, type Variant, type VariantName } from "../config/variants";
import { systemClock } from "../domain/clock";
import { isInstallerName } from "../domain/releases/manifest";
import { makeManifest, type ReleaseFacts } from "../domain/releases/manifest-make";
import { ReleaseProblem } from "../domain/releases/problem";
import { err, out, parseFlags, UsageError } from "./io";
import { siteVariant } from "./release";
import { loadReleaseKey, releaseKidOf, SigningKeyError, signManifestFile, type ReleaseSigningKey } from "./release-signing";

export const USAGE = [
  "       keyturn release make --installer FILE --version V [--variant V] [--product P] [--channel C] [--platform P]",
  "            [--released ISO] [--notes TEXT | --notes-file FILE] [--minimum-version V] [--critical] [--rollout 25%|7d]",
  "            [--blockmap FILE] [--tauri-signature FILE] [--sparkle-signature SIG [--sparkle-bundle-version V]]",
  "            [--velopack-package-id ID] [--folder NAME] [--releases DIR] [--key KID.pem] [--channels C,...] [--platforms P,...]",
  "            (writes <releases>/<lane>/<folder>/ with its manifest, and its .sig when given --key)",
].join("\n");

const OPTIONS = {
  installer: { type: "string" },
  version: { type: "string" },
  variant: { type: "string" },
  product: { type: "string" },
  channel: { type: "string" },
  platform: { type: "string" },
  released: { type: "string" },
  notes: { type: "string" },
  "notes-file": { type: "string" },
  "minimum-version": { type: "string" },
  critical: { type: "boolean" },
  rollout: { type: "string" },
  blockmap: { type: "string" },
  "tauri-signature": { type: "string" },
  "sparkle-signature": { type: "string" },
  "sparkle-bundle-version": { type: "string" },
  "velopack-package-id": { type: "string" },
  folder: { type: "string" },
  releases: { type: "string" },
  key: { type: "string" },
  channels: { type: "string" },
  platforms: { type: "string" },
} as const;

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * `keyturn release make`: the release folder a vendor's build would otherwise write by hand. The
 * folder is put together under a hidden name beside its final place (the scan ignores hidden
 * entries), signed there when given the key, and renamed into place whole.
 */
export async function makeCommand(args: string[], env: Environment): Promise<number> {
  const v = parseFlags(USAGE, { args, options: OPTIONS, allowPositionals: false, strict: true }).values;
  if (!v.installer) throw new UsageError(USAGE, "release make needs --installer FILE");
  if (!v.version) throw new UsageError(USAGE, "release make needs --version V");
  if (v.notes !== undefined && v["notes-file"] !== undefined) throw new UsageError(USAGE, "give --notes or --notes-file, not both");
  if (v["sparkle-bundle-version"] !== undefined && v["sparkle-signature"] === undefined)
    throw new UsageError(USAGE, "--sparkle-bundle-version goes with --sparkle-signature");

  const named = v.key ? releaseKidOf(v.key) : null;
  if (v.key && !named) throw new UsageError(USAGE, `--key must be a release private key named <variant>-release-YYYY-MM.pem (got "${basename(v.key)}")`);
  const variantName = resolveSetting("variant", { given: v.variant, env }) ?? named?.variant;
  if (variantName === undefined) throw new UsageError(USAGE, "release make needs --variant (or --key, whose name says it)");
  if (!Object.hasOwn(VARIANTS, variantName)) throw new UsageError(USAGE, "--variant must be alpha, beta or gamma");
  if (named && named.variant !== variantName) throw new UsageError(USAGE, `--key ${named.kid} is not a ${variantName} key`);
  const variant = siteVariant(VARIANTS[variantName as VariantName], v, env);

  let key: ReleaseSigningKey | null = null;
  if (v.key) {
    try {
      key = loadReleaseKey(v.key);
    } catch (e) {
      if (!(e instanceof SigningKeyError)) throw e;
      err(`keyturn: ${e.message}`);
      return 1;
    }
  }

  const root = resolve(resolveSetting("releases", { given: v.releases, env })!);
  const folder = v.folder ?? v.version;
  try {
    const facts = factsOf(v, variant);
    // Checked before any directory is made: a wrong lane leaves nothing behind, in the tree or outside it.
    const wrongLane = laneProblem(variant, facts);
    if (wrongLane !== null) throw new ReleaseProblem(wrongLane);
    if (!isInstallerName(folder))
      throw new ReleaseProblem(
        v.folder === undefined
          ? "manifest version must be a version like 1.4.2 or 2.0.0-beta.1 (it names the folder: give --folder for another name)"
          : "folder must be a plain name of letters, digits, . _ + - (no path, no ..)",
      );
    const laneDir = join(root, ...(facts.product !== null ? [facts.product] : []), facts.channel, facts.platform);
    const target = join(laneDir, folder);
    if (existsSync(target)) throw new ReleaseProblem(`${relative(process.cwd(), target) || target} exists already; a release folder is never rewritten`);
    mkdirSync(laneDir, { recursive: true });
    const work = join(laneDir, `.make-${folder}-${process.pid}`);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work);
    try {
      const copied = copyInto(work, facts);
      const { bytes } = makeManifest(copied, variant);
      const manifestPath = join(work, variant.manifestFile);
      writeFileSync(manifestPath, bytes, { mode: 0o644 });
      if (key) signManifestFile(manifestPath, facts, key, variant);
      renameSync(work, target);
    } catch (e) {
      rmSync(work, { recursive: true, force: true });
      throw e;
    }
    out(`made ${target}${key ? `, signed with ${key.kid}` : " (not signed: give --key, or run keyturn release sign)"}`);
    return 0;
  } catch (e) {
    if (!(e instanceof ReleaseProblem)) throw e;
    err(`keyturn: no release made: ${e.message}`);
    return 1;
  }
}

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

/** What is wrong with the lane the flags name for this site, or null. */
function laneProblem(variant: Variant, facts: Pick<ReleaseFacts, "product" | "channel" | "platform">): string | null {
  if (variant.products.length === 0 && facts.product !== null) return `${variant.name} has no products: give no --product`;
  if (variant.products.length > 0 && (facts.product === null || !variant.products.includes(facts.product)))
    return `--product must be one of ${variant.products.join(", ")}`;
  if (!variant.channels.includes(facts.channel)) return `--channel must be one of ${variant.channels.join(", ")}`;
  if (!variant.platforms.includes(facts.platform)) return `--platform must be one of ${variant.platforms.join(", ")}`;
  return null;
}

/** The release's facts from the flags (files still where the build left them). */
function factsOf(v: Values, variant: Variant): ReleaseFacts {
  const installerPath = resolve(v.installer!);
  const installerName = basename(installerPath);
  if (!isInstallerName(installerName)) throw new ReleaseProblem("manifest installer must be a bare file name of letters, digits, . _ + - (rename the file)");
  if (v.released !== undefined && !ISO_WITH_OFFSET.test(v.released))
    throw new ReleaseProblem("manifest released must be an ISO 8601 time with an offset, e.g. 2026-11-21T10:00:00+00:00");
  const file = (path: string | undefined, name?: string) => (path === undefined ? undefined : { name: name ?? basename(path), path: resolve(path) });
  let notes = v.notes;
  if (v["notes-file"] !== undefined) {
    try {
      notes = readFileSync(v["notes-file"], "utf8");
    } catch (e) {
      throw new ReleaseProblem(`--notes-file ${v["notes-file"]} cannot be read (${(e as NodeJS.ErrnoException).code ?? e})`);
    }
  }
  return {
    product: v.product ?? null,
    channel: v.channel ?? variant.channels[0]!,
    platform: v.platform ?? variant.platforms[0]!,
    version: v.version!,
    released: v.released !== undefined ? Date.parse(v.released) : systemClock(),
    installer: { name: installerName, path: installerPath },
    ...(notes !== undefined ? { notes } : {}),
    ...(v["minimum-version"] !== undefined ? { minimumVersion: v["minimum-version"] } : {}),
    ...(v.critical ? { critical: true } : {}),
    ...(v.rollout !== undefined ? { rollout: v.rollout } : {}),
    // electron-updater asks for `<installer>.blockmap`: the file takes that name in the folder.
    ...(v.blockmap !== undefined ? { blockmap: file(v.blockmap, `${installerName}.blockmap`)! } : {}),
    ...(v["tauri-signature"] !== undefined ? { tauriSignature: file(v["tauri-signature"])! } : {}),
    ...(v["sparkle-signature"] !== undefined
      ? {
          sparkle: {
            edSignature: v["sparkle-signature"],
            ...(v["sparkle-bundle-version"] !== undefined ? { bundleVersion: v["sparkle-bundle-version"] } : {}),
          },
        }
      : {}),
    ...(v["velopack-package-id"] !== undefined ? { velopackPackageId: v["velopack-package-id"] } : {}),
  };
}

/** Copies the installer and feed files into the folder; the facts then name the copies (what is hashed is what is served). */
function copyInto(dir: string, facts: ReleaseFacts): ReleaseFacts {
  const copy = (f: { name: string; path: string }) => {
    const to = join(dir, f.name);
    if (existsSync(to)) throw new ReleaseProblem(`two files of the release are named ${f.name}`);
    try {
      copyFileSync(f.path, to);
    } catch (e) {
      throw new ReleaseProblem(`${f.path} cannot be copied (${(e as NodeJS.ErrnoException).code ?? e})`);
    }
    return { name: f.name, path: to };
  };
  return {
    ...facts,
    installer: copy(facts.installer),
    ...(facts.blockmap ? { blockmap: copy(facts.blockmap) } : {}),
    ...(facts.tauriSignature ? { tauriSignature: copy(facts.tauriSignature) } : {}),
  };
}
