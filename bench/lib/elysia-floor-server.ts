/**
 * 4a's floor (bench/lib/elysia-floor.ts compiles and starts it): the mix's five request shapes on
 * the parts keyturn is built from, with none of keyturn's own work. Elysia routes them; the
 * manifest, its signature, `entitlements/current` and the releases list are the bytes keyturn
 * answered, held in memory; an activation is a TypeBox-checked JSON body, one row inserted into a
 * SQLite file in WAL mode and an ES256 token signed with node:crypto, as keyturn signs; every
 * answer is logged as a JSON line, written once per event-loop turn, as keyturn's logger does.
 * What keyturn's peak RSS has beyond this one's is keyturn's own: its release index, its caches,
 * its modules and what its request path allocates.
 *   keyturn-floor PORT ANSWERS_DIR DATA_FILE LOG_FILE
 */
import { Database } from "bun:sqlite";
import { generateKeyPairSync, randomUUID, sign } from "node:crypto";
import { openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { Elysia, t } from "elysia";

const [port, answers, dataFile, logFile] = process.argv.slice(2) as [string, string, string, string];
const answer = (name: string) => readFileSync(join(answers, name));
const manifest = answer("manifest");
const signature = answer("signature");
const current = answer("current");
const releases = answer("releases");

const db = new Database(dataFile, { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec("CREATE TABLE IF NOT EXISTS activations (id TEXT PRIMARY KEY, key TEXT NOT NULL, device TEXT NOT NULL, created INTEGER NOT NULL)");
const insert = db.prepare("INSERT INTO activations (id, key, device, created) VALUES (?, ?, ?, ?)");
const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const b64url = (bytes: Buffer | string) => Buffer.from(bytes).toString("base64url");
const header = b64url(JSON.stringify({ alg: "ES256", typ: "JWT", kid: "floor" }));

const log = openSync(logFile, "a");
let pending: string[] = [];
const flush = () => {
  const bytes = Buffer.from(pending.join(""));
  pending = [];
  for (let written = 0; written < bytes.length; ) written += writeSync(log, bytes, written);
};
const logLine = (fields: object) => {
  if (pending.push(`${JSON.stringify({ time: new Date().toISOString(), level: "info", msg: "request", ...fields })}\n`) === 1) setImmediate(flush);
};

const json = { "content-type": "application/json" };
const bearer = (authorization: string | undefined) => authorization?.startsWith("Bearer ") === true;

new Elysia()
  .onAfterResponse(({ request, set }) => logLine({ method: request.method, path: request.url.slice(request.url.indexOf("/", 8)), status: set.status }))
  .get("/api/v1/updates/:product/:channel/:platform/:file", ({ headers, params, status }) => {
    if (!bearer(headers.authorization)) return status(401);
    return new Response(params.file.endsWith(".sig") ? signature : manifest, { headers: json });
  })
  .get("/api/v1/entitlements/current", ({ headers, status }) => (bearer(headers.authorization) ? new Response(current, { headers: json }) : status(401)))
  .get("/api/v1/releases", ({ headers, status }) => (bearer(headers.authorization) ? new Response(releases, { headers: json }) : status(401)))
  .post(
    "/api/v1/licenses/activate",
    ({ body }) => {
      const id = randomUUID();
      insert.run(id, body.key, body.device.hash, Date.now());
      const now = Math.floor(Date.now() / 1000);
      const input = `${header}.${b64url(JSON.stringify({ sub: id, dev: body.device.hash, iat: now, exp: now + 3600 }))}`;
      const token = `${input}.${b64url(sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }))}`;
      return { token, activation: { id } };
    },
    {
      body: t.Object({
        key: t.String({ maxLength: 64 }),
        device: t.Object({ hash: t.String(), name: t.String(), platform: t.String(), version: t.String(), product: t.String() }),
      }),
    },
  )
  .listen({ hostname: "127.0.0.1", port: Number(port) });
console.log("ready");
