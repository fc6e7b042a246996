/**
 * What the bench serves, generated afresh in a temp directory (never committed): keys made with
 * `keyturn keys generate`, a release tree of 10,000 release folders whose newest alpha/stable
 * release carries a 256 MiB installer (signed with `keyturn release sign`; the 10,000 small ones
 * are signed in-process, 10,000 processes would take minutes), and licenses made with
 * `keyturn license create`.
 */
import { copyFileSync, createWriteStream, linkSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createHash, createPrivateKey, randomBytes, type KeyObject } from "node:crypto";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { signManifest } from "../../src/domain/releases/signature";

const variant = VARIANTS.alpha;
export const RELEASE_KID = "alpha-release-2026-11";
export const LICENSE_KID = "alpha-license-2026-10";
export const BIG = { product: "alpha", channel: "stable", platform: "win-x64", version: "9.0.0", installer: "alpha-9.0.0-win-x64.exe" };
export const MANIFEST_PATH = `/api/v1/updates/${BIG.product}/${BIG.channel}/${BIG.platform}/${variant.manifestFile}`;
export const INSTALLER_PATH = `/api/v1/updates/${BIG.product}/${BIG.channel}/${BIG.platform}/${BIG.installer}`;
/** The same files under nginx's root (the release tree itself). */
export const NGINX_MANIFEST = `/${BIG.product}/${BIG.channel}/${BIG.platform}/${BIG.version}/${variant.manifestFile}`;
export const NGINX_INSTALLER = `/${BIG.product}/${BIG.channel}/${BIG.platform}/${BIG.version}/${BIG.installer}`;

export function keyturn(exe: string, args: string[]): string {
  const r = Bun.spawnSync([exe, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`keyturn ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

export function makeKeys(exe: string, dir: string) {
  const keys = join(dir, "keys");
  const signing = join(dir, "release-signing");
  keyturn(exe, ["keys", "generate", "--variant", "alpha", "--kid", LICENSE_KID, "--keys", keys]);
  keyturn(exe, ["keys", "generate", "--variant", "alpha", "--purpose", "release", "--kid", RELEASE_KID, "--keys", signing]);
  copyFileSync(join(signing, `${RELEASE_KID}.pub.pem`), join(keys, `${RELEASE_KID}.pub.pem`));
  return { keys, releaseKeyFile: join(signing, `${RELEASE_KID}.pem`), licenseKeyFile: join(keys, `${LICENSE_KID}.pem`) };
}

/**
 * `count` alpha release folders (both products, stable and preview, win-x64) with a tiny installer,
 * each manifest signed in-process with `key`; `released` a minute apart, so the newest is the last.
 */
export function writeSmallReleases(root: string, count: number, key: { kid: string; privateKey: KeyObject }): void {
  const installer = Buffer.from("small installer\n");
  const sha256 = createHash("sha256").update(installer).digest("hex");
  for (let i = 0; i < count; i++) {
    const product = variant.products[i % 2]!;
    const channel = i % 3 === 0 ? "preview" : "stable";
    const version = `1.${Math.floor(i / 100)}.${i % 100}`;
    const folder = join(root, product, channel, "win-x64", version);
    mkdirSync(folder, { recursive: true });
    const name = `${product}-${version}.exe`;
    writeFileSync(join(folder, name), installer);
    const released = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
    const manifest = Buffer.from(
      JSON.stringify({ product, channel, platform: "win-x64", version, released, installer: name, size: installer.length, sha256 }, null, 2),
    );
    writeFileSync(join(folder, variant.manifestFile), manifest);
    writeFileSync(join(folder, `${variant.manifestFile}.sig`), signManifest(manifest, key, variant));
  }
}

/** `rolloutPercent`: the big release carries `rollout: { percent }` (the update path then picks per installation). */
export async function makeReleaseTree(
  exe: string,
  root: string,
  releaseKeyFile: string,
  folders: number,
  bigBytes: number,
  rolloutPercent: number | null = null,
) {
  writeSmallReleases(root, folders - 1, { kid: RELEASE_KID, privateKey: createPrivateKey(readFileSync(releaseKeyFile, "utf8")) });

  const folder = join(root, BIG.product, BIG.channel, BIG.platform, BIG.version);
  mkdirSync(folder, { recursive: true });
  const hash = createHash("sha256");
  const out = createWriteStream(join(folder, BIG.installer));
  const chunk = 16 * 1024 * 1024;
  for (let written = 0; written < bigBytes; written += chunk) {
    const bytes = randomBytes(Math.min(chunk, bigBytes - written));
    hash.update(bytes);
    if (!out.write(bytes)) await new Promise((resolve) => out.once("drain", resolve));
  }
  await new Promise((resolve, reject) => out.end((e: unknown) => (e ? reject(e) : resolve(null))));
  const manifest = {
    product: BIG.product,
    channel: BIG.channel,
    platform: BIG.platform,
    version: BIG.version,
    released: "2026-11-20T10:00:00+00:00",
    installer: BIG.installer,
    size: bigBytes,
    sha256: hash.digest("hex"),
    notes: "The release the bench downloads.",
    ...(rolloutPercent !== null ? { rollout: { percent: rolloutPercent } } : {}),
  };
  const manifestFile = join(folder, variant.manifestFile);
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2) + "\n");
  keyturn(exe, ["release", "sign", "--key", releaseKeyFile, manifestFile]);
}

/** A license through the admin command; returns its key. */
export function createLicense(exe: string, data: string, keys: string, seats: number): string {
  const out = keyturn(exe, [
    "license",
    "create",
    "--variant",
    "alpha",
    "--data",
    data,
    "--keys",
    keys,
    "--licensee",
    "Bench Ltd",
    "--organization",
    "Bench Ltd",
    "--plan",
    "site",
    "--plan-title",
    "Site",
    "--seats",
    String(seats),
    "--channels",
    "stable,preview",
    "--json",
  ]);
  return JSON.parse(out).key;
}

/**
 * The tree at `root` cut to each lane's newest release (by `released`), hard-linked into `into`:
 * the same files (so the same verified installers and cached signatures), without the index of
 * every older release. Returns `into`.
 */
export function newestOfEachLane(root: string, into: string): string {
  const folders = (dir: string) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(dir, e.name));
  for (const product of folders(root))
    for (const channel of folders(product))
      for (const platform of folders(channel)) {
        // Each manifest read once: the lane's folders with their `released`, the latest kept.
        const released = folders(platform).map((folder) => ({
          folder,
          at: Date.parse(JSON.parse(readFileSync(join(folder, variant.manifestFile), "utf8")).released),
        }));
        const newest = released.reduce((a, b) => (b.at > a.at ? b : a)).folder;
        const copy = join(into, newest.slice(root.length));
        mkdirSync(copy, { recursive: true });
        for (const file of readdirSync(newest)) linkSync(join(newest, file), join(copy, file));
      }
  return into;
}

/** A device prefix unique to this run, so every activation of the bench is a new installation. */
export function devicePrefix(): string {
  return randomBytes(16).toString("base64url").slice(0, 22);
}
