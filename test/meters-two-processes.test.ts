/**
 * Issue 29's refusal test for metered use: "a meter driven below zero by 50 concurrent requests
 * over two processes". Two real `keyturn serve` processes share one SQLite file (then one
 * PostgreSQL schema); 50 uses race through both at once: exactly the uses that fit succeed, the
 * rest are refused usage_limit, and the records never hold more use than the limit.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../src/config/variants";
import { CLI_CALLER, type AdminDeps } from "../src/domain/admin/deps";
import { createLicense, LicenseCreateInput } from "../src/domain/admin/licenses";
import { systemClock } from "../src/domain/clock";
import { decode } from "../src/domain/decode";
import { openPostgresStore } from "../src/store/postgres";
import { openSqliteStore, SQLITE_FILE } from "../src/store/sqlite";
import type { Store } from "../src/store/types";
import { announceSkip, freshSchema, PG_URL } from "./databases";
import { device, tempDir } from "./helpers";
import { postgresSiteArgs, postJson as post, siteArgs, siteDirs, startServe, type ServeProcess } from "./processes";

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** Each round: a meter's limit, what each of the 50 racing uses spends, and how much was spent before the race. */
const ROUNDS = [
  { limit: 30, amount: 1, spent: 0 },
  { limit: 100, amount: 7, spent: 2 },
  { limit: 1, amount: 1, spent: 0 },
  { limit: 50, amount: 1, spent: 49 },
];
const REQUESTS = 50;

async function licensesFor(store: Store): Promise<string[]> {
  const deps: AdminDeps = { variant: VARIANTS.alpha, store, clock: systemClock, tokenTtlSeconds: 3600 };
  const keys: string[] = [];
  for (const r of ROUNDS) {
    const input = decode(LicenseCreateInput, {
      licensee: "Ada",
      plan: "pro",
      seats: 1,
      channels: ["stable"],
      meters: { exports: { limit: r.limit, period: "30d" } },
    });
    keys.push((await createLicense(deps, CLI_CALLER, input)).key);
  }
  return keys;
}

async function race(servers: readonly ServeProcess[], keys: readonly string[]): Promise<Array<{ licenseId: string }>> {
  const ids: Array<{ licenseId: string }> = [];
  for (const [i, round] of ROUNDS.entries()) {
    const activated = await post(servers[0]!.url, "/licenses/activate", { key: keys[i], device: device("alpha") });
    expect(activated.status).toBe(200);
    const token = activated.body.token as string;
    if (round.spent > 0)
      expect((await post(servers[1]!.url, "/entitlements/usage", { meter: "exports", amount: round.spent, idempotencyKey: `before-${i}` }, token)).status).toBe(
        200,
      );
    const answers = await Promise.all(
      Array.from({ length: REQUESTS }, (_, n) =>
        post(servers[n % 2]!.url, "/entitlements/usage", { meter: "exports", amount: round.amount, idempotencyKey: `race-${i}-${n}` }, token),
      ),
    );
    const fits = Math.floor((round.limit - round.spent) / round.amount);
    const granted = answers.filter((a) => a.status === 200);
    expect(granted).toHaveLength(fits);
    // Each granted use saw a distinct remainder: no two were counted from the same reading.
    expect(new Set(granted.map((g) => g.body.remaining)).size).toBe(fits);
    expect(Math.min(...granted.map((g) => g.body.remaining as number), Number.POSITIVE_INFINITY)).toBe(
      fits === 0 ? Number.POSITIVE_INFINITY : round.limit - round.spent - fits * round.amount,
    );
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(REQUESTS - fits);
    expect(refused.every((a) => a.status === 403 && a.body.error === "usage_limit")).toBe(true);
    ids.push({ licenseId: (JSON.parse(atob(token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as { lic: string }).lic });
  }
  return ids;
}

const expectedUse = (i: number) => ROUNDS[i]!.spent + Math.floor((ROUNDS[i]!.limit - ROUNDS[i]!.spent) / ROUNDS[i]!.amount) * ROUNDS[i]!.amount;

test("50 uses racing through two processes on one SQLite file: exactly the uses that fit succeed, never past the limit", async () => {
  const root = tempDir();
  roots.push(root);
  const dirs = siteDirs(root, "alpha");
  const store = openSqliteStore(dirs.data);
  const keys = await licensesFor(store);
  await store.close();

  const servers = [await startServe(siteArgs("alpha", dirs)), await startServe(siteArgs("alpha", dirs))];
  let ids: Array<{ licenseId: string }>;
  try {
    ids = await race(servers, keys);
  } finally {
    for (const s of servers) expect(await s.stop()).toBe(0);
  }
  const db = new Database(join(dirs.data, SQLITE_FILE), { readonly: true });
  for (const [i, { licenseId }] of ids.entries()) {
    const row = db.query("SELECT used, lim FROM license_meters WHERE license_id = ? AND name = 'exports'").get(licenseId) as { used: number; lim: number };
    expect(row.used).toBe(expectedUse(i));
    expect(row.used).toBeLessThanOrEqual(row.lim);
  }
  db.close();
}, 90_000);

if (!PG_URL) announceSkip("test/meters-two-processes.test.ts", "KEYTURN_TEST_POSTGRES_URL");

describe.skipIf(!PG_URL)("on PostgreSQL", () => {
  test("50 uses racing through two processes on one PostgreSQL: exactly the uses that fit succeed, never past the limit", async () => {
    const schema = await freshSchema();
    const root = tempDir();
    roots.push(root);
    const args = postgresSiteArgs(root, "alpha", schema.url);
    const store = await openPostgresStore(schema.url);
    try {
      const keys = await licensesFor(store);
      const servers = [await startServe(args), await startServe(args)];
      let ids: Array<{ licenseId: string }>;
      try {
        ids = await race(servers, keys);
      } finally {
        for (const s of servers) expect(await s.stop()).toBe(0);
      }
      for (const [i, { licenseId }] of ids.entries()) {
        const [meter] = await store.listMeters(licenseId);
        expect(meter!.used).toBe(expectedUse(i));
        expect(meter!.used).toBeLessThanOrEqual(meter!.limit);
      }
    } finally {
      await store.close();
      await schema.drop();
    }
  }, 90_000);
});
