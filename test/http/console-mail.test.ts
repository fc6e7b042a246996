import { afterEach, beforeEach, expect, test } from "bun:test";
import { CLI_CALLER, type Scope } from "../../src/domain/admin/deps";
import { createLicense } from "../../src/domain/admin/licenses";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { MailWorker } from "../../src/domain/mail/worker";
import { silentLogger } from "../../src/config/log";
import { BASE_URL, testSite, type TestSite } from "../helpers";
import { startSmtpReceiver, type SmtpReceiver } from "../smtp-receiver";

// Issue 30: "the console shows what was sent and lets support resend" (audited).
const ORIGIN = new URL(BASE_URL).origin;
let site: TestSite;
let smtp: SmtpReceiver;
let worker: MailWorker;

beforeEach(async () => {
  smtp = await startSmtpReceiver();
  site = await testSite("alpha", { settings: { "smtp-url": smtp.url, "mail-from": "licences@example.com" } });
  const mail = site.composed.services.admin.mail!;
  worker = new MailWorker({
    store: site.composed.store,
    mail: mail.d.store,
    outbox: mail,
    config: site.composed.config.mail!,
    clock: site.clock,
    log: silentLogger,
  });
});
afterEach(async () => {
  await worker.stop();
  await site.close();
  await smtp.stop();
});

interface Browser {
  cookie: string;
  csrf: string;
  tokenId: string;
}

const send = (who: Browser | null, method: string, path: string, form?: Record<string, string>) =>
  site.app.handle(
    new Request(`${ORIGIN}${path}`, {
      method,
      body: form ? new URLSearchParams(form).toString() : undefined,
      headers: { ...(form ? { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN } : {}), ...(who ? { cookie: who.cookie } : {}) },
    }),
  );

async function signIn(scopes: Scope[]): Promise<Browser> {
  const { token, secret } = await createAdminToken(site.composed.services.admin, CLI_CALLER, { name: "support", scopes });
  const r = await send(null, "POST", "/console/sign-in", { token: secret });
  const who = { cookie: r.headers.get("set-cookie")!.split(";")[0]!, csrf: "", tokenId: token.id };
  who.csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await (await send(who, "GET", "/console/mail")).text())![1]!;
  return who;
}

test("the mail page lists what was sent (never the text); support sends one again, audited, as a new mail", async () => {
  const { key, license } = await createLicense(site.composed.services.admin, CLI_CALLER, {
    licensee: "Ada",
    plan: "pro",
    seats: 1,
    channels: ["stable"],
    email: "ada@example.org",
  });
  await worker.tick();
  const support = await signIn(["licenses:read", "licenses:write"]);
  const page = await (await send(support, "GET", "/console/mail")).text();
  expect(page).toContain("ada@example.org");
  expect(page).toContain("Your licence key for licenses.example.com");
  expect(page).toMatch(/class="mail-status">sent /);
  expect(page).not.toContain(key);
  const [mail] = await site.composed.services.admin.mail!.d.store.listMail({ limit: 1 });

  site.clock.advance(1000);
  const resent = await send(support, "POST", `/console/mail/${mail!.id}/resend`, { csrf: support.csrf });
  expect(resent.status).toBe(303);
  expect(resent.headers.get("location")).toBe("/console/mail?done=mail-resent");
  await worker.tick();
  expect(smtp.received).toHaveLength(2);
  expect(smtp.received[1]!.mail.text).toContain(key);
  expect(smtp.received[1]!.mail.messageId).not.toBe(smtp.received[0]!.mail.messageId);
  const line = (await site.composed.store.listAudit({ licenseId: license.id, limit: 10 })).find((l) => l.action === "mail-resend");
  expect(line).toMatchObject({ action: "mail-resend", outcome: "ok", actor: `${support.tokenId} (support)` });
  const copy = (await site.composed.services.admin.mail!.d.store.listMail({ limit: 1 }))[0]!;
  expect(copy.resendOf).toBe(mail!.id);

  // The licence's page leads to its mail.
  expect(await (await send(support, "GET", `/console/licenses/${license.id}`)).text()).toContain(`href="/console/mail?license=${license.id}"`);
  // Filtered by licence; a reader without licenses:write sees no button and is refused the action.
  expect(await (await send(support, "GET", `/console/mail?license=${license.id}`)).text()).toContain(`Mail of licence`);
  const reader = await signIn(["licenses:read"]);
  expect(await (await send(reader, "GET", "/console/mail")).text()).not.toContain("/resend");
  expect((await send(reader, "POST", `/console/mail/${mail!.id}/resend`, { csrf: reader.csrf })).status).toBe(403);
});
