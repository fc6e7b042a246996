// The same installed kit loaded with require (a CommonJS program): the device hash, and the token
// the ES module program received, checked offline. One JSON line on stdout.
const { deviceHash, KeyturnClient } = require("keyturn-client");

const env = process.env;
const client = new KeyturnClient({ variant: env.VARIANT, issuer: env.ISSUER, licenseKeys: JSON.parse(env.LICENSE_KEYS), product: env.PRODUCT });
(async () => {
  const hash = await deviceHash(env.VARIANT, env.DEVICE_ID);
  const { claims } = await client.verifyToken(env.TOKEN, { deviceHash: hash });
  console.log(JSON.stringify({ hash, sub: claims.sub }));
})();
