import type { AuditRecord, LicenseRecord, MailableLicences } from "./types";

/**
 * The mail outbox's records (migration 17): a mail is written in the transaction of the change that
 * causes it (Journal.mail), then leased and sent by one worker at a time (src/domain/mail/worker.ts).
 * Times are milliseconds since the epoch, as in types.ts.
 */
export type MailKind = "license-created" | "key-reissued" | "license-expiring" | "trial-ending" | "updates-ending" | "portal-link";

export type MailStatus = "pending" | "sent" | "failed";

/** A mail as a change writes it. */
export interface NewMail {
  /** `mail_…`; also the left part of its Message-ID, so a copy sent twice is known as the same message. */
  readonly id: string;
  readonly kind: MailKind;
  readonly licenseId: string | null;
  readonly recipient: string;
  readonly subject: string;
  /** The text and HTML bodies as JSON, sealed with the records key (they may hold a key or a link). */
  readonly body: string;
  /** A reminder's once-only name (`license-expiring:lic_…:<expires>`): a second write of it writes nothing. */
  readonly dedupe?: string | null;
  /** The mail this one sends again (support's resend). */
  readonly resendOf?: string | null;
  readonly created: number;
}

export interface MailRecord extends NewMail {
  readonly status: MailStatus;
  readonly attempts: number;
  readonly nextAttempt: number;
  readonly lastAttempt: number | null;
  /** The last failure (the SMTP server's answer or the connection's error), never a body. */
  readonly lastError: string | null;
  readonly sent: number | null;
}

/** What an attempt made of the mail. */
export type MailOutcome =
  | { readonly status: "sent"; readonly time: number }
  | { readonly status: "pending"; readonly time: number; readonly nextAttempt: number; readonly error: string }
  | { readonly status: "failed"; readonly time: number; readonly error: string };

export interface MailFilter {
  readonly licenseId?: string;
  /** Keyset pagination, newest first: only mails before this one. */
  readonly before?: { readonly created: number; readonly id: string };
  readonly limit: number;
}

export interface MailStore {
  /**
   * Writes mails outside any other change (reminders, sign-in links, a resend), with the audit line
   * of the change when given, in one transaction; a mail whose `dedupe` is taken is skipped. Answers those written.
   */
  enqueueMail(mails: readonly NewMail[], audit?: AuditRecord): Promise<NewMail[]>;
  /**
   * Leases up to `limit` due pending mails to `owner` until `leaseUntil` (oldest due first). With
   * several processes a mail is leased by one at a time; one whose lease ran out (its sender died)
   * is due again.
   */
  claimMail(now: number, leaseUntil: number, owner: string, limit: number): Promise<MailRecord[]>;
  /** Records an attempt's outcome if `owner` still holds the lease; false otherwise. */
  recordMailAttempt(id: string, owner: string, outcome: MailOutcome): Promise<boolean>;
  getMail(id: string): Promise<MailRecord | null>;
  listMail(filter: MailFilter): Promise<MailRecord[]>;
  /**
   * Licences (kind license) whose e-mail address is `email`, compared without case, oldest first;
   * with `without`, none whose metadata has that key set to "true".
   */
  licenseIdsOfEmail(email: string, limit: number, without?: string): Promise<string[]>;
  /** Licences (not staff, not revoked, with an address) whose updates window ends in [from, to), soonest first. */
  licensesUpdatesEnding(from: number, to: number, limit: number, mailable?: MailableLicences): Promise<LicenseRecord[]>;
  /** How many mails of `kind` to `recipient` (compared without case) were written at or after `since`. */
  countMailSince(recipient: string, kind: MailKind, since: number): Promise<number>;
  /** Deletes mails sent or failed before `before`; returns how many. */
  pruneMail(before: number): Promise<number>;
}
