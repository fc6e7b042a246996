import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import type { Config } from "../config/config";
import { VARIANTS, type VariantName } from "../config/variants";
import { settingDefault } from "../config/settings";
import type { Admin } from "../domain/admin/operator";
import { CLI_CALLER, type AdminDeps } from "../domain/admin/deps";
import { authenticateAdmin, createAdminToken } from "../domain/admin/tokens";
import { isKeyturnError } from "../domain/errors";
import { sha256Hex } from "../domain/ids";
import { generateKeyFiles, loadKeyRing } from "../domain/keys";
import { hashLicenseKey } from "../domain/license-key";
import type { Store } from "../store/types";
import { out } from "./io";

/** Where the demo finds the example trees: a checkout's releases.example, else the copy built into keyturn. */
const exampleRoots = (dataDir: string) => [resolve("releases.example"), join(dataDir, "releases.example")];

/**
 * Demo defaults, applied to the settings before validation: records and development keys under
 * ./data/demo-<variant>, and the example release tree of the variant: the checkout's, or (an
 * executable run anywhere else) the one built into it, written under the demo's data directory.
 */
export async function demoSettings(settings: Record<string, string | undefined>, explicit: ReadonlySet<string>): Promise<void> {
  const variant = (settings.variant ?? "alpha") as VariantName;
  const home = join(settings.data && explicit.has("data") ? settings.data : settingDefault("data"), `demo-${variant}`);
  settings.variant = variant;
  settings.data = home;
  if (!explicit.has("keys")) settings.keys = join(home, "keys");
  if (!explicit.has("releases")) {
    const [checkout, builtIn] = exampleRoots(home);
    // Imported only here: the built-in tree (about 530 KB of inlined text) is no cost to any other command.
    const root = existsSync(join(checkout!, variant)) ? checkout! : (await import("./example-tree")).extractExampleTree(builtIn!);
    settings.releases = join(root, variant);
  }
  // The demo's public origin (--base-url, http://<host>:<port>) names its port: port 0 becomes a free one now.
  if (settings.port?.trim() === "0" && !explicit.has("base-url")) settings.port = String(await freePort(settings.host?.trim() || settingDefault("host")));
}

function freePort(host: string): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, host, () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => done(port));
    });
  });
}

/** Development keys when the demo has none yet. */
export async function ensureDemoKeys(config: Config): Promise<void> {
  const ring = await loadKeyRing(config.keysDir, config.variant);
  if (!ring.signing) generateKeyFiles(config.keysDir, config.variant.defaultLicenseKid);
  copyExampleReleaseKeys(config);
}

/**
 * When the demo serves the example tree, the public halves of the keys that signed it go into the
 * demo keys directory, so the demo checks release signatures exactly as production does.
 */
function copyExampleReleaseKeys(config: Config): void {
  const root = exampleRoots(config.dataDir).find((r) => resolve(config.releasesDir) === resolve(r, config.variant.name));
  const exampleKeys = root && join(root, "keys");
  if (!exampleKeys || !existsSync(exampleKeys)) return;
  for (const name of readdirSync(exampleKeys))
    if (name.startsWith(`${config.variant.name}-release-`) && name.endsWith(".pub.pem")) copyFileSync(join(exampleKeys, name), join(config.keysDir, name));
}

/** The demo license: created once, its key kept beside the demo records so every start shows it. */
export async function ensureDemoLicense(config: Config, store: Store, admin: Admin): Promise<string> {
  const file = join(config.dataDir, "demo-license.txt");
  if (existsSync(file)) {
    const key = readFileSync(file, "utf8").trim();
    const license = await store.findLicenseByKeyHash(hashLicenseKey(key));
    if (license && license.revoked === null) return key;
  }
  const { key } = await admin.createLicense({
    licensee: "Demo User",
    organization: "Demo Organization",
    plan: "demo",
    planTitle: "Demo",
    seats: 3,
    channels: [...config.variant.channels],
    expires: null,
  });
  writeFileSync(file, key + "\n", { mode: 0o600 });
  return key;
}

/**
 * The demo admin token (scope admin, named "demo"): created once, its secret kept beside the demo
 * records (mode 0600, like the demo license) so every start shows the same token and a shell that
 * holds it keeps working across restarts. Only the demo keeps a secret in the clear: it is for
 * development, on development keys. A token revoked or expired meanwhile is replaced.
 */
export async function ensureDemoAdminToken(config: Config, admin: AdminDeps): Promise<string> {
  const file = join(config.dataDir, "demo-admin-token.txt");
  if (existsSync(file)) {
    const secret = readFileSync(file, "utf8").trim();
    try {
      await authenticateAdmin(admin, secret);
      return secret;
    } catch (e) {
      if (!isKeyturnError(e)) throw e;
    }
  }
  const { secret } = await createAdminToken(admin, CLI_CALLER, { name: "demo", scopes: ["admin"] });
  writeFileSync(file, secret + "\n", { mode: 0o600 });
  return secret;
}

export function printDemoBanner(config: Config, key: string, adminToken: string, listenUrl: string): void {
  const v = VARIANTS[config.variant.name];
  const hash = Buffer.from(sha256Hex(`${v.deviceTextPrefix}demo-installation`), "hex").toString("base64url");
  const device: Record<string, string> = { hash, name: "Demo PC", platform: "win-x64", version: "1.0.0" };
  if (v.products.length > 0) device.product = v.products[0]!;
  const body = JSON.stringify({ key, device });
  const bar = "!".repeat(78);
  out(bar);
  out("!! DEMO MODE: DEVELOPMENT KEYS. Never use these keys or this data in production.");
  out(`!! keys:     ${resolve(config.keysDir)}`);
  out(`!! records:  ${resolve(config.dataDir)}`);
  out(`!! releases: ${resolve(config.releasesDir)}`);
  out(bar);
  out(`variant:      ${config.variant.name}`);
  out(`demo license: ${key}`);
  out(`demo admin token: ${adminToken}`);
  out("");
  out(`Console (staff):     ${config.baseUrl}/console/   sign in with the demo admin token`);
  out(`Portal (customers):  ${config.baseUrl}/portal/    sign in with the demo license key`);
  out("");
  out("Activate an installation:");
  out(`  curl -s ${listenUrl}/api/v1/licenses/activate -H 'content-type: application/json' -d '${body}'`);
  out("Ask the admin API (docs/admin-api.md):");
  out(`  curl -s ${listenUrl}/api/v1/admin/licenses -H 'Authorization: Bearer ${adminToken}'`);
  out("");
}
