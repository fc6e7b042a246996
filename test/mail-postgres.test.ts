import { describe, expect, test } from "bun:test";
import { toConfig } from "../src/config/config";
import { silentLogger } from "../src/config/log";
import { VARIANTS } from "../src/config/variants";
import { CLI_CALLER } from "../src/domain/admin/deps";
import { createLicense } from "../src/domain/admin/licenses";
import { resendMail } from "../src/domain/mail/admin";
import { MailOutbox } from "../src/domain/mail/outbox";
import { MailWorker } from "../src/domain/mail/worker";
import { mailStoreOf } from "../src/store/mail-store";
import { openPostgresStore } from "../src/store/postgres";
import { announceSkip, freshSchema, PG_URL } from "./databases";
import { BASE_URL, tempDir, testClock } from "./helpers";
import { startSmtpReceiver } from "./smtp-receiver";

if (!PG_URL) announceSkip("test/mail-postgres.test.ts", "KEYTURN_TEST_POSTGRES_URL");

describe.skipIf(!PG_URL)("the mail outbox on PostgreSQL", () => {
  test("mail written with the licence; two workers (two pools, as two processes) send each mail once", async () => {
    const schema = await freshSchema();
    const smtp = await startSmtpReceiver();
    const [one, two] = await Promise.all([openPostgresStore(schema.url, { max: 4 }), openPostgresStore(schema.url, { max: 4 })]);
    try {
      const config = toConfig({ variant: "alpha", "base-url": BASE_URL, data: tempDir(), "smtp-url": smtp.url, "mail-from": "licences@example.com" }, "admin")
        .mail!;
      const clock = testClock(Date.now());
      const outboxes = [one, two].map((store) => new MailOutbox({ config, baseUrl: BASE_URL, store: mailStoreOf(store), clock }));
      const keys: string[] = [];
      for (let i = 0; i < 20; i++) {
        const store = i % 2 ? one : two;
        const deps = { variant: VARIANTS.alpha, store, clock, tokenTtlSeconds: 3600, mail: outboxes[i % 2] };
        const { key } = await createLicense(deps, CLI_CALLER, {
          licensee: `B${i}`,
          plan: "pro",
          seats: 1,
          channels: ["stable"],
          email: `Buyer${i}@Example.org`,
        });
        keys.push(key);
      }
      // Without an address, no mail.
      await createLicense({ variant: VARIANTS.alpha, store: one, clock, tokenTtlSeconds: 3600, mail: outboxes[0] }, CLI_CALLER, {
        licensee: "nobody",
        plan: "pro",
        seats: 1,
        channels: ["stable"],
      });
      const workers = [one, two].map((store, i) => new MailWorker({ store, mail: mailStoreOf(store), outbox: outboxes[i]!, config, clock, log: silentLogger }));
      await Promise.all(workers.map((w) => w.tick()));
      await Promise.all(workers.map((w) => w.tick()));
      expect(smtp.received).toHaveLength(20);
      expect(new Set(smtp.received.map((r) => r.mail.messageId)).size).toBe(20);
      for (const key of keys) expect(smtp.received.filter((r) => r.mail.text?.includes(key))).toHaveLength(1);

      const mailStore = mailStoreOf(one);
      expect(await mailStore.licenseIdsOfEmail("buyer3@example.ORG", 10)).toHaveLength(1);
      // One marked in its metadata (a trial's, portal-link.ts) is left out when asked, and only then.
      await createLicense({ variant: VARIANTS.alpha, store: one, clock, tokenTtlSeconds: 3600 }, CLI_CALLER, {
        licensee: "Trial",
        plan: "pro",
        seats: 1,
        channels: ["stable"],
        email: "buyer3@example.org",
        metadata: { trial: "true" },
      });
      expect(await mailStore.licenseIdsOfEmail("buyer3@example.ORG", 10)).toHaveLength(2);
      expect(await mailStore.licenseIdsOfEmail("buyer3@example.ORG", 10, "trial")).toHaveLength(1);
      // Reminders leave out a licence with the first key, unless it has the second (a bridge subscription, until it ended).
      const base = {
        licensee: "Sub",
        plan: "pro",
        seats: 1,
        channels: ["stable"],
        email: "sub@example.org",
        updatesUntil: new Date(clock() + 86_400_000).toISOString(),
      };
      const d = { variant: VARIANTS.alpha, store: one, clock, tokenTtlSeconds: 3600 };
      const renewing = await createLicense(d, CLI_CALLER, { ...base, metadata: { bridge_subscription: "sub_1" } });
      const ended = await createLicense(d, CLI_CALLER, { ...base, metadata: { bridge_subscription: "sub_2", bridge_subscription_ended: "x" } });
      const ending = async (mailable?: { without: string; unless: string }) =>
        (await mailStore.licensesUpdatesEnding(clock(), clock() + 2 * 86_400_000, 100, mailable)).map((l) => l.id);
      expect(await ending()).toEqual(expect.arrayContaining([renewing.license.id, ended.license.id]));
      expect(await ending({ without: "bridge_subscription", unless: "bridge_subscription_ended" })).toEqual([ended.license.id]);
      expect(await mailStore.countMailSince("BUYER3@example.org", "license-created", 0)).toBe(1);
      const [newest] = await mailStore.listMail({ limit: 1 });
      const copy = await resendMail({ variant: VARIANTS.alpha, store: one, clock, tokenTtlSeconds: 3600, mail: outboxes[0] }, CLI_CALLER, newest!.id);
      expect(copy.resendOf).toBe(newest!.id);
      const lines = await one.listAudit({ limit: 10, licenseId: newest!.licenseId! });
      expect(lines.map((l) => l.action).sort()).toEqual(["license-create", "mail-resend"]);
      await workers[1]!.tick();
      expect(smtp.received).toHaveLength(21);
      expect(await mailStore.pruneMail(clock() + 1)).toBe(21);
      await Promise.all(workers.map((w) => w.stop()));
    } finally {
      await Promise.all([one.close(), two.close()]);
      await smtp.stop();
      await schema.drop();
    }
  });
});
