import { afterEach, expect, test } from "bun:test";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { silentLogger } from "../../src/config/log";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { RECORDS_KEY_FILE, RecordSeal } from "../../src/domain/record-seal";
import { WebhookWorker } from "../../src/domain/webhooks/worker";
import type { SqliteStore } from "../../src/store/sqlite";
import { testSite, type TestSite } from "../helpers";
import { startReceiver } from "../webhook-receiver";

// Issue 21, item 13g: idempotency answers (holding licence keys) and webhook secrets were kept in
// clear in the records; a backup or dump gave them away. They are sealed (AES-256-GCM) with
// <keys>/records.key.

let site: TestSite | null = null;
afterEach(async () => {
  await site?.close();
  site = null;
});

const licenseBody = { licensee: "Ada", organization: "AE", plan: "pro", planTitle: "Pro", seats: 1, channels: ["stable"] };

test("a webhook secret is sealed in the records, opened to sign; records.key is made on first need, 0600, beside the signing keys", async () => {
  site = await testSite("alpha", { settings: { "webhook-allow-hosts": "127.0.0.1" } });
  const receiver = startReceiver();
  try {
    const keyFile = join(site.dir, "keys", RECORDS_KEY_FILE);
    const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "seal", scopes: ["admin"] })).secret;
    const added = await site.request("POST", "/admin/webhooks", { token, body: { url: receiver.url, events: ["license.created"] } });
    expect(added.status).toBe(201);
    const { secret, endpoint } = (await added.json()) as { secret: string; endpoint: { id: string } };
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyFile, "utf8").trim(), "base64").length).toBe(32);
    const db = (site.composed.store as SqliteStore).db;
    const stored = (db.query("SELECT secret FROM webhook_endpoints WHERE id = ?").get(endpoint.id) as { secret: string }).secret;
    expect(stored).toStartWith("sealed1:");
    expect(stored).not.toContain(secret.slice(6, 20));

    expect((await site.request("POST", "/admin/licenses", { token, body: licenseBody })).status).toBe(201);
    await new WebhookWorker({
      store: site.composed.store,
      clock: site.clock,
      log: silentLogger,
      destinations: { allowHosts: ["127.0.0.1"] },
      seal: site.composed.services.admin.seal,
    }).tick();
    expect(receiver.received.length).toBe(1);
    // the site's clock is fixed in the past and standardwebhooks checks timestamps against the real one: compare the signature
    const r = receiver.received[0]!;
    const wh = new Webhook(secret);
    const expected = wh.sign(r.headers["webhook-id"]!, new Date(Number(r.headers["webhook-timestamp"]) * 1000), r.body);
    expect(r.headers["webhook-signature"]).toBe(expected);

    // a secret stored before sealing (in clear) still signs
    db.query("UPDATE webhook_endpoints SET secret = ? WHERE id = ?").run(secret, endpoint.id);
    expect((await site.request("POST", "/admin/licenses", { token, body: licenseBody })).status).toBe(201);
    await new WebhookWorker({
      store: site.composed.store,
      clock: site.clock,
      log: silentLogger,
      destinations: { allowHosts: ["127.0.0.1"] },
      seal: site.composed.services.admin.seal,
    }).tick();
    const second = receiver.received[1]!;
    expect(second.headers["webhook-signature"]).toBe(
      wh.sign(second.headers["webhook-id"]!, new Date(Number(second.headers["webhook-timestamp"]) * 1000), second.body),
    );
  } finally {
    await receiver.stop();
  }
});

test("an Idempotency-Key's first answer is sealed (the licence key is not in the records); the replay answers it whole", async () => {
  site = await testSite("alpha");
  const token = (await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "seal", scopes: ["admin"] })).secret;
  const send = () => site!.request("POST", "/admin/licenses", { token, body: licenseBody, headers: { "idempotency-key": "order-42" } });
  const first = (await (await send()).json()) as { key: string; license: { id: string } };
  const replay = (await (await send()).json()) as { key: string; license: { id: string } };
  expect(replay).toEqual(first);
  const db = (site.composed.store as SqliteStore).db;
  const { answer } = db.query("SELECT answer FROM idempotency").get() as { answer: string };
  expect(answer).toStartWith("sealed1:");
  expect(answer).not.toContain(first.key);
  expect(answer).not.toContain(first.key.split("-")[1]!);
  expect(answer).not.toContain(first.license.id);
});

test("a process with another records.key refuses to seal or open, naming the file; a sealed value moved to another row does not open", async () => {
  site = await testSite("alpha");
  const seal = site.composed.services.admin.seal!;
  const sealed = await seal.seal("whsec_secret", "webhook-secret\nwhe_a");
  expect(await seal.open(sealed, "webhook-secret\nwhe_a")).toBe("whsec_secret");
  expect(await seal.open(sealed, "webhook-secret\nwhe_b").catch((e: Error) => e.message)).toContain(RECORDS_KEY_FILE);
  const otherKeys = join(site.dir, "other-keys");
  mkdirSync(otherKeys);
  writeFileSync(join(otherKeys, RECORDS_KEY_FILE), Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"), { mode: 0o600 });
  const other = new RecordSeal(otherKeys, site.composed.store);
  for (const attempt of [other.seal("x", "c"), other.open(sealed, "webhook-secret\nwhe_a")])
    expect(
      await attempt.then(
        () => "ok",
        (e: { code: string; message: string }) => `${e.code}: ${e.message}`,
      ),
    ).toMatch(new RegExp(`^unavailable: .*other-keys/${RECORDS_KEY_FILE} is not the key these records were sealed with`));
});
