/**
 * Seeds a keyturn SQLite file for the scale scenario straight through SQL, in big transactions:
 * LICENSES licenses and ACTIVATIONS activations (spread evenly, every tenth one deactivated), on
 * the schema of src/store/migrations.ts (the store applies the migrations first). Writes beside it
 * `sample-keys.txt` (keys of every 50th license, given 1,000 seats so the bench can keep activating
 * on them) and `sample-tokens.txt` (tokens of active seeded activations, signed with the license key).
 *
 * `bun bench/seed-scale.ts DATA_DIR LICENSE_KEY_PEM [licenses] [activations] [tokens]`
 */
import { createPrivateKey, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { CROCKFORD } from "../src/domain/ids";
import { hashLicenseKey } from "../src/domain/license-key";
import { TokenSigner } from "../src/domain/tokens";
import { openSqliteStore } from "../src/store/sqlite";

const [dataDir, keyPem, nLic = "1000000", nAct = "3000000", nTok = "5000"] = process.argv.slice(2);
if (!dataDir || !keyPem) throw new Error("usage: bun bench/seed-scale.ts DATA_DIR LICENSE_KEY_PEM [licenses] [activations] [tokens]");
const LICENSES = Number(nLic);
const ACTIVATIONS = Number(nAct);
const TOKENS = Number(nTok);
const SAMPLE_EVERY = 50;
const variant = VARIANTS.alpha;
const started = performance.now();

/** Random Crockford base32 text, drawn from one big buffer (randomBytes per id is the slow part). */
let pool = randomBytes(0);
let at = 0;
function base32(n: number): string {
  if (at + n > pool.length) (pool = randomBytes(1 << 20)), (at = 0);
  let s = "";
  for (let i = 0; i < n; i++) s += CROCKFORD[pool[at++]! & 31];
  return s;
}
const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
function deviceHash(): string {
  if (at + 43 > pool.length) (pool = randomBytes(1 << 20)), (at = 0);
  let s = "";
  for (let i = 0; i < 43; i++) s += B64URL[pool[at++]! & 63];
  return s;
}

const store = openSqliteStore(dataDir);
const db = store.db;
db.exec("PRAGMA synchronous = OFF");
db.exec("PRAGMA cache_size = -1000000");

const insertLicense = db.prepare(`INSERT INTO licenses (id, kind, key_hash, licensee, organization, plan, plan_title, channels, seats, issued, expires, revoked)
  VALUES (?, 'license', ?, ?, ?, 'pro', 'Professional', '["stable","preview"]', ?, ?, NULL, NULL)`);
const insertActivation =
  db.prepare(`INSERT INTO activations (id, license_id, kind, installation, device_hash, product, name, platform, version, created, last_seen, deactivated)
  VALUES (?, ?, 'license', ?, ?, ?, 'Office PC', 'win-x64', '1.4.2', ?, ?, ?)`);

const now = Date.now();
const licenseIds: string[] = new Array(LICENSES);
const sampleKeys: string[] = [];
const BATCH = 100_000;
for (let start = 0; start < LICENSES; start += BATCH) {
  db.transaction(() => {
    for (let i = start; i < Math.min(LICENSES, start + BATCH); i++) {
      const key = `${variant.keyPrefix}-${base32(5)}-${base32(5)}-${base32(5)}-${base32(5)}-${base32(5)}`;
      const id = `lic_${base32(20).toLowerCase()}`;
      licenseIds[i] = id;
      const sample = i % SAMPLE_EVERY === 0;
      if (sample) sampleKeys.push(key);
      insertLicense.run(id, hashLicenseKey(key), `Licensee ${i}`, `Organization ${i % 50_000}`, sample ? 1000 : 5, now - 365 * 86400_000 + i);
    }
  })();
}
console.error(`licenses: ${LICENSES} in ${((performance.now() - started) / 1000).toFixed(1)} s`);

const signer = new TokenSigner(variant, "https://licenses.example.com", {
  kid: "alpha-license-2026-10",
  privateKey: createPrivateKey(readFileSync(keyPem, "utf8")),
});
const tokens: string[] = [];
const tokenEvery = Math.max(1, Math.floor(ACTIVATIONS / TOKENS));
for (let start = 0; start < ACTIVATIONS; start += BATCH) {
  db.transaction(() => {
    for (let i = start; i < Math.min(ACTIVATIONS, start + BATCH); i++) {
      const licenseId = licenseIds[i % LICENSES]!;
      const id = `act_${base32(20).toLowerCase()}`;
      const hash = deviceHash();
      const created = now - 200 * 86400_000 + i;
      const deactivated = i % 10 === 9 ? created + 86400_000 : null;
      insertActivation.run(id, licenseId, hash, hash, variant.products[i % 2]!, created, created, deactivated);
      if (deactivated === null && i % tokenEvery === 0 && tokens.length < TOKENS)
        tokens.push(
          signer.sign(
            {
              sub: id,
              kind: "license",
              lic: licenseId,
              name: `Licensee ${i % LICENSES}`,
              org: "Organization",
              plan: "pro",
              chn: ["stable", "preview"],
              dev: hash,
            },
            now,
            now + 7 * 86400_000,
          ).token,
        );
    }
  })();
}
console.error(`activations: ${ACTIVATIONS} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
db.exec("ANALYZE");
await store.close();
writeFileSync(join(dataDir, "sample-keys.txt"), sampleKeys.join("\n") + "\n");
writeFileSync(join(dataDir, "sample-tokens.txt"), tokens.join("\n") + "\n");
console.error(`seeded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
