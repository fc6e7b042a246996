/**
 * Issue 30: mail goes through a durable outbox, "never lost across kill -9, never sent twice".
 * `keyturn serve` is killed with SIGKILL while the SMTP server holds its answer to a mail's DATA
 * (the mail is in flight, not yet taken); restarted, every licence's mail arrives exactly once:
 * those the server took before the kill are not sent again, the one in flight is sent after its
 * lease runs out, and those not yet begun follow.
 */
import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { toConfig } from "../src/config/config";
import { VARIANTS } from "../src/config/variants";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createLicense } from "../src/domain/admin/licenses";
import { systemClock } from "../src/domain/clock";
import { MailOutbox } from "../src/domain/mail/outbox";
import { RecordSeal } from "../src/domain/record-seal";
import { mailStoreOf } from "../src/store/mail-store";
import { openSqliteStore } from "../src/store/sqlite";
import { BASE_URL, tempDir } from "./helpers";
import { siteArgs, siteDirs, startServe } from "./processes";
import { startSmtpReceiver } from "./smtp-receiver";

const root = tempDir();
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("SIGKILL with a mail in flight: restarted, each licence's key arrives once", async () => {
  const smtp = await startSmtpReceiver();
  const dirs = siteDirs(root, "alpha");
  const mailArgs = ["--smtp-url", smtp.url, "--mail-from", "licences@example.com", "--mail-timeout", "2s"];
  // Six licences made as `keyturn license create --email` makes them (same records, same records.key).
  const config = toConfig(
    { variant: "alpha", "base-url": BASE_URL, data: dirs.data, keys: dirs.keys, "smtp-url": smtp.url, "mail-from": "licences@example.com" },
    "admin",
  );
  const store = openSqliteStore(dirs.data);
  const seal = new RecordSeal(dirs.keys, store);
  const mail = new MailOutbox({ config: config.mail!, baseUrl: BASE_URL, store: mailStoreOf(store), clock: systemClock, seal });
  const deps = { variant: VARIANTS.alpha, store, clock: systemClock, tokenTtlSeconds: 3600, seal, mail };
  const keys = new Map<string, string>();
  for (let i = 1; i <= 6; i++) {
    const email = `buyer${i}@example.org`;
    const { key } = await createLicense(deps, CLI_CALLER, { licensee: `Buyer ${i}`, plan: "pro", seats: 1, channels: ["stable"], email });
    keys.set(email, key);
  }
  await store.close();

  try {
    // The third mail's "250" is held; the process dies waiting for it.
    const { holding } = smtp.holdNext(5_000, 2);
    let serve = await startServe([...siteArgs("alpha", dirs), ...mailArgs]);
    await holding;
    await serve.kill();
    expect(serve.proc.signalCode).toBe("SIGKILL");
    expect(smtp.received).toHaveLength(2);

    serve = await startServe([...siteArgs("alpha", dirs), ...mailArgs]);
    try {
      // The mail in flight is leased for the timeout and 5 s after it was taken; then it is sent again.
      await smtp.waitFor(6, 30_000);
      await Bun.sleep(1_500); // a round or more later: nothing more arrives
    } finally {
      expect(await serve.stop()).toBe(0);
    }
    expect(smtp.received).toHaveLength(6);
    expect(new Set(smtp.received.map((r) => r.mail.messageId)).size).toBe(6);
    for (const [email, key] of keys) {
      const mails = smtp.received.filter((r) => r.envelopeTo.includes(email));
      expect(mails).toHaveLength(1);
      expect(mails[0]!.mail.text).toContain(key);
    }
    const check = openSqliteStore(dirs.data);
    const rows = await mailStoreOf(check).listMail({ limit: 10 });
    await check.close();
    expect(rows.map((r) => r.status)).toEqual(Array(6).fill("sent"));
    // The attempt cut by the kill left no record (it never finished): each mail shows the one that sent it.
    expect(rows.map((r) => r.attempts).sort()).toEqual([1, 1, 1, 1, 1, 1]);
  } finally {
    await smtp.stop();
  }
}, 90_000);
