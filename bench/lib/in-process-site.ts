/**
 * A site composed in-process as `keyturn serve` composes it, for the benches that drive
 * `app.handle` directly (bench/profile-handle.ts, bench/memory-probe.ts): one alpha site on `dir`
 * with the rate limits lifted (all the load comes from one address, as in bench/run.ts), a licence
 * of `seats`, and activation requests that each bring a new installation.
 */
import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles } from "../../src/domain/keys";
import { silentLogger } from "../../src/config/log";
import { toConfig } from "../../src/config/config";
import { compose } from "../../src/compose";
import { Admin } from "../../src/domain/admin/operator";
import { createApp } from "../../src/http/app";
import { RELEASE_KID, writeSmallReleases } from "./fixture";

export interface InProcessSiteOptions {
  /** Holds `keys/` and `releases/` already; the records are written beside them. */
  readonly dir: string;
  readonly seats: number;
  readonly seatLease?: string;
  readonly clock?: () => number;
}

export async function inProcessSite({ dir, seats, seatLease, clock = () => Date.now() }: InProcessSiteOptions) {
  const config = toConfig(
    {
      variant: "alpha",
      "base-url": "https://licenses.example.com",
      data: dir,
      keys: join(dir, "keys"),
      releases: join(dir, "releases"),
      "rate-limit-api": "100000000/1s",
      "rate-limit-signin": "100000000/1s",
    },
    "admin",
  );
  const { services, store } = await compose(config, { log: silentLogger, peerAddress: () => "127.0.0.1", clock });
  const app = createApp(services);
  await services.releases.ready();
  const admin = new Admin(config.variant, store, services.clock, services.audit);
  const { key } = await admin.createLicense({
    licensee: "Bench",
    organization: "Bench",
    plan: "p",
    planTitle: "P",
    seats,
    channels: ["stable", "preview"],
    expires: null,
    ...(seatLease ? { seatLease } : {}),
  });
  let n = 0;
  /** POST /licenses/activate for an installation not seen before. */
  const activateRequest = () =>
    new Request("http://localhost/api/v1/licenses/activate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        key,
        device: { hash: `D${String(++n).padStart(42, "0")}`, name: "Bench PC", platform: "win-x64", version: "1.0.0", product: "alpha" },
      }),
    });
  /** The bearer header of one activated installation. */
  const bearer = async () => ({ authorization: `Bearer ${((await (await app.handle(activateRequest())).json()) as { token: string }).token}` });
  return { app, services, store, activateRequest, bearer };
}

/** `dir/keys` (the site's keys and a release key's public half) and `dir/releases`: `folders` small releases signed with that key. */
export async function writeSignedTree(dir: string, folders: number): Promise<void> {
  const keys = join(dir, "keys");
  generateKeyFiles(keys, VARIANTS.alpha.defaultLicenseKid);
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  await Bun.write(join(keys, `${RELEASE_KID}.pub.pem`), publicKey.export({ type: "spki", format: "pem" }));
  writeSmallReleases(join(dir, "releases"), folders, {
    kid: RELEASE_KID,
    privateKey: createPrivateKey(privateKey.export({ type: "pkcs8", format: "pem" })),
  });
}
