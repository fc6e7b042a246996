import { readdirSync } from "node:fs";
import { mirrorConfig, parseLaneList, readSettings } from "../config/config";
import { settingDefault } from "../config/settings";
import { ConfigError } from "../config/parse";
import { VARIANTS, withLanes, type Variant, type VariantName } from "../config/variants";
import { loadKeyRing, parseKid, privateKeyFiles } from "../domain/keys";
import { FeedProblem } from "../domain/mirror/feed-answer";
import { fetchFeedPage } from "../domain/mirror/feed-client";
import { escapeControl } from "../config/text";
import { ReleaseTreeUnreadable, scanReleaseTree } from "../domain/releases/scan";
import { releaseKeysOf } from "../domain/releases/signature";
import { out, UsageError } from "./io";

export const USAGE = "keyturn mirror check --variant V --mirror-of URL --mirror-token kta_... (or KEYTURN_MIRROR_TOKEN) --keys DIR --releases DIR";
const TIMEOUT_MS = 10_000;

/** `keyturn mirror check`. */
export async function mirrorCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "check") return check(rest, env);
  throw new UsageError(USAGE, sub ? `unknown mirror command "${sub}"` : "missing mirror command");
}

type Verdict = "ok" | "note" | "PROBLEM";

/**
 * Tells a mirror's operator in one run whether the mirror is set up right: the keys (license public
 * keys of the variant, the vendor's own, no private key), the copied tree (checked as `keyturn
 * release check` does, signatures with the release public keys) and the vendor's feed (reachable,
 * token accepted, answer well-formed). Exit code 1 on any problem.
 */
async function check(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const { settings, positionals } = readSettings(args, env);
  if (positionals.length > 0) throw new UsageError(USAGE, `unexpected argument "${positionals[0]}"`);
  const get = (flag: string) => settings[flag]?.trim() || undefined;
  const variantName = get("variant");
  if (!variantName || !Object.hasOwn(VARIANTS, variantName)) throw new ConfigError("variant", "required: alpha, beta or gamma");
  // The vendor's channels and platforms (--channels, --platforms): the copy is checked as the mirror will serve it.
  const variant = withLanes(VARIANTS[variantName as VariantName], {
    channels: parseLaneList("channels", get("channels") ?? settingDefault("channels")),
    platforms: parseLaneList("platforms", get("platforms") ?? settingDefault("platforms")),
  });
  const mirror = mirrorConfig(get, false);
  if (!mirror) throw new ConfigError("mirror-of", "required: the vendor site this mirror copies");
  const keysDir = get("keys") ?? "./keys";
  const root = get("releases") ?? "./releases";

  let problems = 0;
  const say = (verdict: Verdict, what: string, text: string) => {
    if (verdict === "PROBLEM") problems++;
    out(`${verdict.padEnd(7)}  ${what}: ${escapeControl(text, 2000)}`);
  };

  const releaseKeys = await checkKeys(variant, keysDir, mirror.of, say);
  await checkTree(variant, root, releaseKeys, say);
  try {
    const page = await fetchFeedPage({ of: mirror.of, token: mirror.token, after: null, limit: 1, timeoutMs: TIMEOUT_MS, now: Date.now() });
    say(
      "ok",
      "feed",
      `${mirror.of} answers, accepts the token, and its answer is well-formed (records ${page.epoch}, ${page.received} item${page.received === 1 ? "" : "s"} on a first page of 1)`,
    );
  } catch (e) {
    if (!(e instanceof FeedProblem)) throw e;
    say("PROBLEM", "feed", e.message);
  }
  out(problems === 0 ? "the mirror is set up right" : `${problems} problem${problems === 1 ? "" : "s"}`);
  return problems === 0 ? 0 : 1;
}

async function checkKeys(variant: Variant, dir: string, of: string, say: (v: Verdict, what: string, text: string) => void) {
  for (const name of privateKeyFiles(dir)) say("PROBLEM", "keys", `${name} in ${dir} is a private key: a mirror holds none (remove it, keep its .pub.pem)`);
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    say("PROBLEM", "keys", `${dir} cannot be read`);
  }
  for (const name of names.filter((n) => n.endsWith(".pub.pem"))) {
    const kid = name.slice(0, -".pub.pem".length);
    const parsed = parseKid(kid);
    if (!parsed) say("note", "keys", `${name} is not named <variant>-<license|release>-YYYY-MM.pub.pem: ignored`);
    else if (parsed.variant !== variant.name) say("note", "keys", `${name} is of ${parsed.variant}, not ${variant.name}: ignored`);
  }
  const ring = await loadKeyRing(dir, variant);
  for (const w of ring.warnings) say("PROBLEM", "keys", w);
  const licenseKids = [...ring.verify.values()].filter((k) => k.purpose === "license").map((k) => k.kid);
  const releaseKeys = releaseKeysOf(ring);
  if (licenseKids.length === 0) say("PROBLEM", "keys", `no ${variant.name}-license-*.pub.pem in ${dir}: no token of the vendor can be verified`);
  else say("ok", "keys", `license public keys ${licenseKids.join(", ")}`);
  if (releaseKeys.size === 0) say("PROBLEM", "keys", `no ${variant.name}-release-*.pub.pem in ${dir}: the copy's signatures cannot be checked`);
  else say("ok", "keys", `release public keys ${[...releaseKeys.keys()].join(", ")}`);

  // The vendor publishes its public keys at /meta: the mirror must hold each of them, the same.
  try {
    const res = await fetch(`${of}/api/v1/meta`, { redirect: "manual", signal: AbortSignal.timeout(TIMEOUT_MS) });
    const meta = (await res.json()) as { variant?: unknown; keys?: { kid?: unknown; spki?: unknown }[] };
    if (res.status !== 200 || !Array.isArray(meta.keys)) throw new Error(`HTTP ${res.status}`);
    if (meta.variant !== variant.name) say("PROBLEM", "keys", `the vendor's site is ${String(meta.variant)}, not ${variant.name}`);
    for (const k of meta.keys.slice(0, 100)) {
      const kid = String(k.kid);
      const mine = ring.verify.get(kid);
      // A license key is learnt from the feed (the next key of a rotation among them); a release key is not.
      if (!mine && parseKid(kid)?.purpose === "license")
        say("note", "keys", `the vendor publishes ${kid}, not in ${dir}: the mirror learns it from the vendor's feed`);
      else if (!mine) say("PROBLEM", "keys", `the vendor publishes ${kid}, but ${dir} has no ${kid}.pub.pem`);
      else if (mine.spki !== k.spki) say("PROBLEM", "keys", `${kid}.pub.pem is not the key the vendor publishes under that kid`);
    }
  } catch (e) {
    say("note", "keys", `the vendor's /meta cannot be read (${(e as Error).message}): its published keys were not compared`);
  }
  return releaseKeys;
}

async function checkTree(variant: Variant, root: string, releaseKeys: ReturnType<typeof releaseKeysOf>, say: (v: Verdict, what: string, text: string) => void) {
  try {
    const result = await scanReleaseTree(root, { variant, releaseKeys, hashInstallers: true });
    for (const p of result.problems) say("PROBLEM", "copy", `${p.folder}: ${p.reason}`);
    say(
      result.index.size > 0 ? "ok" : "PROBLEM",
      "copy",
      `${root}: ${result.index.size} live release${result.index.size === 1 ? "" : "s"}, ${result.problems.length} with problems`,
    );
  } catch (e) {
    if (!(e instanceof ReleaseTreeUnreadable)) throw e;
    say("PROBLEM", "copy", e.message);
  }
}
