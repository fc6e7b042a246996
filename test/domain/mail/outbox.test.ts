import { afterEach, describe, expect, test } from "bun:test";
import { createLogger } from "../../../src/config/log";
import { CLI_CALLER } from "../../../src/domain/admin/deps";
import { createAdminToken } from "../../../src/domain/admin/tokens";
import { SqliteStore } from "../../../src/store/sqlite";
import { MailWorker } from "../../../src/domain/mail/worker";
import { RETRY_DELAYS_MS } from "../../../src/domain/webhooks/worker";
import { device, testSite, type TestSite } from "../../helpers";
import { makePrivateCa } from "../../private-ca";
import { startSmtpReceiver, type SmtpReceiver } from "../../smtp-receiver";

/**
 * Issue 30, e-mail: "licence created (the key, the portal link, the download link), key reissued,
 * licence expiring ... soon (configurable days ahead) ... Mail goes through a durable outbox with
 * retries like webhooks ... Without SMTP nothing is mailed and the key is shown as today." Mail is
 * sent to a real SMTP server on loopback and read back as it arrived.
 */
const open: Array<{ close(): Promise<void> } | { stop(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await ("close" in o ? o.close() : o.stop());
});

async function mailSite(smtp: SmtpReceiver | null, settings: Record<string, string> = {}, tables?: Record<string, unknown>) {
  const logLines: string[] = [];
  const log = createLogger("json", "debug", (l) => logLines.push(l));
  const site = await testSite("alpha", {
    log,
    settings: smtp ? { "smtp-url": smtp.url, "mail-from": "Example Software <licences@example.com>", "mail-timeout": "5s", ...settings } : settings,
    ...(tables ? { tables } : {}),
  });
  open.push(site);
  const admin = site.composed.services.admin;
  const worker = admin.mail
    ? new MailWorker({ store: site.composed.store, mail: admin.mail.d.store, outbox: admin.mail, config: site.composed.config.mail!, clock: site.clock, log })
    : null;
  if (worker) open.push(worker);
  const token = (await createAdminToken(admin, CLI_CALLER, { name: "shop", scopes: ["admin"] })).secret;
  const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    site.request("POST", "/admin/licenses", {
      token,
      headers,
      body: { licensee: "Ada Lovelace", plan: "pro", planTitle: "Professional", seats: 2, channels: ["stable"], ...body },
    });
  return { site, worker, token, create, logLines };
}

/** The records as they are on disk (the same connection the site writes with). */
const rows = (site: TestSite) => {
  const db = (site.composed.store as SqliteStore).db;
  return { query: (sql: string) => db.query(sql), close: () => undefined };
};

describe("licence created", () => {
  test("the key, the portal link and the licence reach the holder's address; the outbox keeps the body sealed", async () => {
    const smtp = await startSmtpReceiver();
    open.push(smtp);
    const { site, worker, create, logLines } = await mailSite(smtp);
    const res = await create({ email: "ada@example.org" });
    expect(res.status).toBe(201);
    const { key, license } = (await res.json()) as { key: string; license: { id: string } };
    // Written with the licence, before any worker ran: the outbox holds it, sealed.
    const db = rows(site);
    const row = db.query("SELECT * FROM mail_outbox").get() as Record<string, unknown>;
    db.close();
    expect(row).toMatchObject({ kind: "license-created", license_id: license.id, recipient: "ada@example.org", status: "pending" });
    expect(String(row.body)).toStartWith("sealed1:");
    expect(String(row.body)).not.toContain(key);

    expect(await worker!.tick()).toBe(1);
    const [got] = await smtp.waitFor(1);
    expect(got!.envelopeTo).toEqual(["ada@example.org"]);
    expect(got!.mail.from?.text).toBe('"Example Software" <licences@example.com>');
    expect(got!.mail.subject).toBe("Your licence key for licenses.example.com");
    expect(got!.mail.text).toContain(key);
    expect(got!.mail.text).toContain("https://licenses.example.com/portal/");
    expect(got!.mail.html).toContain(key);
    expect(got!.mail.messageId).toBe(`<${row.id}@licenses.example.com>`);
    // The key it carries works.
    const activated = await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } });
    expect(activated.status).toBe(200);
    // Sent once: the next round finds nothing.
    expect(await worker!.tick()).toBe(0);
    expect(smtp.received).toHaveLength(1);
    expect(logLines.some((l) => l.includes('"mail sent"'))).toBe(true);
    expect(logLines.join("\n")).not.toContain(key);
  });

  test("a licence without an address, or a site without --smtp-url, mails nothing; the key is answered as before", async () => {
    const smtp = await startSmtpReceiver();
    open.push(smtp);
    const withSmtp = await mailSite(smtp);
    expect((await withSmtp.create({})).status).toBe(201);
    expect(await withSmtp.worker!.tick()).toBe(0);

    const without = await mailSite(null);
    expect(without.site.composed.services.admin.mail).toBeUndefined();
    const res = await without.create({ email: "bob@example.org" });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { key: string }).key).toMatch(/^AL-/);
    const db = rows(without.site);
    expect((db.query("SELECT count(*) AS n FROM mail_outbox").get() as { n: number }).n).toBe(0);
    db.close();
    expect(smtp.received).toHaveLength(0);
  });

  test("a replayed Idempotency-Key (a shop's retry) mails nothing twice", async () => {
    const smtp = await startSmtpReceiver();
    open.push(smtp);
    const { worker, create } = await mailSite(smtp);
    const first = await create({ email: "ada@example.org" }, { "idempotency-key": "order-1001" });
    const again = await create({ email: "ada@example.org" }, { "idempotency-key": "order-1001" });
    expect(first.status).toBe(201);
    expect(((await again.json()) as { key: string }).key).toBe(((await first.json()) as { key: string }).key);
    await worker!.tick();
    expect(smtp.received).toHaveLength(1);
  });

  test("the command line's licence create mails too (the outbox is written by licence creation, not by a caller)", async () => {
    const smtp = await startSmtpReceiver();
    open.push(smtp);
    const { site, worker } = await mailSite(smtp);
    const { createLicense } = await import("../../../src/domain/admin/licenses");
    const { key } = await createLicense(site.composed.services.admin, CLI_CALLER, {
      licensee: "Grace Hopper",
      plan: "pro",
      seats: 1,
      channels: ["stable"],
      email: "grace@example.org",
    });
    await worker!.tick();
    expect(smtp.lastTo("grace@example.org").mail.text).toContain(key);
  });

  test("names from the records are escaped in the HTML and kept to one line in the text", async () => {
    const smtp = await startSmtpReceiver();
    open.push(smtp);
    const { worker, create } = await mailSite(smtp);
    expect((await create({ email: "eve@example.org", licensee: 'Eve <img src=x onerror="alert(1)">' })).status).toBe(201);
    await worker!.tick();
    const got = smtp.lastTo("eve@example.org").mail;
    expect(got.html).toContain("Eve &lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(got.html).not.toContain("<img");
    expect(got.text).toContain('Hello Eve <img src=x onerror="alert(1)">,');
  });
});

describe("retries and refusals", () => {
  test("a 4xx answer is tried again on the webhooks' schedule; a 5xx fails it for good", async () => {
    const smtp = await startSmtpReceiver();
    open.push(smtp);
    const { site, worker, create } = await mailSite(smtp);
    smtp.mode = "temporary";
    await create({ email: "ada@example.org" });
    expect(await worker!.tick()).toBe(1);
    const mailStore = site.composed.services.admin.mail!.d.store;
    let [m] = await mailStore.listMail({ limit: 10 });
    expect(m).toMatchObject({ status: "pending", attempts: 1 });
    expect(m!.lastError).toStartWith("451");
    expect(m!.nextAttempt).toBe(site.clock() + RETRY_DELAYS_MS[0]);
    expect(await worker!.tick()).toBe(0); // not due yet
    smtp.mode = "ok";
    site.clock.advance(RETRY_DELAYS_MS[0]);
    expect(await worker!.tick()).toBe(1);
    [m] = await mailStore.listMail({ limit: 10 });
    expect(m).toMatchObject({ status: "sent", attempts: 2 });
    expect(smtp.received).toHaveLength(1);

    smtp.mode = "permanent";
    await create({ email: "nobody@example.org" });
    await worker!.tick();
    [m] = await mailStore.listMail({ limit: 1 });
    expect(m).toMatchObject({ status: "failed", attempts: 1, recipient: "nobody@example.org" });
    expect(m!.lastError).toStartWith("550");
  });

  test("an SMTP server that cannot be reached leaves the mail pending, never lost", async () => {
    const smtp = await startSmtpReceiver();
    const url = smtp.url;
    await smtp.stop();
    const { site, worker, create } = await mailSite({ url } as SmtpReceiver);
    await create({ email: "ada@example.org" });
    await worker!.tick();
    const [m] = await site.composed.services.admin.mail!.d.store.listMail({ limit: 1 });
    expect(m).toMatchObject({ status: "pending", attempts: 1 });
  });
});

test("key reissued: the new key is mailed to the licence's address, and it activates", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker, create, token } = await mailSite(smtp);
  const { license } = (await (await create({ email: "ada@example.org" })).json()) as { license: { id: string } };
  await worker!.tick();
  const res = await site.request("POST", `/admin/licenses/${license.id}/rekey`, { token });
  expect(res.status).toBe(200);
  const { key } = (await res.json()) as { key: string };
  await worker!.tick();
  const got = smtp.received[1]!.mail;
  expect(got.subject).toBe("Your new licence key for licenses.example.com");
  expect(got.text).toContain(key);
  expect((await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).status).toBe(200);
});

test("licence expiring soon: one reminder, --mail-reminder-days ahead, however often the worker looks", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker, create } = await mailSite(smtp, { "mail-reminder-days": "10" });
  const day = 86_400_000;
  await create({ email: "soon@example.org", expires: new Date(site.clock() + 9 * day).toISOString() });
  await create({ email: "later@example.org", expires: new Date(site.clock() + 30 * day).toISOString() });
  // Sold as a subscription through a payment bridge: its end moves with each payment, so no
  // reminder; once the subscription ended, its end is final and it is reminded.
  await create({ email: "renewing@example.org", expires: new Date(site.clock() + 8 * day).toISOString(), metadata: { bridge_subscription: "sub_1" } });
  await create({
    email: "cancelled@example.org",
    expires: new Date(site.clock() + 7 * day).toISOString(),
    metadata: { bridge_subscription: "sub_2", bridge_subscription_ended: "2026-01-01T00:00:00+00:00" },
  });
  await worker!.tick();
  const subjects = smtp.received.map((r) => `${r.envelopeTo[0]} ${r.mail.subject}`);
  const dayText = new Date(site.clock() + 9 * day).toISOString().slice(0, 10);
  const cancelledDay = new Date(site.clock() + 7 * day).toISOString().slice(0, 10);
  expect(subjects.filter((s) => s.includes("ends on")).sort()).toEqual([
    `cancelled@example.org Your licence for licenses.example.com ends on ${cancelledDay}`,
    `soon@example.org Your licence for licenses.example.com ends on ${dayText}`,
  ]);
  site.clock.advance(2 * 3600_000);
  await worker!.tick();
  expect(smtp.received.filter((r) => r.mail.subject?.includes("ends on"))).toHaveLength(2);
});

test("trial ending: a trial started with an address is told of its end as a trial, once; one without an address mails nothing", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker } = await mailSite(
    smtp,
    { "mail-reminder-days": "10", "trial-plan": "eval", "trial-length": "14d" },
    { plans: { eval: { title: "Evaluation", channels: ["stable"] } } },
  );
  const day = 86_400_000;
  const started = site.clock();
  const bad = await site.request("POST", "/trials/start", { body: { device: device("alpha"), email: "not an address" } });
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { error: string }).error).toBe("invalid_request");
  expect((await site.request("POST", "/trials/start", { body: { device: device("alpha"), email: "eve@example.org" } })).status).toBe(200);
  expect((await site.request("POST", "/trials/start", { body: { device: device("alpha") } })).status).toBe(200);
  await worker!.tick();
  expect(smtp.received).toHaveLength(0);
  site.clock.advance(5 * day);
  await worker!.tick();
  const dayText = new Date(started + 14 * day).toISOString().slice(0, 10);
  expect(smtp.received.map((r) => `${r.envelopeTo[0]} ${r.mail.subject}`)).toEqual([`eve@example.org Your trial of licenses.example.com ends on ${dayText}`]);
  expect(smtp.received[0]!.mail.text).toContain("a licence key activated on the same computer takes over from the trial");
  // No portal link: the portal does not reach a trial through the address it was started with.
  expect(smtp.received[0]!.mail.text).not.toContain("/portal");
  const [m] = await site.composed.services.admin.mail!.d.store.listMail({ limit: 5 });
  expect(m).toMatchObject({ kind: "trial-ending", status: "sent" });
  site.clock.advance(2 * 3600_000);
  await worker!.tick();
  expect(smtp.received).toHaveLength(1);
});

test("smtps:// with the server's certificate authority from --smtp-ca", async () => {
  const { tempDir } = await import("../../helpers");
  const dir = tempDir("keyturn-smtp-ca-");
  const ca = makePrivateCa(dir);
  const smtp = await startSmtpReceiver({ secure: true, tls: { key: await Bun.file(ca.key).text(), cert: await Bun.file(ca.cert).text() } });
  open.push(smtp);
  const { worker, create } = await mailSite(smtp, { "smtp-ca": ca.ca });
  await create({ email: "ada@example.org" });
  await worker!.tick();
  expect(smtp.received).toHaveLength(1);
  expect(smtp.received[0]!.secure).toBe(true);
});

test("smtp:// upgrades with STARTTLS when the server offers it (the certificate checked against --smtp-ca)", async () => {
  const { tempDir } = await import("../../helpers");
  const ca = makePrivateCa(tempDir("keyturn-smtp-starttls-"));
  const smtp = await startSmtpReceiver({ tls: { key: await Bun.file(ca.key).text(), cert: await Bun.file(ca.cert).text() } });
  open.push(smtp);
  const trusting = await mailSite(smtp, { "smtp-ca": ca.ca });
  await trusting.create({ email: "ada@example.org" });
  await trusting.worker!.tick();
  expect(smtp.received.map((r) => r.secure)).toEqual([true]);
  // Without the CA the server's certificate is not trusted: nothing is sent in clear instead.
  const doubting = await mailSite(smtp);
  await doubting.create({ email: "bob@example.org" });
  await doubting.worker!.tick();
  expect(smtp.received).toHaveLength(1);
  const [m] = await doubting.site.composed.services.admin.mail!.d.store.listMail({ limit: 1 });
  expect(m).toMatchObject({ status: "pending", attempts: 1 });
});

test("sent mail is kept (sealed) for the audit retention, then deleted; a pending one is never", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker, create } = await mailSite(smtp, { "mail-reminder-days": "0" });
  await create({ email: "ada@example.org" });
  await worker!.tick();
  smtp.mode = "temporary";
  await create({ email: "bob@example.org" });
  await worker!.tick();
  const store = site.composed.services.admin.mail!.d.store;
  site.clock.advance(91 * 86_400_000);
  await worker!.tick();
  expect((await store.listMail({ limit: 10 })).map((m) => [m.recipient, m.status])).toEqual([["bob@example.org", "pending"]]);
});

test("a rotation of records.key re-seals the outbox's mail: a mail written before it is sent after it", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker, create } = await mailSite(smtp);
  const { key } = (await (await create({ email: "ada@example.org" })).json()) as { key: string };
  const store = site.composed.services.admin.mail!.d.store;
  const [before] = await store.listMail({ limit: 1 });
  const { resealed } = await site.composed.services.admin.seal!.rotate(site.clock());
  expect(resealed).toBeGreaterThanOrEqual(1);
  const [after] = await store.listMail({ limit: 1 });
  expect(after!.body).not.toBe(before!.body);
  await worker!.tick();
  expect(smtp.lastTo("ada@example.org").mail.text).toContain(key);
});

test("updates window ending soon: one reminder, --mail-reminder-days ahead; none when the licence ends first", async () => {
  const smtp = await startSmtpReceiver();
  open.push(smtp);
  const { site, worker, create } = await mailSite(smtp, { "mail-reminder-days": "10" });
  const day = 86_400_000;
  const at = (days: number) => new Date(site.clock() + days * day).toISOString();
  for (const body of [
    { email: "window@example.org", updatesUntil: at(5) },
    { email: "ends-first@example.org", updatesUntil: at(5), expires: at(4) },
    { email: "far@example.org", updatesUntil: at(40) },
    // A yearly maintenance subscription through a payment bridge: each payment moves the window;
    // once it was cancelled, the window's end is final and reminded.
    { email: "subscribed@example.org", updatesUntil: at(5), metadata: { bridge_subscription: "sub_1" } },
    { email: "cancelled@example.org", updatesUntil: at(5), metadata: { bridge_subscription: "sub_2", bridge_subscription_ended: "2026-01-01T00:00:00+00:00" } },
  ])
    expect((await create(body)).status).toBe(201);
  await worker!.tick();
  site.clock.advance(2 * 3600_000);
  await worker!.tick();
  const windows = smtp.received.filter((r) => r.mail.subject?.startsWith("Your updates"));
  expect(windows.map((r) => r.envelopeTo[0]).sort()).toEqual(["cancelled@example.org", "window@example.org"]);
  expect(windows[0]!.mail.subject).toBe(`Your updates for licenses.example.com end on ${at(5).slice(0, 10)}`);
  expect(windows[0]!.mail.text).toContain("The program keeps working");
  // The licence-created mail names the window too.
  expect(smtp.lastTo("far@example.org").mail.text).toContain(`with updates released until ${at(40).slice(0, 10)}`);
});

test("the SMTP login (--smtp-username, --smtp-password: KEYTURN_SMTP_* in the environment) is used; refused, the mail waits for it to be put right", async () => {
  const smtp = await startSmtpReceiver({ auth: { user: "licences", pass: "s3cret" } });
  open.push(smtp);
  const good = await mailSite(smtp, { "smtp-username": "licences", "smtp-password": "s3cret" });
  await good.create({ email: "ada@example.org" });
  await good.worker!.tick();
  expect(smtp.received).toHaveLength(1);
  expect(good.logLines.join("\n")).not.toContain("s3cret");

  const bad = await mailSite(smtp, { "smtp-username": "licences", "smtp-password": "wrong" });
  await bad.create({ email: "bob@example.org" });
  await bad.worker!.tick();
  const [m] = await bad.site.composed.services.admin.mail!.d.store.listMail({ limit: 1 });
  expect(m).toMatchObject({ status: "pending", attempts: 1 });
  expect(m!.lastError).toStartWith("535");
  expect(smtp.received).toHaveLength(1);
});
