import { isoTime } from "../clock";
import type { ConsoleSessions, ConsoleSessionView } from "../console-sessions";
import { adminAudit, requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { idParam } from "./input";
import { auditRead } from "./read-audit";

/** A console session as the admin API, the command line and the console show it: its times in ISO 8601. */
export type ConsoleSessionAnswer = Omit<ConsoleSessionView, "created" | "expires"> & { readonly created: string; readonly expires: string };

const answerOf = (v: ConsoleSessionView): ConsoleSessionAnswer => ({ ...v, created: isoTime(v.created), expires: isoTime(v.expires) });

/** The console sessions open now, newest first (scope admin: a session list names who holds the console). */
export async function listConsoleSessions(d: AdminDeps, sessions: ConsoleSessions, caller: AdminCaller): Promise<ConsoleSessionAnswer[]> {
  requireScope(caller.principal, "admin");
  const open = await sessions.list();
  await auditRead(d, caller, "console-session-list");
  return open.map(answerOf);
}

/** Ends one open console session at once (scope admin); its next request is signed out. Audited naming who ended it. */
export async function endConsoleSession(d: AdminDeps, sessions: ConsoleSessions, caller: AdminCaller, id: unknown): Promise<ConsoleSessionAnswer> {
  requireScope(caller.principal, "admin");
  return answerOf(await sessions.end(idParam(id, "id"), adminAudit(d, caller, "console-session-end")));
}
