import { readdirSync } from "node:fs";
import { basename, resolve } from "node:path";
import { resolveSetting, type Environment } from "../config/settings";
import { parseLaneList } from "../config/config";
import { ConfigError } from "../config/parse";
import { VARIANT_NAMES, VARIANTS, withLanes, type Variant, type VariantName } from "../config/variants";
import { loadKeyRing } from "../domain/keys";
import { ReleaseProblem } from "../domain/releases/problem";
import { placeOfManifestPath, scanReleaseTree, treeLevels } from "../domain/releases/scan";
import { releaseKeysOf } from "../domain/releases/signature";
import { err, out, parseFlags, UsageError } from "./io";
import { releaseControlCommand } from "./release-controls";
import { releaseWhyCommand } from "./release-why";
import { makeCommand, USAGE as MAKE_USAGE } from "./release-make";
import { pushCommand, USAGE as PUSH_USAGE } from "./release-push";
import { loadReleaseKey, releaseKidOf, SigningKeyError, signManifestFile } from "./release-signing";

export const USAGE = [
  "keyturn release sign --key KID.pem [--channels C,...] [--platforms P,...] MANIFEST   (writes MANIFEST.sig)",
  "       keyturn release check [--releases DIR] [--keys DIR] [--variant V] [--channels C,...] [--platforms P,...]",
  "       keyturn release halt|resume|withdraw|restore --lane L --version V [--json]",
  "       keyturn release why ACTIVATION | --device HASH --license LICENSE [--json]   (the release each lane gives it, and the rules that decided)",
  MAKE_USAGE,
  PUSH_USAGE,
].join("\n");

function parse(args: string[], options: Record<string, { type: "string" }>) {
  return parseFlags(USAGE, { args, options, allowPositionals: true, strict: true });
}

/** `keyturn release sign|check|halt|resume|withdraw|restore`. */
export async function releaseCommand(args: string[], env: Environment): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "sign") return sign(rest, env);
  if (sub === "check") return check(rest, env);
  if (sub === "make") return makeCommand(rest, env);
  if (sub === "push") return pushCommand(rest, env);
  if (sub === "halt" || sub === "resume" || sub === "withdraw" || sub === "restore") return releaseControlCommand(sub, rest, env);
  if (sub === "why") return releaseWhyCommand(rest, env);
  throw new UsageError(USAGE, sub ? `unknown release command "${sub}"` : "missing release command");
}

/**
 * Signs a manifest on the vendor's build machine, after checking it the way keyturn will: fields,
 * agreement with its folder, and its installer's size and SHA-256 (hashed here).
 */
function sign(args: string[], env: Environment): number {
  const { values, positionals } = parse(args, { key: { type: "string" }, ...LANE_FLAGS });
  if (!values.key) throw new UsageError(USAGE, "release sign needs --key FILE (a <variant>-release-YYYY-MM.pem private key)");
  if (positionals.length !== 1) throw new UsageError(USAGE, "release sign needs one MANIFEST");
  const named = releaseKidOf(values.key);
  if (!named) throw new UsageError(USAGE, `--key must be a release private key named <variant>-release-YYYY-MM.pem (got "${basename(values.key)}")`);
  const variant = siteVariant(VARIANTS[named.variant as VariantName], values, env);
  let key;
  try {
    key = loadReleaseKey(values.key);
  } catch (e) {
    if (!(e instanceof SigningKeyError)) throw e;
    err(`keyturn: ${e.message}`);
    return 1;
  }
  const manifestPath = resolve(positionals[0]!);
  try {
    signManifestFile(manifestPath, placeOfManifestPath(manifestPath, variant), key, variant);
  } catch (e) {
    if (!(e instanceof ReleaseProblem)) throw e;
    err(`keyturn: not signed: ${positionals[0]}: ${e.message}`);
    return 1;
  }
  out(`signed ${positionals[0]} with ${key.kid}: wrote ${positionals[0]}.sig`);
  return 0;
}

/**
 * Walks a tree as the server does, and also hashes every installer: prints each release folder as
 * live or with the reason it is not. Exit code 1 when anything is wrong, or when --keys holds no
 * release key of the variant (public or private) to check the signatures with.
 */
async function check(args: string[], env: Environment): Promise<number> {
  const { values, positionals } = parse(args, { releases: { type: "string" }, keys: { type: "string" }, variant: { type: "string" }, ...LANE_FLAGS });
  if (positionals.length > 0) throw new UsageError(USAGE, `unexpected argument "${positionals[0]}"`);
  const root = resolveSetting("releases", { given: values.releases, env })!;
  const keysDir = resolveSetting("keys", { given: values.keys, env })!;
  const variant = siteVariant(chooseVariant(resolveSetting("variant", { given: values.variant, env }), root), values, env);

  const ring = await loadKeyRing(keysDir, variant);
  const releaseKeys = releaseKeysOf(ring);
  const result = await scanReleaseTree(root, { variant, releaseKeys, hashInstallers: true });
  // Without a release key every signature would go unchecked: a check that checks nothing must not pass.
  if (releaseKeys.size === 0) {
    err(
      `keyturn: no ${variant.name}-release-* key (.pub.pem or .pem) in ${keysDir}: signatures cannot be checked; give --keys the directory of the release keys`,
    );
    return 1;
  }
  const lines = [
    ...result.index.all.map((r) => ({ folder: r.folder, text: `live     ${r.folder}  (${r.manifest.version})` })),
    ...result.problems.map((p) => ({ folder: p.folder, text: `PROBLEM  ${p.folder}: ${p.reason}` })),
  ].sort((a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0));
  for (const line of lines) out(line.text);
  out(`${variant.name} tree ${root}: ${result.index.size} live, ${result.problems.length} with problems`);
  return result.problems.length > 0 ? 1 : 0;
}

const LANE_FLAGS = { channels: { type: "string" }, platforms: { type: "string" } } as const;

/** The variant with the site's channels and platforms (--channels, --platforms, as `serve` reads them). */
export function siteVariant(v: Variant, given: { channels?: string; platforms?: string }, env: Environment): Variant {
  try {
    return withLanes(v, {
      channels: parseLaneList("channels", resolveSetting("channels", { given: given.channels, env })!),
      platforms: parseLaneList("platforms", resolveSetting("platforms", { given: given.platforms, env })!),
    });
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(USAGE, `--${e.setting}: ${e.message}`);
    throw e;
  }
}

/** The variant named, or the one whose top level (products, or channels for gamma) the tree has. */
function chooseVariant(name: string | undefined, root: string): Variant {
  if (name !== undefined) {
    if (!Object.hasOwn(VARIANTS, name)) throw new UsageError(USAGE, "--variant must be alpha, beta or gamma");
    return VARIANTS[name as VariantName];
  }
  let top: string[] = [];
  try {
    top = readdirSync(root);
  } catch {
    // Reported below as a tree that needs --variant; the scan then reports it unreadable.
  }
  const matches = VARIANT_NAMES.map((n) => VARIANTS[n]).filter((v) => top.some((entry) => treeLevels(v)[0]!.values.includes(entry)));
  if (matches.length !== 1) throw new UsageError(USAGE, `cannot tell the variant of ${root}; give --variant`);
  return matches[0]!;
}
