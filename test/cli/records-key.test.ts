import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { silentLogger } from "../../src/config/log";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { RECORDS_KEY_FILE, RecordSeal } from "../../src/domain/record-seal";
import { webhookSecretContext } from "../../src/domain/webhooks/signing";
import { WebhookWorker } from "../../src/domain/webhooks/worker";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "../databases";
import { BASE_URL, testSite, type TestSite } from "../helpers";
import { runCli, startServe } from "../processes";
import { startReceiver, type Receiver } from "../webhook-receiver";

// Issue 33, item 6: a missing records.key while sealed records exist made a new, wrong key (webhooks
// then stayed pending for ever); a readable one was not named; it could not be rotated.

if (!PG_URL) announceSkip("test/cli/records-key.test.ts", "KEYTURN_TEST_POSTGRES_URL");

const PREFIX = "sealed1:";
const licenseBody = { licensee: "Ada", organization: "AE", plan: "pro", planTitle: "Pro", seats: 1, channels: ["stable"] };

interface Sealed {
  readonly site: TestSite;
  readonly receiver: Receiver;
  readonly token: string;
  /** The webhook endpoint's secret as given once. */
  readonly secret: string;
  readonly endpointId: string;
  readonly keyFile: string;
  /** keyturn's arguments for these records. */
  readonly args: string[];
  readonly replay: () => Promise<Response>;
}

let open: { sealed: Sealed; schema: TestSchema | null } | null = null;
afterEach(async () => {
  await open?.sealed.receiver.stop();
  await open?.sealed.site.close();
  await open?.schema?.drop();
  open = null;
});

/** A site whose records hold a sealed webhook secret and a sealed Idempotency-Key answer. */
async function sealedSite(backend: "sqlite" | "postgres"): Promise<Sealed> {
  const schema = backend === "postgres" ? await freshSchema() : null;
  const database: Record<string, string> = schema ? { database: schema.url } : {};
  const site = await testSite("alpha", { settings: { ...database, "webhook-allow-hosts": "127.0.0.1" } });
  const receiver = startReceiver();
  open = { sealed: { site, receiver } as Sealed, schema };
  mkdirSync(join(site.dir, "releases"), { recursive: true });
  const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "seal", scopes: ["admin"] })).secret;
  const added = await site.request("POST", "/admin/webhooks", { token, body: { url: receiver.url, events: ["license.created"] } });
  expect(added.status).toBe(201);
  const { secret, endpoint } = (await added.json()) as { secret: string; endpoint: { id: string } };
  const replay = () => site.request("POST", "/admin/licenses", { token, body: licenseBody, headers: { "idempotency-key": "order-42" } });
  expect((await replay()).status).toBe(201);
  const args = [
    "--variant",
    "alpha",
    "--base-url",
    BASE_URL,
    "--data",
    join(site.dir, "data"),
    "--keys",
    join(site.dir, "keys"),
    "--releases",
    join(site.dir, "releases"),
  ];
  const sealed = {
    site,
    receiver,
    token,
    secret,
    endpointId: endpoint.id,
    keyFile: join(site.dir, "keys", RECORDS_KEY_FILE),
    args: schema ? [...args, "--database", schema.url] : args,
    replay,
  };
  open = { sealed, schema };
  expect((await site.composed.store.listSealed(PREFIX)).map((v) => v.kind).sort()).toEqual(["idempotency-answer", "webhook-secret"]);
  return sealed;
}

/** Delivers the outbox with a process of its own (a fresh key read from the file): true when the signature is the endpoint's secret's. */
async function deliversSigned(s: Sealed): Promise<boolean> {
  const before = s.receiver.received.length;
  expect((await s.site.request("POST", "/admin/licenses", { token: s.token, body: licenseBody })).status).toBe(201);
  const seal = new RecordSeal(join(s.site.dir, "keys"), s.site.composed.store);
  await new WebhookWorker({ store: s.site.composed.store, clock: s.site.clock, log: silentLogger, destinations: { allowHosts: ["127.0.0.1"] }, seal }).tick();
  const r = s.receiver.received[before];
  if (!r) return false;
  const signed = new Webhook(s.secret).sign(r.headers["webhook-id"]!, new Date(Number(r.headers["webhook-timestamp"]) * 1000), r.body);
  return r.headers["webhook-signature"] === signed;
}

for (const backend of ["sqlite", "postgres"] as const) {
  describe.skipIf(backend === "postgres" && !PG_URL)(backend, () => {
    test("a missing records.key beside sealed records refuses to start, saying what to restore, and makes no new key; restored, it opens them", async () => {
      const s = await sealedSite(backend);
      renameSync(s.keyFile, `${s.keyFile}.away`);
      const serve = await runCli(["serve", ...s.args]);
      expect(serve.code).toBe(1);
      expect(serve.stderr).toMatch(
        new RegExp(
          `^keyturn: ${s.keyFile.replaceAll(".", "\\.")} is missing, and the records hold values sealed with it \\(webhook endpoint ${s.endpointId}'s secret, Idempotency-Key answers\\): ` +
            "restore records\\.key from the backup of the keys directory, or copy it from another process serving these records; a new key would open none of them \\(unavailable\\)\n$",
        ),
      );
      // Nor does a command that seals make one.
      const seal = new RecordSeal(join(s.site.dir, "keys"), s.site.composed.store);
      expect(await seal.seal("x", "c").catch((e: Error) => e.message)).toContain("is missing, and the records hold values sealed with it");
      expect(existsSync(s.keyFile)).toBe(false);

      renameSync(`${s.keyFile}.away`, s.keyFile);
      expect(await new RecordSeal(join(s.site.dir, "keys"), s.site.composed.store).verify()).toEqual([]);
      expect(await deliversSigned(s)).toBe(true);
    }, 60_000);

    test("a records.key others can read (0644) is warned about at start, as the signing keys are", async () => {
      const s = await sealedSite(backend);
      chmodSync(s.keyFile, 0o644);
      const serve = await startServe(s.args);
      try {
        const warning = `key file ${s.keyFile} is open to every user (mode 0644): make it 0600 owned by the service user, or 0640 owned by root with the service's group`;
        for (let i = 0; i < 100 && !serve.stderr().includes(warning); i++) await Bun.sleep(20);
        const lines = serve
          .stderr()
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { level: string; msg: string });
        expect(lines.filter((l) => l.msg.includes(RECORDS_KEY_FILE))).toEqual([expect.objectContaining({ level: "warn", msg: warning })]);
      } finally {
        expect(await serve.stop()).toBe(0);
      }
      chmodSync(s.keyFile, 0o600);
      expect(await new RecordSeal(join(s.site.dir, "keys"), s.site.composed.store).verify()).toEqual([]);
    }, 60_000);

    test("keys rotate-records-key re-seals every sealed value with a new key, keeping the old file as a named backup; secrets still sign and answers replay", async () => {
      const s = await sealedSite(backend);
      const oldKey = readFileSync(s.keyFile, "utf8");
      const before = await s.site.composed.store.listSealed(PREFIX);
      const firstAnswer = await (await s.replay()).json();

      const r = await runCli(["keys", "rotate-records-key", ...s.args]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const backups = readdirSync(join(s.site.dir, "keys")).filter((n) => n.startsWith(`${RECORDS_KEY_FILE}.replaced-`));
      expect(backups).toEqual([expect.stringMatching(/^records\.key\.replaced-\d{8}T\d{6}Z$/)]);
      const backup = join(s.site.dir, "keys", backups[0]!);
      expect(r.stdout).toBe(
        `re-sealed 2 values in the records (${backend}) with a new ${s.keyFile}\n` +
          `the old key is kept as ${backup}: it opens only backups of the records taken before now\n` +
          `copy ${s.keyFile} to the keys directory of every other process serving these records: until then they refuse to seal or open secrets\n`,
      );
      expect(readFileSync(backup, "utf8")).toBe(oldKey);
      expect(statSync(backup).mode & 0o777).toBe(0o600);
      expect(statSync(s.keyFile).mode & 0o777).toBe(0o600);
      expect(readFileSync(s.keyFile, "utf8")).not.toBe(oldKey);

      // Every value is sealed anew, in the same rows.
      const after = await s.site.composed.store.listSealed(PREFIX);
      expect(after.map(({ value: _, ...row }) => row)).toEqual(before.map(({ value: _, ...row }) => row));
      for (const [i, v] of after.entries()) expect(v.value).not.toBe(before[i]!.value);

      // The running site (it holds the old key) reads the new file when a value does not open; a fresh process opens with the new key.
      expect(await (await s.replay()).json()).toEqual(firstAnswer);
      expect(await deliversSigned(s)).toBe(true);
      // The running site seals with the new key too (the records' check value told it of the rotation).
      const added = await s.site.request("POST", "/admin/webhooks", { token: s.token, body: { url: s.receiver.url, events: ["license.revoked"] } });
      const { secret, endpoint } = (await added.json()) as { secret: string; endpoint: { id: string } };
      const stored = (await s.site.composed.store.listSealed(PREFIX)).find((v) => v.kind === "webhook-secret" && v.endpointId === endpoint.id)!;
      expect(await new RecordSeal(join(s.site.dir, "keys"), s.site.composed.store).open(stored.value, webhookSecretContext(endpoint.id))).toBe(secret);
      // The old key opens none of it now.
      const oldDir = join(s.site.dir, "old-keys");
      mkdirSync(oldDir);
      writeFileSync(join(oldDir, RECORDS_KEY_FILE), oldKey, { mode: 0o600 });
      expect(await new RecordSeal(oldDir, s.site.composed.store).verify().catch((e: Error) => e.message)).toContain(
        "is not the key these records were sealed with",
      );
    }, 60_000);

    test("the re-sealing is one transaction: a value changed meanwhile leaves every value and the check as they were", async () => {
      const s = await sealedSite(backend);
      const store = s.site.composed.store;
      const before = await store.listSealed(PREFIX);
      const check = await store.readRecordKeyCheck();
      const changes = before.map((v, i) => ({ ...v, value: i === 1 ? `${PREFIX}changed.meanwhile` : v.value, after: `${PREFIX}new${i}` }));
      expect(await store.replaceSealed(PREFIX, changes, { before: check, after: `${PREFIX}check` })).toBe(false);
      // A value sealed meanwhile (not in the list) fails it too.
      expect(
        await store.replaceSealed(
          PREFIX,
          changes.slice(0, 1).map((c) => ({ ...c, value: before[0]!.value })),
          { before: check, after: `${PREFIX}check` },
        ),
      ).toBe(false);
      expect(await store.listSealed(PREFIX)).toEqual(before);
      expect(await store.readRecordKeyCheck()).toBe(check);
      expect(await deliversSigned(s)).toBe(true);
    }, 60_000);
  });
}
