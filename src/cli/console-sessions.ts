import { endConsoleSession, listConsoleSessions, type ConsoleSessionAnswer } from "../domain/admin/console-sessions";
import { CLI_CALLER } from "../domain/admin/deps";
import { systemClock } from "../domain/clock";
import { ConsoleSessions } from "../domain/console-sessions";
import { consoleScopes } from "../domain/identity/console-sign-in";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

export const USAGE = ["keyturn console-sessions list [--json]", "       keyturn console-sessions end ID [--json]"].join("\n");

const FLAGS = { json: { type: "boolean" } } as const;

function printSession(s: ConsoleSessionAnswer): void {
  const who = s.kind === "staff" ? `staff ${s.subject} [${(s.groups ?? []).join(",")}]` : `token ${s.tokenId}`;
  out(`${s.id}  ${s.name}  ${who}  scopes [${s.scopes.join(",")}]  since ${s.created}, ends ${s.expires}`);
}

/**
 * `keyturn console-sessions list|end`: the console sessions open now, and ending one at once (its
 * next request is signed out). A staff session's scopes are shown as this configuration's
 * --console-groups gives them, so pass the site's settings (--config) to see what it holds.
 */
export async function consoleSessionsCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !["list", "end"].includes(sub))
    throw new UsageError(USAGE, sub ? `unknown console-sessions command "${sub}"` : "missing console-sessions command");
  const ctx = await openAdmin(USAGE, rest, env, FLAGS);
  try {
    const consoleGroups = consoleScopes(ctx.config.identity?.consoleGroups ?? new Map());
    const sessions = new ConsoleSessions({ store: ctx.store, clock: systemClock, consoleGroups });
    if (sub === "list") {
      const open = await listConsoleSessions(ctx.deps, sessions, CLI_CALLER);
      if (ctx.flags.json === true) printJson({ sessions: open });
      else if (open.length === 0) out("no console sessions are open");
      else open.forEach(printSession);
      return 0;
    }
    if (ctx.positionals.length !== 1) throw new UsageError(USAGE, "console-sessions end needs one ID (cs_…, from list)");
    const ended = await endConsoleSession(ctx.deps, sessions, CLI_CALLER, ctx.positionals[0]);
    if (ctx.flags.json === true) printJson({ session: ended });
    else out(`ended ${ended.id} (${ended.name})`);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
