import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { newId } from "../../src/domain/ids";
import { pruneRecords } from "../../src/domain/retention";
import { openPostgresStore } from "../../src/store/postgres";
import { generateKeyFiles } from "../../src/domain/keys";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "../databases";
import { device, tempDir } from "../helpers";
import { ReleaseTree, type WrittenRelease } from "../release-tree";
import { makeCertificate, startServe, type ServeProcess } from "../serve-process";
import { readFileSync } from "node:fs";

// Issue 21's promise, end to end with real processes and real HTTP: the mirror keeps refusing what
// the vendor revoked across a restore from backup, a move of the records to PostgreSQL (keyturn
// copy, which carries no events: the numbering starts again) and a retention gap (events pruned
// while the mirror was away), and it sees what the vendor revokes after each, though the vendor's
// new seqs are below its cursor.

if (!PG_URL) announceSkip("test/mirror/records-replaced.test.ts", "KEYTURN_TEST_POSTGRES_URL");

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const POLL_MS = 200;
const kid = VARIANTS.alpha.defaultLicenseKid;

describe.skipIf(!PG_URL)("a mirror across records replaced at its vendor", () => {
  const vendorDir = tempDir("keyturn-vendor-");
  const mirrorDir = tempDir("keyturn-mirror-");
  let tree: ReleaseTree;
  let release: WrittenRelease;
  let vendor: ServeProcess;
  let mirror: ServeProcess;
  let schema: TestSchema;
  let port: number;
  let vendorUrl: string;
  let tls: { cert: string; key: string };
  /** Where the vendor's records are: its SQLite file, then (after the copy) the PostgreSQL schema. */
  let database: string[] = [];

  const cli = (...args: string[]) =>
    execFileSync(process.execPath, [MAIN, ...args, "--variant", "alpha", "--data", join(vendorDir, "data"), ...database], { encoding: "utf8" });
  const newLicense = (name: string) =>
    JSON.parse(
      cli(
        "license",
        "create",
        "--licensee",
        name,
        "--organization",
        "O",
        "--plan",
        "pro",
        "--plan-title",
        "Pro",
        "--seats",
        "3",
        "--channels",
        "stable",
        "--json",
      ),
    ) as { key: string; id: string };
  const manifest = () => `/api/v1/updates/${release.lane}/alpha-update.json`;

  async function activate(key: string): Promise<string> {
    const res = await fetch(`${vendorUrl}/api/v1/licenses/activate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key, device: device("alpha") }),
      tls: { ca: readFileSync(tls.cert, "utf8") },
    } as RequestInit);
    expect(res.status).toBe(200);
    return ((await res.json()) as { token: string }).token;
  }

  async function mirrorSays(token: string): Promise<string | null> {
    const res = await fetch(`${mirror.url}${manifest()}`, { headers: { authorization: `Bearer ${token}` } });
    return res.status === 200 ? null : ((await res.json()) as { error: string }).error;
  }

  /** Polls until the mirror answers `wanted` for `token` (null: success). */
  async function until(token: string, wanted: string | null, ms = 8000): Promise<void> {
    const start = performance.now();
    for (;;) {
      const got = await mirrorSays(token);
      if (got === wanted) return;
      if (performance.now() - start > ms) throw new Error(`the mirror still answers ${got}, not ${wanted}`);
      await Bun.sleep(25);
    }
  }

  const startVendor = (extra: string[] = []) =>
    startServe(
      "alpha",
      [
        "--base-url",
        vendorUrl,
        "--port",
        String(port),
        "--tls-cert",
        tls.cert,
        "--tls-key",
        tls.key,
        "--releases",
        tree.root,
        "--keys",
        join(vendorDir, "keys"),
        ...database,
        ...extra,
      ],
      vendorDir,
    );
  const startMirror = (token: string) =>
    startServe(
      "alpha",
      [
        "--base-url",
        "https://mirror.example.com",
        "--keys",
        join(mirrorDir, "keys"),
        "--releases",
        tree.root,
        "--mirror-of",
        vendorUrl,
        "--mirror-poll",
        `${POLL_MS}ms`,
      ],
      mirrorDir,
      {
        KEYTURN_MIRROR_TOKEN: token,
        NODE_EXTRA_CA_CERTS: tls.cert,
      },
    );
  async function stop(p: ServeProcess): Promise<void> {
    p.proc.kill("SIGTERM");
    expect(await p.proc.exited).toBe(0);
  }
  const feedToken = () => (JSON.parse(cli("admin-token", "create", "--name", "mirror", "--scopes", "feed:read", "--json")) as { secret: string }).secret;
  const health = async () => ((await (await fetch(`${mirror.url}/api/v1/health`)).json()) as { mirror: { cursor: string; problem: string | null } }).mirror;

  beforeAll(async () => {
    schema = await freshSchema();
    tree = new ReleaseTree("alpha");
    release = tree.add({ version: "2.0.0" });
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    port = probe.port;
    probe.stop(true);
    vendorUrl = `https://127.0.0.1:${port}`;
    tls = makeCertificate(vendorDir, "vendor");
    generateKeyFiles(join(vendorDir, "keys"), kid);
    copyFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), join(vendorDir, "keys", `${tree.kid}.pub.pem`));
    mkdirSync(join(mirrorDir, "keys"), { recursive: true });
    copyFileSync(join(vendorDir, "keys", `${kid}.pub.pem`), join(mirrorDir, "keys", `${kid}.pub.pem`));
    copyFileSync(join(tree.keysDir, `${tree.kid}.pub.pem`), join(mirrorDir, "keys", `${tree.kid}.pub.pem`));
    vendor = await startVendor();
    mirror = await startMirror(feedToken());
  }, 30_000);
  afterAll(async () => {
    await mirror?.cleanup();
    await vendor?.cleanup();
    rmSync(mirrorDir, { recursive: true, force: true });
    tree?.remove();
    await schema?.drop();
  });

  test("a restore, a copy to PostgreSQL and a retention gap: what was revoked stays refused, what is revoked after is refused", async () => {
    // Before anything is replaced: L1 revoked reaches the mirror.
    const l1 = newLicense("One");
    const t1 = await activate(l1.key);
    const l2 = newLicense("Two");
    const t2 = await activate(l2.key);
    const l3 = newLicense("Three");
    const t3 = await activate(l3.key);
    await until(t1, null);
    cli("license", "revoke", l1.id);
    await until(t1, "license_revoked");

    // A backup, then more revocations the mirror learns (its cursor moves past the backup's newest).
    const backup = join(vendorDir, "backup.sqlite");
    cli("backup", "--to", backup);
    cli("license", "revoke", l3.id);
    for (let i = 0; i < 4; i++) cli("license", "reinstate", l3.id), cli("license", "revoke", l3.id);
    await until(t3, "license_revoked");
    const beforeRestore = (await health()).cursor;

    // Restored: the vendor's records are the backup's (L3 never revoked there); its numbering is behind the mirror's cursor.
    await stop(vendor);
    const file = join(vendorDir, "data", "keyturn.sqlite");
    for (const suffix of ["-wal", "-shm"]) rmSync(file + suffix, { force: true });
    renameSync(backup, file);
    vendor = await startVendor();
    cli("license", "revoke", l2.id); // a seq below the mirror's cursor, under the backup's own epoch
    await until(t2, "license_revoked");
    expect(await mirrorSays(t1)).toBe("license_revoked");
    await until(t3, null); // the vendor's records no longer revoke it: the mirror follows them
    expect((await health()).cursor).not.toBe(beforeRestore);

    // Moved to PostgreSQL: keyturn copy carries no events, and gives the records a new epoch.
    await stop(vendor);
    execFileSync(process.execPath, [MAIN, "copy", "--from", join(vendorDir, "data"), "--to", schema.url], { stdio: "ignore" });
    database = ["--database", schema.url];
    vendor = await startVendor();
    // Admin tokens are not copied (their secrets are shown once): the mirror gets a new one.
    await stop(mirror);
    mirror = await startMirror(feedToken());
    const l4 = newLicense("Four");
    const t4 = await activate(l4.key);
    cli("license", "revoke", l4.id); // seq 1 or so of the new records
    await until(t4, "license_revoked");
    expect(await mirrorSays(t1)).toBe("license_revoked");
    expect(await mirrorSays(t2)).toBe("license_revoked");
    expect(await mirrorSays(t3)).toBeNull();

    // A retention gap: the mirror is away while a revocation's event is made and then pruned.
    await stop(mirror);
    const l5 = newLicense("Five");
    const t5 = await activate(l5.key);
    cli("license", "revoke", l5.id);
    cli("license", "revoke", l3.id);
    cli("license", "reinstate", l3.id);
    // The retention's pruning with the test's clock, a minute ahead, instead of a sleep past a
    // short --audit-retention: the events are fanned out (pruning never passes the fan-out) and
    // pruned as the vendor's own pruning would, on its records, while it is stopped.
    await stop(vendor);
    const ahead = () => Date.now() + 60_000;
    const records = await openPostgresStore(schema.url);
    while ((await records.fanOutEvents(ahead(), 1000, () => newId("dlv", ahead()))) > 0);
    const pruned = await pruneRecords(records, ahead, 1);
    await records.close();
    expect(pruned.events).toBeGreaterThan(0);
    vendor = await startVendor();
    mirror = await startMirror(feedToken());
    await until(t5, "license_revoked");
    for (const t of [t1, t2, t4]) expect(await mirrorSays(t)).toBe("license_revoked");
    expect(await mirrorSays(t3)).toBeNull();
    expect((await health()).problem).toBeNull();
    expect(mirror.lines.some((l) => l.includes("mirror resynchronised from the vendor's snapshot") && l.includes('"reason":"gap"'))).toBe(true);
  }, 90_000);
});
