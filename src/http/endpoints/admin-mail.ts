import type { AdminDeps } from "../../domain/admin/deps";
import { listMail, resendMail } from "../../domain/mail/admin";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS } from "./shared";

const MAIL_ID: ParamDoc = { name: "id", description: "The mail's id (mail_…)" };

/** The mail outbox under /admin (docs/mail.md): what was sent (none on a site without --smtp-url), and a mail sent again. */
export function adminMailEndpoints(admin: AdminDeps): Endpoint[] {
  return [
    endpoint({
      method: "GET",
      path: "/admin/mail",
      summary: "The newest 100 mails (never their text), of one licence when asked",
      auth: { scope: "licenses:read" },
      budget: "admin",
      audit: "mail-list",
      querySchema: S.AdminMailQuery,
      answer: S.MailList,
      errors: [...ADMIN_ERRORS, "invalid_request"],
      handler: async ({ queryValues, admin: caller }) => json({ ok: true, mails: await listMail(admin, caller, queryValues.license ?? null) }),
    }),
    endpoint({
      method: "POST",
      path: "/admin/mail/{id}/resend",
      summary: "Send a mail again, as a new mail with its own attempts (not a sign-in link)",
      auth: { scope: "licenses:write" },
      budget: "admin",
      querySchema: S.NoQuery,
      audit: "mail-resend",
      params: [MAIL_ID],
      answer: S.MailAnswer,
      errors: [...ADMIN_ERRORS, "not_found", "invalid_request"],
      handler: async ({ params, admin: caller }) => json({ ok: true, mail: await resendMail(admin, caller, params.id) }),
    }),
  ];
}
