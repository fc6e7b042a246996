/**
 * Scale-out figures: the cost of the per-request activation status read (SQLite vs PostgreSQL), and
 * bearer requests and activations (on one licence, and spread over many) through one and two
 * `keyturn serve` processes on one SQLite file or one PostgreSQL database.
 *   KEYTURN_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test bun bench/scale-out.ts [seconds]
 * The servers' rate limits are lifted as bench/run.ts lifts them (all the load comes from one
 * address); any answer but a 200 stops the bench. Load generator and servers share the machine, so
 * the figures are a floor, not a capacity.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { Admin } from "../src/domain/admin/operator";
import { Audit } from "../src/domain/audit";
import { systemClock } from "../src/domain/clock";
import { generateKeyFiles } from "../src/domain/keys";
import { openPostgresStore } from "../src/store/postgres";
import { openSqliteStore } from "../src/store/sqlite";
import type { Store } from "../src/store/types";
import { BASE_URL, device, tempDir } from "../test/helpers";
import { freshSchema, PG_URL } from "../test/databases";
import { serve, type Serving } from "../test/serve-bare";

if (!PG_URL) {
  console.error("set KEYTURN_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)");
  process.exit(2);
}
const SECONDS = Number(process.argv[2] ?? 5);
const CONCURRENCY = 32;
/** Licences the "many licences" activation rows spread their requests over. */
const MANY = 1000;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const fmt = (ms: number) => `${ms < 1 ? (ms * 1000).toFixed(0) + " µs" : ms.toFixed(2) + " ms"}`;

async function statusReadCost(label: string, store: Store, activationId: string) {
  for (let i = 0; i < 500; i++) await store.activationStatus(activationId);
  const times: number[] = [];
  for (let i = 0; i < 5000; i++) {
    const t = performance.now();
    await store.activationStatus(activationId);
    times.push(performance.now() - t);
  }
  times.sort((x, y) => x - y);
  const start = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (done < 20_000) {
        done++;
        await store.activationStatus(activationId);
      }
    }),
  );
  const perSecond = done / ((performance.now() - start) / 1000);
  console.log(`| ${label} | ${fmt(pct(times, 50))} | ${fmt(pct(times, 99))} | ${Math.round(perSecond)} |`);
}

/** Runs `CONCURRENCY` request loops for SECONDS, spread round-robin over the servers. */
async function load(label: string, servers: Serving[], request: (s: Serving, i: number) => Promise<Response>) {
  const times: number[] = [];
  let failures = 0;
  let first: string | null = null;
  let i = 0;
  const end = performance.now() + SECONDS * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const n = i++;
        const t = performance.now();
        const res = await request(servers[n % servers.length]!, n);
        const body = await res.text();
        if (res.status !== 200) {
          failures++;
          first ??= `${res.status} ${body.slice(0, 200)}`;
        }
        times.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  // A refusal is not a measurement (issue 33 item 12: every answer was a 429 and was printed as throughput).
  if (failures > 0) throw new Error(`${label}: ${failures} of ${times.length} answers were not 200; the first: ${first}`);
  times.sort((x, y) => x - y);
  const row = { perSecond: Math.round(times.length / elapsed), p50: pct(times, 50), p99: pct(times, 99) };
  console.log(`| ${label} | ${row.perSecond} | ${fmt(row.p50)} | ${fmt(row.p99)} |`);
  return row;
}

const dir = tempDir("keyturn-bench-");
const schema = await freshSchema();
const keys = join(dir, "keys");
generateKeyFiles(keys, VARIANTS.alpha.defaultLicenseKid);
mkdirSync(join(dir, "releases"));
mkdirSync(join(dir, "data"));
const common = [
  "--variant",
  "alpha",
  "--base-url",
  BASE_URL,
  "--keys",
  keys,
  "--releases",
  join(dir, "releases"),
  // As bench/run.ts: the load comes from one address, and the default limits would refuse nearly all of it.
  "--rate-limit-api",
  "100000000/1s",
  "--rate-limit-signin",
  "100000000/1s",
];
const servers: Serving[] = [];

try {
  const pg = await openPostgresStore(schema.url);
  const sqlite = openSqliteStore(join(dir, "data"));
  const newLicense = (store: Store, seats: number) =>
    new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock)).createLicense({
      licensee: "Bench",
      organization: "Bench Ltd",
      plan: "pro",
      planTitle: "Professional",
      seats,
      channels: ["stable"],
      expires: null,
    });

  console.log(`\nPer-request activation status read (one indexed join), 5000 sequential, then 20000 at ${CONCURRENCY} in flight:\n`);
  console.log("| records | p50 | p99 | reads/s |\n|---|---|---|---|");
  for (const [label, store] of [
    ["SQLite (WAL)", sqlite],
    ["PostgreSQL (pool of 10, loopback)", pg],
  ] as const) {
    const { license } = await newLicense(store, 1);
    const r = await store.activate({
      licenseId: license.id,
      kind: "license",
      installation: "bench",
      deviceHash: "bench",
      product: null,
      name: "B",
      platform: "win-x64",
      version: "1",
      newId: `act_bench_${label.length}`,
      now: Date.now(),
    });
    if (r.outcome === "seat_limit") throw new Error("no seat");
    await statusReadCost(label, store, r.activation.id);
  }

  const sqliteServers = [await serve([...common, "--data", join(dir, "data")]), await serve([...common, "--data", join(dir, "data")])];
  const pgServers = await Promise.all([serve([...common, "--database", schema.url]), serve([...common, "--database", schema.url])]);
  servers.push(...sqliteServers, ...pgServers);

  const post = (s: Serving, path: string, body: unknown) =>
    fetch(`${s.url}/api/v1${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const tokensFor = async (s: Serving, store: Store) => {
    const { key } = await newLicense(store, 100);
    const tokens: string[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await post(s, "/licenses/activate", { key, device: device("alpha") });
      if (res.status !== 200) throw new Error(`activation for the tokens: ${res.status} ${await res.text()}`);
      tokens.push(((await res.json()) as { token: string }).token);
    }
    return tokens;
  };
  const sqliteTokens = await tokensFor(sqliteServers[0]!, sqlite);
  const pgTokens = await tokensFor(pgServers[0]!, pg);
  const current = (tokens: string[]) => (s: Serving, i: number) =>
    fetch(`${s.url}/api/v1/entitlements/current`, { headers: { authorization: `Bearer ${tokens[i % tokens.length]}` } });
  const setups = [
    { label: "1 process, SQLite", store: sqlite, servers: sqliteServers.slice(0, 1), tokens: sqliteTokens },
    { label: "2 processes, one SQLite file", store: sqlite, servers: sqliteServers, tokens: sqliteTokens },
    { label: "1 process, PostgreSQL", store: pg, servers: pgServers.slice(0, 1), tokens: pgTokens },
    { label: "2 processes, PostgreSQL", store: pg, servers: pgServers, tokens: pgTokens },
  ];

  console.log(`\nGET /entitlements/current (bearer check + current answer), ${CONCURRENCY} in flight, ${SECONDS}s each:\n`);
  console.log("| setup | requests/s | p50 | p99 |\n|---|---|---|---|");
  for (const x of setups) await load(x.label, x.servers, current(x.tokens));

  const activate = (keys: string[]) => (s: Serving, i: number) => post(s, "/licenses/activate", { key: keys[i % keys.length], device: device("alpha") });
  console.log(
    `\nPOST /licenses/activate, a new installation each, on one licence (its row lock serialises them), ${CONCURRENCY} in flight, ${SECONDS}s each:\n`,
  );
  console.log("| setup | requests/s | p50 | p99 |\n|---|---|---|---|");
  for (const x of setups) await load(x.label, x.servers, activate([(await newLicense(x.store, 1_000_000)).key]));

  console.log(`\nPOST /licenses/activate, a new installation each, spread over ${MANY} licences, ${CONCURRENCY} in flight, ${SECONDS}s each:\n`);
  console.log("| setup | requests/s | p50 | p99 |\n|---|---|---|---|");
  for (const x of setups) {
    const keys: string[] = [];
    for (let i = 0; i < MANY; i++) keys.push((await newLicense(x.store, 100_000)).key);
    await load(x.label, x.servers, activate(keys));
  }

  await pg.close();
  await sqlite.close();
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  await schema.drop();
  rmSync(dir, { recursive: true, force: true });
}
