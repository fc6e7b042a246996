/**
 * Raw ES256 rates of the runtime's crypto in a tight loop, on one core (the harness pins it to the
 * server's core): node:crypto's synchronous sign/verify and WebCrypto's (awaited one at a time, as
 * jose does). Prints one JSON line. `bun bench/crypto-rates.ts [seconds per measurement]`
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from "node:crypto";

const seconds = Number(process.argv[2] ?? 2);
const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const priv = createPrivateKey(privateKey.export({ type: "pkcs8", format: "pem" }));
const pub = createPublicKey(publicKey.export({ type: "spki", format: "pem" }));
const webPriv = await crypto.subtle.importKey("pkcs8", privateKey.export({ type: "pkcs8", format: "der" }), { name: "ECDSA", namedCurve: "P-256" }, false, [
  "sign",
]);
const webPub = await crypto.subtle.importKey("spki", publicKey.export({ type: "spki", format: "der" }), { name: "ECDSA", namedCurve: "P-256" }, false, [
  "verify",
]);
const alg = { name: "ECDSA", hash: "SHA-256" };
// About the size of an entitlement token's signing input.
const input = Buffer.from("eyJhbGciOiJFUzI1NiJ9." + "x".repeat(380));
const sig = sign("sha256", input, { key: priv, dsaEncoding: "ieee-p1363" });

async function rate(fn: () => unknown): Promise<number> {
  const until = performance.now() + 200;
  while (performance.now() < until) await fn(); // warm-up
  let n = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 50; i++) await fn();
    n += 50;
  }
  return n / ((performance.now() - start) / 1000);
}

const result = {
  nodeSign: await rate(() => sign("sha256", input, { key: priv, dsaEncoding: "ieee-p1363" })),
  nodeVerify: await rate(() => verify("sha256", input, { key: pub, dsaEncoding: "ieee-p1363" }, sig)),
  webcryptoSign: await rate(() => crypto.subtle.sign(alg, webPriv, input)),
  webcryptoVerify: await rate(() => crypto.subtle.verify(alg, webPub, sig, input)),
};
console.log(JSON.stringify(result));
