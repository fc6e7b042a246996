import { Type, type Static } from "@sinclair/typebox";
import type { MailKind, MailRecord, MailStatus } from "../../store/mail-types";
import { closed } from "../admin/model";
import { adminAudit, requireScope, type AdminCaller, type AdminDeps } from "../admin/deps";
import { auditRead } from "../admin/read-audit";
import { isoTime } from "../clock";
import { KeyturnError } from "../errors";

/** What support sees of a mail: never its body (it may hold a key or a link). */
export interface MailView {
  readonly id: string;
  readonly kind: MailKind;
  readonly license: string | null;
  readonly recipient: string;
  readonly subject: string;
  readonly status: MailStatus;
  readonly attempts: number;
  readonly created: string;
  readonly sent: string | null;
  readonly lastAttempt: string | null;
  /** When it is tried again (pending only). */
  readonly nextAttempt: string | null;
  readonly lastError: string | null;
  readonly resendOf: string | null;
}

export const MAIL_PAGE = 100;

/** GET /admin/mail's query: one licence's mail, or all. */
export const MailQuery = closed({
  license: Type.Optional(Type.String({ maxLength: 100, description: "A licence id (lic_…): only its mail" })),
});
export type MailQuery = Static<typeof MailQuery>;
const MAIL_ID = /^mail_[0-9a-z]{20}$/;
const LICENSE_ID = /^lic_[0-9a-z]{20}$/;

export function mailView(m: MailRecord): MailView {
  return {
    id: m.id,
    kind: m.kind,
    license: m.licenseId,
    recipient: m.recipient,
    subject: m.subject,
    status: m.status,
    attempts: m.attempts,
    created: isoTime(m.created),
    sent: m.sent === null ? null : isoTime(m.sent),
    lastAttempt: m.lastAttempt === null ? null : isoTime(m.lastAttempt),
    nextAttempt: m.status === "pending" ? isoTime(m.nextAttempt) : null,
    lastError: m.lastError,
    resendOf: m.resendOf ?? null,
  };
}

function outboxOf(d: AdminDeps) {
  if (!d.mail) throw new KeyturnError("not_found", "No such mail: this site sends no mail (no --smtp-url).");
  return d.mail;
}

/** The newest mails, of one licence when given (scope licenses:read). */
export async function listMail(d: AdminDeps, caller: AdminCaller, license?: string | null): Promise<MailView[]> {
  requireScope(caller.principal, "licenses:read");
  if (license && !LICENSE_ID.test(license)) throw new KeyturnError("invalid_request", "license must be a licence id (lic_…).");
  // A site without --smtp-url has sent no mail.
  if (!d.mail) return [];
  const mails = await d.mail.d.store.listMail({ ...(license ? { licenseId: license } : {}), limit: MAIL_PAGE });
  // It names customers' addresses: who read it is kept, as every admin read is.
  await auditRead(d, caller, "mail-list", license ?? null);
  return mails.map(mailView);
}

/**
 * Sends a mail again, as a new mail with its own attempts (scope licenses:write, since it may carry
 * a licence key; audit mail-resend, in the same transaction). A sign-in link is never sent again:
 * the customer asks for a new one.
 */
export async function resendMail(d: AdminDeps, caller: AdminCaller, id: unknown): Promise<MailView> {
  requireScope(caller.principal, "licenses:write");
  const outbox = outboxOf(d);
  const mailId = typeof id === "string" && MAIL_ID.test(id) ? id : null;
  const original = mailId ? await outbox.d.store.getMail(mailId) : null;
  if (!original) throw new KeyturnError("not_found", "No such mail.");
  if (original.kind === "portal-link") throw new KeyturnError("invalid_request", "A sign-in link is not sent again: the customer asks for a new one.");
  const copy = await outbox.copyOf(original);
  await outbox.d.store.enqueueMail([copy], adminAudit(d, caller, "mail-resend", { licenseId: original.licenseId }));
  return mailView((await outbox.d.store.getMail(copy.id))!);
}
