import { CLI_CALLER } from "../domain/admin/deps";
import { KeyturnError } from "../domain/errors";
import { listMail, resendMail, type MailView } from "../domain/mail/admin";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

export const USAGE = ["keyturn mail list [--license LIC_ID] [--json]", "       keyturn mail resend MAIL_ID [--json]"].join("\n");

const FLAGS = { json: { type: "boolean" }, license: { type: "string" } } as const;

function printMail(m: MailView): void {
  const state = m.status === "sent" ? `sent ${m.sent}` : m.status === "pending" ? `pending, next try ${m.nextAttempt}` : "FAILED";
  out(`${m.id}  ${m.created}  ${m.kind}  to ${m.recipient}  ${state}  attempts ${m.attempts}${m.lastError ? `  last error: ${m.lastError}` : ""}`);
}

/**
 * `keyturn mail list|resend`: the mail outbox as the console's Mail page shows it (never a mail's
 * text), and a mail sent again as a new one (audit mail-resend). Pass the site's mail settings
 * (--config): without --smtp-url the site sends no mail and these refuse.
 */
export async function mailCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !["list", "resend"].includes(sub)) throw new UsageError(USAGE, sub ? `unknown mail command "${sub}"` : "missing mail command");
  const ctx = await openAdmin(USAGE, rest, env, FLAGS);
  try {
    if (!ctx.deps.mail) throw new KeyturnError("not_found", "This site sends no mail (no --smtp-url): pass the site's mail settings (--config).");
    if (sub === "list") {
      if (ctx.positionals.length > 0) throw new UsageError(USAGE, "mail list takes no positional argument");
      const mails = await listMail(ctx.deps, CLI_CALLER, typeof ctx.flags.license === "string" ? ctx.flags.license : null);
      if (ctx.flags.json === true) printJson({ mails });
      else if (mails.length === 0) out("no mail");
      else mails.forEach(printMail);
      return 0;
    }
    if (ctx.positionals.length !== 1) throw new UsageError(USAGE, "mail resend needs one MAIL_ID (mail_…, from list)");
    const copy = await resendMail(ctx.deps, CLI_CALLER, ctx.positionals[0]);
    if (ctx.flags.json === true) printJson({ mail: copy });
    else out(`queued ${copy.id} to ${copy.recipient} (a copy of ${copy.resendOf}); the serving process sends it`);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
