import type { MailConfig } from "../../config/mail-config";
import type { MailKind, MailRecord, MailStore, NewMail } from "../../store/mail-types";
import type { LicenseRecord } from "../../store/types";
import type { Clock } from "../clock";
import { newId } from "../ids";
import type { RecordSeal } from "../record-seal";
import { keyReissued, licenceCreated, siteName, type LicenceFacts, type MailContent } from "./templates";

/** A mail's bodies are sealed bound to its row: a sealed body cannot be moved to another mail. */
export const mailBodyContext = (id: string) => `mail\n${id}`;

export interface MailBodies {
  readonly text: string;
  readonly html: string;
}

export interface MailOutboxDeps {
  readonly config: MailConfig;
  readonly baseUrl: string;
  readonly store: MailStore;
  readonly clock: Clock;
  /** Seals bodies with the records key; kept in clear when absent (tests of other things). */
  readonly seal?: RecordSeal;
}

export const facts = (l: LicenseRecord): LicenceFacts => ({
  licensee: l.licensee,
  planTitle: l.planTitle,
  seats: l.seats,
  expires: l.expires,
  updatesUntil: l.updatesUntil ?? null,
});

/**
 * Makes the site's mails for the outbox (written with the change that causes them, or alone) and
 * reads them back for sending. There is one only when --smtp-url is set: without it nothing is
 * mailed, and a licence's key is shown only to whoever created it, as before.
 */
export class MailOutbox {
  readonly site: string;
  readonly portalUrl: string;

  constructor(readonly d: MailOutboxDeps) {
    this.site = siteName(d.baseUrl);
    this.portalUrl = `${d.baseUrl.replace(/\/+$/, "")}/portal/`;
  }

  /** A mail ready to write: its bodies sealed under its new id. */
  async compose(
    kind: MailKind,
    licenseId: string | null,
    recipient: string,
    content: MailContent,
    extra: Pick<NewMail, "dedupe" | "resendOf"> = {},
  ): Promise<NewMail> {
    const created = this.d.clock();
    const id = newId("mail", created);
    const bodies = JSON.stringify({ text: content.text, html: content.html } satisfies MailBodies);
    const body = this.d.seal ? await this.d.seal.seal(bodies, mailBodyContext(id)) : bodies;
    return { id, kind, licenseId, recipient, subject: content.subject, body, dedupe: extra.dedupe ?? null, resendOf: extra.resendOf ?? null, created };
  }

  /** The key of a new licence, to its holder's address; none when the licence has no address. */
  async licenceCreated(license: LicenseRecord, key: string): Promise<NewMail[]> {
    if (!license.email) return [];
    return [await this.compose("license-created", license.id, license.email, licenceCreated(this.site, facts(license), key, { portal: this.portalUrl }))];
  }

  /** A reissued key, to the licence's address; none when it has none. */
  async keyReissued(license: LicenseRecord, key: string): Promise<NewMail[]> {
    if (!license.email) return [];
    return [await this.compose("key-reissued", license.id, license.email, keyReissued(this.site, facts(license), key, { portal: this.portalUrl }))];
  }

  async bodiesOf(m: Pick<MailRecord, "id" | "body">): Promise<MailBodies> {
    const text = this.d.seal ? await this.d.seal.open(m.body, mailBodyContext(m.id)) : m.body;
    return JSON.parse(text) as MailBodies;
  }

  /** The same mail again, as a new one (its own id, Message-ID and attempts): support's resend. */
  async copyOf(m: MailRecord): Promise<NewMail> {
    const bodies = await this.bodiesOf(m);
    return this.compose(m.kind, m.licenseId, m.recipient, { subject: m.subject, ...bodies }, { resendOf: m.id });
  }
}
