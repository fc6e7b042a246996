import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { offlineRequestCode } from "../../src/client/offline";
import { createLogger } from "../../src/config/log";
import { CLI_CALLER } from "../../src/domain/admin/deps";
import { createLicense } from "../../src/domain/admin/licenses";
import { MailWorker } from "../../src/domain/mail/worker";
import { SqliteStore } from "../../src/store/sqlite";
import { BASE_URL, device, testSite, type TestSite } from "../helpers";
import { startSmtpReceiver, type SmtpReceiver } from "../smtp-receiver";

/**
 * Issue 30, part 3: "A customer types their e-mail address; a one-time, short-lived link (hashed at
 * rest, single use, on the sign-in budget, the same answer whether or not the address is known)
 * signs them in to every licence under that address. From there: reissue a lost key (rekey, mailed
 * to that address, seats kept), see installations, free a seat, download, offline activation. Key
 * sign-in stays." The link is read from what a real SMTP server on loopback received.
 */
const ORIGIN = new URL(BASE_URL).origin;
const FORM = { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN };

let site: TestSite;
let smtp: SmtpReceiver;
let worker: MailWorker;
let logLines: string[];

async function open(settings: Record<string, string> = {}, tables?: Record<string, unknown>) {
  smtp = await startSmtpReceiver();
  logLines = [];
  const log = createLogger("json", "debug", (l) => logLines.push(l));
  site = await testSite("alpha", { log, ...(tables ? { tables } : {}), settings: { "smtp-url": smtp.url, "mail-from": "licences@example.com", ...settings } });
  const mail = site.composed.services.admin.mail!;
  worker = new MailWorker({ store: site.composed.store, mail: mail.d.store, outbox: mail, config: site.composed.config.mail!, clock: site.clock, log });
}
beforeEach(() => open());
afterEach(async () => {
  await worker.stop();
  await site.close();
  await smtp.stop();
});

const send = (path: string, cookie = "", body?: Record<string, string>) =>
  site.app.handle(
    new Request(
      `${BASE_URL}${path}`,
      body ? { method: "POST", headers: { ...FORM, cookie }, body: new URLSearchParams(body).toString() } : { headers: { cookie } },
    ),
  );

const licence = (email: string | undefined, licensee = "Ada Lovelace") =>
  createLicense(site.composed.services.admin, CLI_CALLER, {
    licensee,
    plan: "pro",
    planTitle: "Professional",
    seats: 2,
    channels: ["stable"],
    ...(email ? { email } : {}),
  });

const links = () => site.composed.services.admin.mail!.d.store.listMail({ limit: 1000 }).then((m) => m.filter((x) => x.kind === "portal-link").length);

/** Asks for a link; the answer does not wait for the link, so this waits for its mail (`mailed`) or a moment, then sends what is due. */
async function askForLink(email: string, mailed = true): Promise<Response> {
  const before = await links();
  const res = await send("/portal/sign-in/email", "", { email });
  for (let i = 0; i < (mailed ? 200 : 5) && (await links()) === before; i++) await Bun.sleep(10);
  await worker.tick();
  return res;
}

const LINK = /https:\/\/licenses\.example\.com\/portal\/link\?token=([0-9A-Z]{32})/;
/** The token of the last sign-in link mailed to `to`. */
const linkIn = (to: string) => {
  const mail = smtp.received.findLast((r) => r.envelopeTo[0]!.toLowerCase() === to.toLowerCase() && LINK.test(r.mail.text ?? ""));
  return LINK.exec(mail!.mail.text!)![1]!;
};

async function signInByLink(token: string): Promise<{ cookie: string; csrf: string }> {
  const res = await send("/portal/link", "", { token });
  expect(res.status).toBe(303);
  const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
  const home = await (await send("/portal/", cookie)).text();
  return { cookie, csrf: /name="csrf" value="([0-9a-f]{64})"/.exec(home)![1]! };
}

describe("asking for a link", () => {
  test("the same answer for a known and an unknown address; only the known one is mailed a link", async () => {
    await licence("ada@example.org");
    const known = await askForLink("Ada@Example.org");
    const unknown = await askForLink("nobody@example.org", false);
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(known.status);
    expect(await unknown.text()).toBe(await known.text());
    // The licence's own mail (created) and the link, both to Ada; none to the unknown address.
    expect(smtp.received.map((r) => r.envelopeTo[0]!.toLowerCase())).toEqual(["ada@example.org", "ada@example.org"]);
    const link = smtp.received.find((r) => LINK.test(r.mail.text ?? ""))!.mail;
    expect(link.subject).toBe("Sign in to your licences at licenses.example.com");
    expect(link.text).toContain("within 15 minutes");
    // Kept hashed: the link's secret is nowhere in the records, nor in the log.
    const token = linkIn("Ada@Example.org");
    const db = (site.composed.store as SqliteStore).db;
    const dump = JSON.stringify(db.query("SELECT * FROM console_sessions").all());
    expect(dump).not.toContain(token);
    expect(logLines.join("\n")).not.toContain(token);
  });

  test("a malformed address is refused with the form again; at most 3 links an address in 15 minutes", async () => {
    const bad = await send("/portal/sign-in/email", "", { email: "not an address" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("Type one e-mail address");
    await licence("ada@example.org");
    for (let i = 0; i < 5; i++) await askForLink("ada@example.org", i < 3);
    expect(smtp.received.filter((r) => r.mail.subject?.startsWith("Sign in"))).toHaveLength(3);
  });

  test("asking is on the sign-in budget", async () => {
    await worker.stop();
    await site.close();
    await smtp.stop();
    await open({ "rate-limit-signin": "2/60s" });
    expect((await send("/portal/sign-in/email", "", { email: "a@example.org" })).status).toBe(200);
    expect((await send("/portal/sign-in/email", "", { email: "a@example.org" })).status).toBe(200);
    expect((await send("/portal/sign-in/email", "", { email: "a@example.org" })).status).toBe(429);
  });
});

describe("the link", () => {
  test("opening it (GET) spends nothing; signing in spends it; a second use and an expired link are refused", async () => {
    await licence("ada@example.org");
    await askForLink("ada@example.org");
    const token = linkIn("ada@example.org");
    const landing = await send(`/portal/link?token=${token}`);
    expect(landing.status).toBe(200);
    expect(await landing.text()).toContain("Sign in to my licences");
    await signInByLink(token);
    const again = await send("/portal/link", "", { token });
    expect(again.status).toBe(401);
    // The request log names the path, never the link's query.
    expect(logLines.some((l) => l.includes('"/portal/link"'))).toBe(true);
    expect(logLines.join("\n")).not.toContain(token);
    expect(await again.text()).toContain("expired or was used");

    await askForLink("ada@example.org");
    const later = linkIn("ada@example.org");
    site.clock.advance(15 * 60_000 + 1);
    expect((await send("/portal/link", "", { token: later })).status).toBe(401);
  });

  test("signs in to every licence under the address, and to no other; the sign-in by key stays", async () => {
    const first = await licence("ada@example.org", "Ada at home");
    const second = await licence("ADA@example.org", "Ada at work");
    const other = await licence("bob@example.org", "Bob");
    await askForLink("ada@example.org");
    const { cookie, csrf } = await signInByLink(linkIn("ada@example.org"));
    const home = await (await send("/portal/", cookie)).text();
    expect(home).toContain(`id="licence-${first.license.id}"`);
    expect(home).toContain(`id="licence-${second.license.id}"`);
    expect(home).not.toContain(other.license.id);

    // Free a seat of one of them; Bob's installation is not theirs.
    await site.request("POST", "/licenses/activate", { body: { key: second.key, device: device("alpha", { name: "Work PC" }) } });
    await site.request("POST", "/licenses/activate", { body: { key: other.key, device: device("alpha", { name: "Bob PC" }) } });
    const [mine] = await site.composed.store.listActivations(second.license.id);
    const [bobs] = await site.composed.store.listActivations(other.license.id);
    expect((await send(`/portal/installations/${bobs!.id}/deactivate`, cookie, { csrf })).status).toBe(404);
    expect((await send(`/portal/installations/${mine!.id}/deactivate`, cookie, { csrf })).status).toBe(303);
    expect((await site.composed.store.getActivation(mine!.id))!.deactivated).not.toBeNull();

    // Offline activation for the licence the form names; another's is not_found.
    const code = offlineRequestCode({ key: first.key, device: device("alpha") });
    expect(await (await send("/portal/offline", cookie, { csrf, license: first.license.id, code })).text()).toContain('id="answer-code"');
    expect((await send("/portal/offline", cookie, { csrf, license: other.license.id, code })).status).toBe(404);

    // The key sign-in is still there.
    expect((await send("/portal/sign-in", "", { key: other.key })).status).toBe(303);
  });

  // docs/trials-and-meters.md: a trial's key "is never shown to anyone"; the address a trial is
  // started with was never confirmed, so it signs nobody in to the trial.
  test("a trial is not reached through the address it was started with: no link for it alone, and not listed beside a bought licence", async () => {
    await worker.stop();
    await site.close();
    await smtp.stop();
    await open({ "trial-plan": "eval" }, { plans: { eval: { seats: 1, channels: ["stable"] } } });
    const started = await site.request("POST", "/trials/start", { body: { device: device("alpha"), email: "eve@example.org" } });
    expect(started.status).toBe(200);
    const trialLicence = ((await started.json()) as { token: string }).token.split(".")[1]!;
    const trialId = (JSON.parse(Buffer.from(trialLicence, "base64url").toString()) as { lic: string }).lic;
    expect((await site.composed.store.getLicense(trialId))?.email).toBe("eve@example.org");
    expect((await askForLink("eve@example.org", false)).status).toBe(200);
    expect(await links()).toBe(0);

    const bought = await licence("eve@example.org", "Eve");
    await askForLink("eve@example.org");
    const { cookie } = await signInByLink(linkIn("eve@example.org"));
    const home = await (await send("/portal/", cookie)).text();
    expect(home).toContain(`id="licence-${bought.license.id}"`);
    expect(home).not.toContain(trialId);
  });

  test("a lost key: reissued from the portal, mailed to the address, the old key refused, seats kept", async () => {
    const { key: lost, license } = await licence("ada@example.org");
    expect((await site.request("POST", "/licenses/activate", { body: { key: lost, device: device("alpha") } })).status).toBe(200);
    await askForLink("ada@example.org");
    const { cookie, csrf } = await signInByLink(linkIn("ada@example.org"));
    const confirm = await send(`/portal/licenses/${license.id}/rekey`, cookie);
    expect(await confirm.text()).toContain("Send a new key for the licence of Ada Lovelace (Professional) to ada@example.org?");
    const done = await send(`/portal/licenses/${license.id}/rekey`, cookie, { csrf });
    expect(done.status).toBe(200);
    const page = await done.text();
    expect(page).toContain("is on its way to ada@example.org");
    await worker.tick();
    const mail = smtp.received.at(-1)!.mail;
    expect(mail.subject).toBe("Your new licence key for licenses.example.com");
    const fresh = /^ {4}(AL-[0-9A-Z-]+)$/m.exec(mail.text ?? "")![1]!;
    expect(page).not.toContain(fresh);
    expect(fresh).not.toBe(lost);
    expect((await site.request("POST", "/licenses/activate", { body: { key: lost, device: device("alpha") } })).status).toBe(403);
    expect((await site.request("POST", "/licenses/activate", { body: { key: fresh, device: device("alpha") } })).status).toBe(200);
    expect(await site.composed.store.countActiveSeats(license.id)).toBe(2);
    // The e-mail session outlives the rekey (it names the address, not the key).
    expect((await send("/portal/", cookie)).status).toBe(200);
    expect(logLines.join("\n")).not.toContain(fresh);
  });
});

test("without --smtp-url there is no sign-in by e-mail", async () => {
  const plain = await testSite("alpha");
  try {
    const home = await (await plain.app.handle(new Request(`${BASE_URL}/portal/`))).text();
    expect(home).toContain("Licence key");
    expect(home).not.toContain("/portal/sign-in/email");
    const res = await plain.app.handle(new Request(`${BASE_URL}/portal/sign-in/email`, { method: "POST", headers: FORM, body: "email=ada%40example.org" }));
    expect(res.status).toBe(404);
  } finally {
    await plain.close();
  }
});
