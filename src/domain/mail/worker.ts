import type { Transporter } from "nodemailer";
import type { Logger } from "../../config/log";
import type { MailConfig } from "../../config/mail-config";
import type { MailOutcome, MailRecord, MailStore } from "../../store/mail-types";
import type { Store } from "../../store/types";
import type { Clock } from "../clock";
import { randomBase32 } from "../ids";
import { RETRY_DELAYS_MS } from "../webhooks/worker";
import { facts, type MailOutbox } from "./outbox";
import { isTrialLicence } from "../trial-mark";
import { SUBSCRIPTION_ENDED_MARK, SUBSCRIPTION_MARK } from "../commerce/subscription-mark";
import { licenceExpiring, trialEnding, updatesEnding } from "./templates";

/** How often the worker looks for licences to remind (the reminders are once-only, so any process may). */
const REMINDER_EVERY_MS = 3600_000;
const REMINDERS_PER_ROUND = 500;

export interface MailWorkerOptions {
  readonly store: Store;
  readonly mail: MailStore;
  readonly outbox: MailOutbox;
  readonly config: MailConfig;
  readonly clock: Clock;
  readonly log: Logger;
  /** How often start() looks for due mail (1 s). */
  readonly everyMs?: number;
  /** Mails sent or failed longer ago than this are deleted (hourly, with the reminders): the audit retention (90 days unless given). */
  readonly retentionMs?: number;
  /** The transport to send with; nodemailer's SMTP transport of `config` unless a test gives one. */
  readonly transport?: Transporter;
}

/**
 * The SMTP commands whose 5xx answer refuses this mail for good (RFC 5321 section 4.2.1: a recipient
 * unknown, a message refused): sent again, it would be refused again. A 5xx elsewhere (the login,
 * MAIL FROM, STARTTLS) is about the site's set-up, not the mail: it is tried again on the schedule,
 * so mail written while a password was wrong goes out once it is put right.
 */
const REFUSES_THE_MAIL = new Set(["RCPT TO", "DATA"]);

export interface SendError {
  readonly responseCode?: number;
  readonly command?: string;
  readonly message?: string;
}

export function mailOutcomeOf(error: SendError | null, attemptsBefore: number, now: number): MailOutcome {
  if (error === null) return { status: "sent", time: now };
  const text = describe(error);
  if (typeof error.responseCode === "number" && error.responseCode >= 500 && REFUSES_THE_MAIL.has(error.command ?? ""))
    return { status: "failed", time: now, error: text };
  const delay = RETRY_DELAYS_MS[attemptsBefore];
  return delay === undefined ? { status: "failed", time: now, error: text } : { status: "pending", time: now, nextAttempt: now + delay, error: text };
}

/** What is kept of a failure: the server's answer code and first line, never more (no body, no address list). */
function describe(error: { responseCode?: number; message?: string }): string {
  const first = String(error.message ?? "error")
    .split("\n")[0]!
    .replace(/[\u0000-\u001f\u007f]/g, " ")
    .slice(0, 300);
  return typeof error.responseCode === "number" ? `${error.responseCode} ${first}` : first;
}

export function smtpTransport(c: MailConfig): Transporter {
  // Loaded here, by the sites that send mail (--smtp-url), rather than by every process:
  // evaluating nodemailer holds about 2.7 MB of heap (bench/README.md, "4a and 5a, third round").
  const { createTransport } = require("nodemailer") as typeof import("nodemailer");
  return createTransport({
    host: c.host,
    port: c.port,
    secure: c.implicitTls,
    requireTLS: c.requireStartTls,
    // On a loopback address without STARTTLS offered, plain is allowed; otherwise STARTTLS when offered.
    ...(c.username && c.password ? { auth: { user: c.username, pass: c.password } } : {}),
    tls: { minVersion: "TLSv1.2", ...(c.ca ? { ca: c.ca } : {}) },
    connectionTimeout: c.timeoutMs,
    greetingTimeout: c.timeoutMs,
    socketTimeout: c.timeoutMs,
    // nodemailer's own log would print addresses and, at debug, the message with its key.
    logger: false,
    debug: false,
  });
}

/**
 * Sends the outbox's mail through the SMTP server, one mail at a time. A mail is leased before it
 * is sent (lease: the timeout and 5 s) and marked sent in the records the moment the server has
 * taken it, before the next one is begun: a process killed (kill -9) before it has handed a mail
 * over leaves it leased, and when the lease runs out this or another process sends it; a mail the
 * server took is never sent again. The one moment that cannot be told apart is a process killed
 * between the server's "250" and that record: the mail is sent again with the same Message-ID
 * (`<mail id@site>`), which mail programs show as one message.
 */
export class MailWorker {
  readonly owner = `mlw_${randomBase32(16).toLowerCase()}`;
  private readonly transport: Transporter;
  private readonly leaseMs: number;
  private readonly domain: string;
  private running: Promise<number> | null = null;
  private interval: ReturnType<typeof setInterval> | null = null;
  private stopped = false;
  private remindedAt = -Infinity;

  constructor(private readonly o: MailWorkerOptions) {
    this.transport = o.transport ?? smtpTransport(o.config);
    this.leaseMs = o.config.timeoutMs + 5_000;
    this.domain = new URL(o.outbox.d.baseUrl).hostname;
  }

  /** Writes due reminders, then sends every due mail; answers how many were attempted. */
  tick(): Promise<number> {
    this.running ??= (async () => {
      await this.remind();
      let attempted = 0;
      while (!this.stopped) {
        const now = this.o.clock();
        const [mail] = await this.o.mail.claimMail(now, now + this.leaseMs, this.owner, 1);
        if (!mail) break;
        await this.attempt(mail);
        attempted++;
      }
      return attempted;
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  start(): void {
    if (this.interval) return;
    this.stopped = false;
    this.interval = setInterval(() => {
      this.tick().catch((e: unknown) => this.o.log.warn("mail round failed; will try again", { error: String(e) }));
    }, this.o.everyMs ?? 1_000);
    this.interval.unref();
  }

  /** Stops taking mail and waits for the one being sent (recorded before the store closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.interval) clearInterval(this.interval);
    this.interval = null;
    await this.running?.catch(() => undefined);
    this.transport.close();
  }

  private async attempt(m: MailRecord): Promise<void> {
    const { outbox, clock, log } = this.o;
    let error: SendError | null = null;
    try {
      const bodies = await outbox.bodiesOf(m);
      await this.transport.sendMail({
        from: this.o.config.from,
        to: m.recipient,
        subject: m.subject,
        text: bodies.text,
        html: bodies.html,
        messageId: `<${m.id}@${this.domain}>`,
        headers: { "Auto-Submitted": "auto-generated" },
      });
    } catch (e) {
      error = e as SendError;
    }
    const outcome = mailOutcomeOf(error, m.attempts, clock());
    const recorded = await this.o.mail.recordMailAttempt(m.id, this.owner, outcome);
    if (!recorded) log.warn("mail attempt made after its lease ran out; not recorded", { mail: m.id });
    if (outcome.status === "sent") log.info("mail sent", { mail: m.id, kind: m.kind });
    else log.warn(outcome.status === "failed" ? "mail failed" : "mail not sent; will try again", { mail: m.id, kind: m.kind, error: outcome.error });
  }

  /** Old mail pruned, and reminders of licences ending within the configured days, each written once (its dedupe name). */
  private async remind(): Promise<void> {
    const { config, clock, store, outbox } = this.o;
    const now = clock();
    if (now - this.remindedAt < REMINDER_EVERY_MS) return;
    this.remindedAt = now;
    // Sent mail keeps its sealed text (support may send it again) for as long as the audit trail keeps its lines.
    const pruned = await this.o.mail.pruneMail(now - (this.o.retentionMs ?? 90 * 86_400_000));
    if (pruned > 0) this.o.log.info("pruned old mail", { mails: pruned });
    if (config.reminderDays === 0) return;
    // A subscription's end moves with each payment and its provider mails about payments: no
    // reminder until it ended, after which its end is final.
    const mailable = { without: SUBSCRIPTION_MARK, unless: SUBSCRIPTION_ENDED_MARK };
    const ending = await store.licensesExpiring(now, now + config.reminderDays * 86_400_000, REMINDERS_PER_ROUND, mailable);
    const mails = [];
    const links = { portal: outbox.portalUrl };
    for (const l of ending) {
      if (!l.email || l.expires === null) continue;
      const ends = { ...facts(l), expires: l.expires };
      const [kind, content] = isTrialLicence(l)
        ? (["trial-ending", trialEnding(outbox.site, ends)] as const)
        : (["license-expiring", licenceExpiring(outbox.site, ends, links)] as const);
      mails.push(await outbox.compose(kind, l.id, l.email, content, { dedupe: `${kind}:${l.id}:${l.expires}` }));
    }
    // A licence that ends before its updates window needs no word about the window.
    for (const l of await this.o.mail.licensesUpdatesEnding(now, now + config.reminderDays * 86_400_000, REMINDERS_PER_ROUND, mailable)) {
      if (!l.email || l.updatesUntil == null || (l.expires !== null && l.expires <= l.updatesUntil)) continue;
      const content = updatesEnding(outbox.site, { ...facts(l), updatesUntil: l.updatesUntil }, links);
      mails.push(await outbox.compose("updates-ending", l.id, l.email, content, { dedupe: `updates-ending:${l.id}:${l.updatesUntil}` }));
    }
    if (mails.length) await this.o.mail.enqueueMail(mails);
  }
}
