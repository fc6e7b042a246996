import { createPrivateKey, randomBytes, type KeyObject } from "node:crypto";
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS, type VariantName } from "../src/config/variants";
import { generateKeyFiles } from "../src/domain/keys";
import { signManifest } from "../src/domain/releases/signature";
import { createLicense, tempDir, testSite, device, type TestSite } from "./helpers";
import { readFileSync } from "node:fs";

export interface ReleaseSpec {
  product?: string | null;
  channel?: string;
  platform?: string;
  version: string;
  released?: string;
  folder?: string;
  installer?: string;
  installerBytes?: Uint8Array;
  /** Extra or replaced manifest fields. */
  fields?: Record<string, unknown>;
  sign?: boolean;
  /** Other files of the folder (feed files: a blockmap, a Tauri .sig), written before the manifest. */
  files?: Record<string, Uint8Array | string>;
}

/** A manifest's entry for a feed file (feeds.electron.blockmap, feeds.tauri.signature). */
export function feedFileEntry(file: string, bytes: Uint8Array | string) {
  const b = typeof bytes === "string" ? Buffer.from(bytes) : bytes;
  return { file, size: b.length, sha256: new Bun.CryptoHasher("sha256").update(b).digest("hex") };
}

export interface WrittenRelease {
  readonly dir: string;
  readonly manifestPath: string;
  readonly manifestBytes: Buffer;
  readonly installerPath: string;
  readonly installerBytes: Uint8Array;
  readonly installer: string;
  /** The update path below /api/v1 of this release's lane, without the file name. */
  readonly lane: string;
}

/**
 * A release tree in a temp dir, written the way a vendor's build would: manifest, installer and a
 * signature made with a release key whose public half (only) is in `keysDir`.
 */
export class ReleaseTree {
  readonly dir = tempDir("keyturn-tree-");
  readonly root = join(this.dir, "releases");
  readonly keysDir = join(this.dir, "keys");
  readonly kid: string;
  readonly privateKey: KeyObject;
  readonly privateKeyFile: string;

  constructor(readonly variant: VariantName) {
    mkdirSync(this.root, { recursive: true });
    this.kid = `${variant}-release-2026-11`;
    const signing = join(this.dir, "signing");
    generateKeyFiles(signing, this.kid);
    mkdirSync(this.keysDir, { recursive: true });
    copyFileSync(join(signing, `${this.kid}.pub.pem`), join(this.keysDir, `${this.kid}.pub.pem`));
    this.privateKeyFile = join(signing, `${this.kid}.pem`);
    this.privateKey = createPrivateKey(readFileSync(this.privateKeyFile, "utf8"));
  }

  get v() {
    return VARIANTS[this.variant];
  }

  add(spec: ReleaseSpec): WrittenRelease {
    const v = this.v;
    const product = spec.product === undefined ? (v.products[0] ?? null) : spec.product;
    const channel = spec.channel ?? "stable";
    const platform = spec.platform ?? "win-x64";
    const laneParts = [...(product ? [product] : []), channel, platform];
    const dir = join(this.root, ...laneParts, spec.folder ?? spec.version);
    mkdirSync(dir, { recursive: true });
    const installer = spec.installer ?? `${product ?? v.name}-${spec.version}-${platform}.exe`;
    const installerBytes = spec.installerBytes ?? randomBytes(10_000);
    writeFileSync(join(dir, installer), installerBytes);
    for (const [name, bytes] of Object.entries(spec.files ?? {})) writeFileSync(join(dir, name), bytes);
    const manifest = {
      ...(product ? { product } : {}),
      channel,
      platform,
      version: spec.version,
      released: spec.released ?? "2026-10-01T00:00:00+00:00",
      installer,
      size: installerBytes.length,
      sha256: new Bun.CryptoHasher("sha256").update(installerBytes).digest("hex"),
      ...spec.fields,
    };
    const manifestBytes = Buffer.from(JSON.stringify(manifest, null, 2) + "\n");
    const manifestPath = join(dir, v.manifestFile);
    writeFileSync(manifestPath, manifestBytes);
    if (spec.sign !== false) writeFileSync(`${manifestPath}.sig`, signManifest(manifestBytes, { kid: this.kid, privateKey: this.privateKey }, v));
    return { dir, manifestPath, manifestBytes, installerPath: join(dir, installer), installerBytes, installer, lane: laneParts.join("/") };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A test site serving a ReleaseTree (license key beside the release public key), and a way to get tokens. */
export async function releaseSite(variant: VariantName, settings: Record<string, string> = {}, tables?: Record<string, unknown>) {
  const tree = new ReleaseTree(variant);
  generateKeyFiles(tree.keysDir, VARIANTS[variant].defaultLicenseKid);
  const site: TestSite = await testSite(variant, {
    withKey: false,
    settings: { keys: tree.keysDir, releases: tree.root, ...settings },
    ...(tables ? { tables } : {}),
  });
  const holder = site.composed.services.releases;
  // compose starts the first scan on the next turn; let it finish so tests' re-scans do not race it.
  await holder.ready();
  return {
    tree,
    site,
    holder,
    async token(channels: string[] = ["stable", "preview"]): Promise<string> {
      const { key } = await createLicense(site, { channels, seats: 50 });
      const res = await site.request("POST", "/licenses/activate", { body: { key, device: device(variant) } });
      const body = (await res.json()) as { token: string };
      return body.token;
    },
    async close() {
      holder.close();
      await site.close();
      tree.remove();
    },
  };
}
