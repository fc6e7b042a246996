import { parseList } from "../config/parse";
import { CLI_CALLER } from "../domain/admin/deps";
import { AdminTokenCreateInput, createAdminToken, listAdminTokens, revokeAdminToken, type AdminTokenView } from "../domain/admin/tokens";
import { decode } from "../domain/decode";
import { openAdmin } from "./admin-context";
import { out, parseIsoFlag, printJson, UsageError } from "./io";

export const USAGE = [
  "keyturn admin-token create --name N --scopes S,... [--expires ISO] [--json]",
  "       keyturn admin-token list [--json]",
  "       keyturn admin-token revoke ID",
].join("\n");

const FLAGS = { name: { type: "string" }, scopes: { type: "string" }, expires: { type: "string" }, json: { type: "boolean" } } as const;

function printToken(t: AdminTokenView): void {
  const state = t.revoked ? `REVOKED ${t.revoked}` : t.expires ? `expires ${t.expires}` : "no expiry";
  out(`${t.id}  ${t.name}  [${t.scopes.join(",")}]  ${state}, last used ${t.lastUsed ?? "never"}`);
}

/** `keyturn admin-token create|list|revoke`. */
export async function adminTokenCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !["create", "list", "revoke"].includes(sub))
    throw new UsageError(USAGE, sub ? `unknown admin-token command "${sub}"` : "missing admin-token command");
  const ctx = await openAdmin(USAGE, rest, env, FLAGS);
  const f = ctx.flags;
  try {
    if (sub === "create") {
      if (typeof f.name !== "string" || typeof f.scopes !== "string") throw new UsageError(USAGE, "--name and --scopes are required");
      const expires = parseIsoFlag(USAGE, "expires", typeof f.expires === "string" ? f.expires : undefined);
      const input = decode(AdminTokenCreateInput, {
        name: f.name,
        scopes: parseList(f.scopes),
        ...(expires === null ? {} : { expires: new Date(expires).toISOString() }),
      });
      const { token, secret } = await createAdminToken(ctx.deps, CLI_CALLER, input);
      if (f.json === true) printJson({ secret, ...token });
      else {
        out(`token: ${secret}`);
        out("       (shown this once: keyturn keeps only its hash)");
        printToken(token);
      }
      return 0;
    }
    if (sub === "list") {
      const tokens = await listAdminTokens(ctx.deps, CLI_CALLER);
      if (f.json === true) printJson({ tokens });
      else if (tokens.length === 0) out("no admin tokens");
      else tokens.forEach(printToken);
      return 0;
    }
    if (ctx.positionals.length !== 1) throw new UsageError(USAGE, "admin-token revoke needs one ID");
    await revokeAdminToken(ctx.deps, CLI_CALLER, ctx.positionals[0]);
    out(`revoked ${ctx.positionals[0]}`);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
