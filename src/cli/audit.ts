import { auditLineView, type AuditLineView } from "../domain/admin/audit-query";
import { ERROR_CODES } from "../domain/errors";
import { openAdmin } from "./admin-context";
import { out, parseIsoFlag, printJson, UsageError } from "./io";

export const USAGE = "keyturn audit [--ref REF] [--license KEY|ID] [--activation ACT_ID] [--error CODE] [--since ISO] [--until ISO] [--limit N] [--json]";

const FLAGS = {
  ref: { type: "string" },
  license: { type: "string" },
  activation: { type: "string" },
  error: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  limit: { type: "string" },
  json: { type: "boolean" },
} as const;

const DEFAULT_LIMIT = 100;

function printLine(v: AuditLineView): void {
  const what = v.outcome === "ok" ? "ok" : `refused ${v.error}`;
  const who = [v.license && `license ${v.license}`, v.activation && `activation ${v.activation}`, v.address && `from ${v.address}`, v.actor && `by ${v.actor}`];
  out(
    `${v.time}  ${v.ref}  ${v.action}  ${what}${who
      .filter(Boolean)
      .map((w) => `  ${w}`)
      .join("")}`,
  );
}

/** `keyturn audit`: the audit trail, newest first, filtered. */
export async function auditCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, FLAGS);
  try {
    const f = ctx.flags as Record<string, string | boolean | undefined>;
    if (ctx.positionals.length > 0) throw new UsageError(USAGE, `unexpected argument "${ctx.positionals[0]}"`);
    const error = f.error as string | undefined;
    if (error !== undefined && !(ERROR_CODES as readonly string[]).includes(error)) throw new UsageError(USAGE, `--error: unknown error code "${error}"`);
    const limitText = (f.limit as string | undefined) ?? String(DEFAULT_LIMIT);
    if (!/^\d{1,7}$/.test(limitText) || Number(limitText) < 1) throw new UsageError(USAGE, "--limit must be a whole number of at least 1");
    const since = parseIsoFlag(USAGE, "since", f.since as string | undefined);
    const until = parseIsoFlag(USAGE, "until", f.until as string | undefined);
    const licenseId = typeof f.license === "string" ? (await ctx.admin.findLicense(f.license)).id : undefined;
    const lines = await ctx.store.listAudit({
      ref: (f.ref as string | undefined)?.trim(),
      licenseId,
      activationId: (f.activation as string | undefined)?.trim(),
      error,
      since: since ?? undefined,
      until: until ?? undefined,
      limit: Number(limitText),
    });
    const views = lines.map(auditLineView);
    if (f.json === true) printJson({ audit: views });
    else if (views.length === 0) out("no audit lines");
    else views.forEach(printLine);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
