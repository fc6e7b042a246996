/**
 * Issue 29's refusal test for trials ("a trial started twice"), across processes: two real
 * `keyturn serve` processes on one SQLite file (then one PostgreSQL schema) are asked at once to
 * start the same device's trial; every answer is the same trial, the records hold one. Then a bought
 * key activated on that device through the other process ends the trial's seat and counts the
 * conversion once.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { Admin } from "../src/domain/admin/operator";
import { Audit } from "../src/domain/audit";
import { systemClock } from "../src/domain/clock";
import { openPostgresStore } from "../src/store/postgres";
import { openSqliteStore } from "../src/store/sqlite";
import type { Store } from "../src/store/types";
import { announceSkip, freshSchema, PG_URL } from "./databases";
import { device, tempDir } from "./helpers";
import { postgresSiteArgs, postJson as post, siteArgs, siteDirs, startServe, type ServeProcess } from "./processes";

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A TOML file with the trial plan (`--config`). */
function configFile(root: string): string {
  const file = join(root, "keyturn.toml");
  writeFileSync(file, `trial-plan = "eval"\ntrial-length = "14d"\n\n[plans.eval]\ntitle = "Pro (trial)"\nchannels = ["stable"]\n`);
  return file;
}

const licenceOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as { lic: string }).lic;

async function startTwiceAndConvert(servers: readonly ServeProcess[], store: Store): Promise<void> {
  const dev = device("alpha");
  const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => post(servers[n % 2]!.url, "/trials/start", { device: dev })));
  expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
  const licences = new Set(answers.map((a) => licenceOf(a.body.token)));
  expect(licences.size).toBe(1);
  const [trialLicence] = [...licences];
  expect(new Set(answers.map((a) => a.body.entitlement.id)).size).toBe(1);
  expect(await store.trialCounts()).toEqual({ started: 1, converted: 0 });

  const admin = new Admin(VARIANTS.alpha, store, systemClock, new Audit(store, systemClock));
  const { key, license } = await admin.createLicense({
    licensee: "Ada",
    organization: "Engines",
    plan: "pro",
    planTitle: "Pro",
    seats: 1,
    channels: ["stable"],
    expires: null,
  });
  expect((await post(servers[1]!.url, "/licenses/activate", { key, device: dev })).status).toBe(200);
  // The trial's token is refused by the other process at once: its seat ended in the records.
  const current = await fetch(`${servers[0]!.url}/api/v1/entitlements/current`, { headers: { authorization: `Bearer ${answers[0]!.body.token}` } });
  expect(current.status).toBe(401);
  const again = await post(servers[0]!.url, "/trials/start", { device: dev });
  expect(again.status).toBe(403);
  expect(again.body.error).toBe("license_expired");
  expect(await store.trialCounts()).toEqual({ started: 1, converted: 1 });
  expect(await store.getTrialOfLicense(trialLicence!)).toMatchObject({ convertedTo: license.id });
}

test("a trial started twenty times at once through two processes on one SQLite file is one trial; a bought key converts it", async () => {
  const root = tempDir();
  roots.push(root);
  const dirs = siteDirs(root, "alpha");
  const args = [...siteArgs("alpha", dirs), "--config", configFile(root)];
  const servers = [await startServe(args), await startServe(args)];
  const store = openSqliteStore(dirs.data);
  try {
    await startTwiceAndConvert(servers, store);
  } finally {
    for (const s of servers) expect(await s.stop()).toBe(0);
    await store.close();
  }
}, 90_000);

if (!PG_URL) announceSkip("test/trials-two-processes.test.ts", "KEYTURN_TEST_POSTGRES_URL");

describe.skipIf(!PG_URL)("on PostgreSQL", () => {
  test("a trial started twenty times at once through two processes on one PostgreSQL is one trial; a bought key converts it", async () => {
    const schema = await freshSchema();
    const root = tempDir();
    roots.push(root);
    const args = postgresSiteArgs(root, "alpha", schema.url);
    const servers = [await startServe([...args, "--config", configFile(root)]), await startServe([...args, "--config", configFile(root)])];
    const store = await openPostgresStore(schema.url);
    try {
      await startTwiceAndConvert(servers, store);
    } finally {
      for (const s of servers) expect(await s.stop()).toBe(0);
      await store.close();
      await schema.drop();
    }
  }, 90_000);
});
