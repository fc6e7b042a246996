// A vendor's program configured as docs/clients.md ("Pointed at a mirror") has it, run under node on
// the built kit: licensing at the vendor (HTTPS, private CA through NODE_EXTRA_CA_CERTS), updates
// and the installer from the mirror with the vendor's token. One JSON line on stdout.
import { join } from "node:path";

const env = process.env;
const { KeyturnClient, KeyturnClientError, deviceHash, newDeviceId } = await import(env.KIT);
const common = {
  variant: "alpha",
  issuer: env.VENDOR_URL,
  licenseKeys: JSON.parse(env.LICENSE_KEYS),
  releaseKeys: JSON.parse(env.RELEASE_KEYS),
  product: "alpha",
};
const licensing = new KeyturnClient(common);
const updates = new KeyturnClient({ ...common, baseUrl: env.MIRROR_URL });
const device = { hash: await deviceHash("alpha", newDeviceId()), name: "Mirror PC", platform: "win-x64", version: "1.0.0", product: "alpha" };
const codeOf = (e) => (e instanceof KeyturnClientError ? { code: e.code, status: e.status ?? null } : { code: String(e), status: null });

const out = {};
let token;
try {
  token = (await licensing.activate(env.KEY, device)).token;
  out.activate = "ok";
} catch (e) {
  out.activate = codeOf(e).code;
}
if (token) {
  const check = await updates.checkForUpdate("1.0.0", { token });
  out.update = { available: check.available, version: check.release?.version };
  const done = await updates.downloadInstaller(check.release, join(env.DIR, check.release.installer), { token });
  out.sha256 = done.sha256;
  try {
    await updates.activate(env.KEY, device);
    out.activateAtMirror = "ok";
  } catch (e) {
    out.activateAtMirror = codeOf(e);
  }
}
console.log(JSON.stringify(out));
