// The client kit's main flow as a vendor's program runs it, in plain JavaScript on the built kit,
// so the same steps run under Node (and Bun). Configuration comes from the environment; the result
// is one JSON line on stdout for the test to check.
import { readFileSync, existsSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";

const env = process.env;
const kit = await import(env.KIT);
const { KeyturnClient, KeyturnClientError, deviceHash, loadDeviceId } = kit;

let stored = null;
const id = await loadDeviceId({
  read: () => stored,
  write: (v) => {
    stored = v;
  },
});
const hash = await deviceHash(env.VARIANT, id);
const device = { hash, name: "Node PC", platform: "win-x64", version: "1.0.0", ...(env.PRODUCT ? { product: env.PRODUCT } : {}) };
const client = new KeyturnClient({
  variant: env.VARIANT,
  issuer: env.ISSUER,
  baseUrl: env.SITE_URL,
  licenseKeys: JSON.parse(env.LICENSE_KEYS),
  releaseKeys: JSON.parse(env.RELEASE_KEYS),
  ...(env.PRODUCT ? { product: env.PRODUCT } : {}),
  channel: "stable",
});

const out = { runtime: typeof Bun === "undefined" ? `node ${process.version}` : "bun", idStored: stored === id, hashLength: hash.length };
const activation = await client.activate(env.KEY, device);
out.activatedDev = activation.verified.claims.dev === hash;
const offline = await client.verifyToken(activation.token, { deviceHash: hash });
out.offlineSub = offline.claims.sub;
const update = await client.checkForUpdate("1.0.0", { token: activation.token });
out.update = { available: update.available, version: update.release.version, required: update.required, critical: update.critical };

const file = join(env.DIR, update.release.installer);
const controller = new AbortController();
let cut = null;
try {
  await client.downloadInstaller(update.release, file, {
    token: activation.token,
    signal: controller.signal,
    onProgress: (p) => {
      if (p.received >= p.total / 3 && !controller.signal.aborted) controller.abort();
    },
  });
} catch (e) {
  cut = e instanceof KeyturnClientError ? e.code : String(e);
}
out.cut = cut;
out.partAfterCut = existsSync(`${file}.part`) ? readFileSync(`${file}.part`).length : -1;
const done = await client.downloadInstaller(update.release, file, { token: activation.token });
out.resume = { status: done.status, resumedFrom: done.resumedFrom, restarted: done.restarted };
out.sha256 = createHash("sha256").update(readFileSync(file)).digest("hex");
out.partLeft = existsSync(`${file}.part`) || existsSync(`${file}.part.etag`);

const refreshed = await client.refresh(activation.token, device);
out.refreshedNewToken = refreshed.token !== activation.token;
out.current = (await client.current(refreshed.token)).entitlement.id;
await client.deactivate(refreshed.token);
try {
  await client.current(refreshed.token);
  out.afterDeactivate = "accepted";
} catch (e) {
  out.afterDeactivate = e.code;
}
console.log(JSON.stringify(out));
