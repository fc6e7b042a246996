// A vendor's program as it starts out: a fresh Node project that installed the packed kit and
// imports it by its package name. Configuration comes from the environment; the result is one JSON
// line on stdout for test/client/kit-package.test.ts to check.
import { deviceHash, KeyturnClient, KeyturnClientError } from "keyturn-client";

const env = process.env;
const client = new KeyturnClient({
  variant: env.VARIANT,
  issuer: env.ISSUER,
  baseUrl: env.SITE_URL,
  licenseKeys: JSON.parse(env.LICENSE_KEYS),
  releaseKeys: JSON.parse(env.RELEASE_KEYS),
  product: env.PRODUCT,
});
const hash = await deviceHash(env.VARIANT, env.DEVICE_ID);
const device = { hash, name: "Vendor PC", platform: "win-x64", version: "1.0.0", product: env.PRODUCT };
const { token } = await client.activate(env.KEY, device);
const { claims } = await client.verifyToken(token, { deviceHash: hash });
const update = await client.checkForUpdate("1.0.0", { token });
let otherDevice = null;
try {
  await client.verifyToken(token, { deviceHash: await deviceHash(env.VARIANT, "another-device") });
} catch (e) {
  otherDevice = e instanceof KeyturnClientError ? e.reason : String(e);
}
console.log(
  JSON.stringify({
    runtime: `node ${process.version}`,
    hash,
    token,
    iss: claims.iss,
    dev: claims.dev,
    update: { available: update.available, version: update.release?.version },
    otherDevice,
  }),
);
