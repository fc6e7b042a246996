import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { silentLogger } from "../src/config/log";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createAdminToken } from "../src/domain/admin/tokens";
import { newEvent } from "../src/domain/events";
import { sha256Hex } from "../src/domain/ids";
import { addWebhookEndpoint } from "../src/domain/webhooks/endpoints";
import { WebhookWorker } from "../src/domain/webhooks/worker";
import { copySqliteToPostgres } from "../src/store/copy";
import { openPostgresStore, type PostgresStore } from "../src/store/postgres";
import { openSqliteStore, SQLITE_FILE } from "../src/store/sqlite";
import type { Store } from "../src/store/types";
import { createLicense, device, tempDir, testSite, type TestSite } from "./helpers";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "./databases";
import { license, seat } from "./store/store.suite";

if (!PG_URL) announceSkip("test/copy.test.ts", "KEYTURN_TEST_POSTGRES_URL");

const MAIN = join(import.meta.dir, "..", "src", "main.ts");

function keyturn(...args: string[]) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH } });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

/** Everything the Store interface can read back, to compare two back ends. */
async function everything(store: Store) {
  const licenses = await store.listLicenses();
  const activations = [];
  for (const l of licenses) activations.push(...(await store.listActivations(l.id)));
  const deliveries = await store.listDeliveries({ limit: 100_000 });
  const attempts = [];
  for (const d of deliveries) attempts.push(...(await store.listAttempts(d.id)));
  return {
    licenses,
    activations,
    audit: await store.listAudit({ limit: 100_000 }),
    controls: await store.listReleaseControls(),
    adminTokens: await store.listAdminTokens(),
    endpoints: await store.listWebhookEndpoints(),
    events: await store.listEvents({ after: 0, limit: 100_000 }),
    deliveries,
    attempts,
  };
}

describe.skipIf(!PG_URL)("keyturn copy (SQLite → PostgreSQL) and keyturn migrate --database", () => {
  let site: TestSite;
  let schema: TestSchema;
  let key: string;
  let token: string;
  let adminToken: string;
  const nonce = "c".repeat(64);

  beforeAll(async () => {
    site = await testSite("alpha");
    schema = await freshSchema();
    ({ key } = await createLicense(site, { seats: 3 }));
    // a license's own token lifetime and seat lease move with it
    await createLicense(site, {
      seats: 1,
      licensee: "Grace Hopper",
      expires: Date.parse("2027-06-01T00:00:00Z"),
      tokenTtl: 3600,
      seatLease: "30d",
      // A maintenance window and features (migration 15) travel with their licence.
      updatesUntil: "2027-01-01T00:00:00Z",
      features: ["export-pdf", "max-projects=50"],
    });
    for (let i = 0; i < 2; i++) {
      const res = await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
      expect(res.status).toBe(200);
      token = ((await res.json()) as { token: string }).token;
    }
    expect((await site.request("POST", "/licenses/activate", { body: { key: "AAAA-BBBB", device: device("alpha") } })).status).not.toBe(200);
    await site.composed.store.createChallenge({ nonceHash: nonce, installation: "inst", created: site.clock(), expires: site.clock() + 300_000, used: null });
    await site.composed.services.selection.controls.apply("withdraw", "alpha/stable/win-x64", "1.0.0");
    await site.composed.store.recordKnownReleases([{ lane: "alpha/stable/win-x64", version: "1.0.0" }], site.clock());
    // An admin token, a webhook endpoint and an outbox with a delivery attempted once (the name does not resolve)
    adminToken = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "moved", scopes: ["licenses:read"] })).secret;
    await addWebhookEndpoint(site.composed.services.admin, CLI_CALLER, { url: "https://hooks.example/moved", events: ["license.created", "license.revoked"] });
    await createLicense(site, { licensee: "After Hook" });
    await new WebhookWorker({ store: site.composed.store, clock: site.clock, log: silentLogger, resolve: async () => [] }).tick();
  });
  afterAll(async () => {
    await site?.close();
    await schema?.drop();
  });

  test("migrate --database applies the migrations to the PostgreSQL schema", () => {
    const r = keyturn("migrate", "--variant", "alpha", "--database", schema.url);
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain("to the records (postgres); they are at migration");
    expect(r.code).toBe(0);
  });

  test("copies every record and reports the counts; the copy reads back the same through the Store interface", async () => {
    const r = keyturn("copy", "--from", join(site.dir, "data"), "--to", schema.url, "--json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const source = await everything(site.composed.store);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: true,
      copied: {
        licenses: 3,
        activations: 2,
        challenges: 1,
        audit: source.audit.length,
        release_controls: 1,
        install_reports: 0,
        known_releases: 1,
        known_releases_baseline: 1,
        record_key_check: 1,
        records_variant: 1,
        admin_tokens: 1,
        events: source.events.length,
        webhook_endpoints: 1,
        webhook_fanout: 1,
        webhook_deliveries: 1,
        webhook_attempts: 1,
      },
    });
    expect(source.audit.length).toBeGreaterThanOrEqual(5);
    expect(source.events.length).toBeGreaterThanOrEqual(1);
    expect(source.licenses.find((l) => l.licensee === "Grace Hopper")).toMatchObject({
      tokenTtl: 3600,
      seatLease: 30 * 86_400_000,
      updatesUntil: Date.parse("2027-01-01T00:00:00Z"),
      features: ["export-pdf", "max-projects=50"],
    });
    expect(source.activations.every((a) => typeof a.tokenExp === "number")).toBe(true);
    expect(source.attempts).toEqual([expect.objectContaining({ attempt: 1, error: "address not allowed" })]);
    const target = await openPostgresStore(schema.url);
    try {
      expect(await everything(target)).toEqual(source);
      // The events move with their numbers, but the target is other records to a mirror: a new epoch.
      const [from, to] = [await site.composed.store.feedPosition(), await target.feedPosition()];
      expect(to.epoch).toMatch(/^[0-9a-f]{24}$/);
      expect(to.epoch).not.toBe(from.epoch);
      expect(to.newest).toBe(from.newest);
      // the admin token authenticates against the new records; the outbox goes on where it stood
      expect((await target.findAdminTokenBySecretHash(sha256Hex(adminToken)))?.name).toBe("moved");
      expect(await target.fanOutEvents(site.clock(), 100, () => "dlv_never")).toBe(0);
      expect((await target.consumeChallenge(nonce, site.clock())).outcome).toBe("consumed");
      expect(await target.recordKnownReleases([{ lane: "alpha/stable/win-x64", version: "1.0.0" }], site.clock())).toEqual([]);
    } finally {
      await target.close();
    }
  });

  test("refuses a target that holds records, changing nothing; --merge brings it up to date", async () => {
    await site.request("POST", "/entitlements/deactivate", { token });
    const refused = keyturn("copy", "--from", join(site.dir, "data"), "--to", schema.url);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("the target already holds 3 licenses, 2 activations, 1 challenges");
    expect(refused.stdout).toBe("");

    const merged = keyturn("copy", "--from", join(site.dir, "data"), "--to", schema.url, "--merge");
    expect(merged.stderr).toBe("");
    expect(merged.code).toBe(0);
    expect(merged.stdout).toMatch(
      /^copied 3 licenses, 2 activations, 1 challenges, \d+ audit lines, 1 admin tokens, 1 webhook endpoints, \d+ events, 1 webhook deliveries from .* to PostgreSQL\n$/,
    );
    const target = await openPostgresStore(schema.url);
    try {
      expect(await everything(target)).toEqual(await everything(site.composed.store));
      const ada = (await target.listLicenses()).find((l) => l.licensee === "Ada Lovelace")!;
      expect(await target.countActiveSeats(ada.id)).toBe(1);
      // events written after the move are numbered after the moved ones, and fanned out
      const lastSeq = (await site.composed.store.listEvents({ after: 0, limit: 100_000 })).at(-1)!.seq;
      await target.appendEvent(newEvent("license.revoked", { license: { id: "lic_x" } }, site.clock()));
      const [latest] = await target.listEvents({ after: lastSeq, limit: 10 });
      expect(latest!.seq).toBeGreaterThan(lastSeq);
      let n = 0;
      await target.fanOutEvents(site.clock(), 100, () => `dlv_after_move${++n}`);
      expect((await target.listDeliveries({ limit: 100 })).map((d) => d.eventId)).toContain(latest!.id);
    } finally {
      await target.close();
    }
  });

  test("wrong invocations exit 2 with the usage line", () => {
    const noFrom = keyturn("copy", "--to", schema.url);
    expect(noFrom.code).toBe(2);
    expect(noFrom.stderr).toContain("--from DATA_DIR is required");
    const notPg = keyturn("copy", "--from", join(site.dir, "data"), "--to", "mysql://x/y");
    expect(notPg.code).toBe(2);
    expect(notPg.stderr).toContain("--to: must be a postgres or postgresql URL");
    const empty = keyturn("copy", "--from", tempDir(), "--to", schema.url);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain(`no keyturn records (${SQLITE_FILE})`);
  });

  test("the source is read as one snapshot: rows written during the copy never arrive half", async () => {
    const dir = tempDir();
    const fixture = openSqliteStore(dir);
    for (let i = 0; i < 1200; i++) {
      const l = license({ issued: i });
      await fixture.createLicense(l);
      await fixture.activate(seat(l.id, { now: i }));
    }
    const into = await freshSchema();
    const target: PostgresStore = await openPostgresStore(into.url);
    // A second connection keeps adding license + activation pairs while the copy runs: read outside
    // one snapshot, the activations would name licenses that were not copied (a foreign-key failure).
    const writerStore = openSqliteStore(dir);
    let done = false;
    let written = 0;
    const writing = (async () => {
      while (!done) {
        const l = license({ issued: 1e6 + written });
        await writerStore.createLicense(l);
        await writerStore.activate(seat(l.id, { now: 1e6 + written }));
        written++;
        await Bun.sleep(0);
      }
    })();
    try {
      const copied = await copySqliteToPostgres(fixture.db, target.sql, { merge: false });
      done = true;
      await writing;
      expect(written).toBeGreaterThan(0);
      expect(copied.licenses).toBe(copied.activations);
      expect(copied.licenses).toBeLessThan(1200 + written);
      expect(copied.licenses).toBeGreaterThanOrEqual(1200);
      const [{ n }] = await target.sql`SELECT count(*)::int AS n FROM activations a LEFT JOIN licenses l ON l.id = a.license_id WHERE l.id IS NULL`;
      expect(n).toBe(0);
    } finally {
      done = true;
      await writing;
      await writerStore.close();
      await fixture.close();
      await target.close();
      await into.drop();
    }
  });
});
