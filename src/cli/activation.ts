import { isoTime } from "../domain/clock";
import { decode } from "../domain/decode";
import { answerLastsUntil, answerOfflineRequest, OfflineAnswerModel } from "../domain/offline-activation";
import type { ActivationRecord } from "../store/types";
import { openAdmin, type AdminContext } from "./admin-context";
import { err, out, printJson, UsageError } from "./io";
import { offlineLicensing } from "./offline-licensing";

export const USAGE = [
  "keyturn activation list --license KEY|ID [--json]",
  "       keyturn activation deactivate ACT_ID [--json]",
  "       keyturn activation offline CODE [--key KEY] [--json]   (with the server's --config or --base-url and --keys)",
].join("\n");

export function activationView(a: ActivationRecord) {
  return {
    id: a.id,
    license: a.licenseId,
    kind: a.kind,
    deviceHash: a.deviceHash,
    ...(a.product !== null ? { product: a.product } : {}),
    name: a.name,
    platform: a.platform,
    version: a.version,
    created: isoTime(a.created),
    lastSeen: isoTime(a.lastSeen),
    deactivated: a.deactivated === null ? null : isoTime(a.deactivated),
  };
}

function printActivation(v: ReturnType<typeof activationView>): void {
  const state = v.deactivated ? `deactivated ${v.deactivated}` : "active";
  out(`${v.id}  ${state}  "${v.name}"${v.product ? ` ${v.product}` : ""} ${v.platform} ${v.version}, last seen ${v.lastSeen}`);
}

/** `keyturn activation list|deactivate|offline`. */
export async function activationCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "list" && sub !== "deactivate" && sub !== "offline")
    throw new UsageError(USAGE, sub ? `unknown activation command "${sub}"` : "missing activation command");
  const ctx = await openAdmin(USAGE, rest, env, { license: { type: "string" }, key: { type: "string" }, json: { type: "boolean" } });
  try {
    const json = ctx.flags.json === true;
    if (sub === "offline") return await offline(ctx, json);
    if (sub === "list") {
      const license = ctx.flags.license;
      if (typeof license !== "string" || ctx.positionals.length > 0) throw new UsageError(USAGE, "activation list needs --license KEY|ID");
      const views = (await ctx.admin.listActivations(license)).map(activationView);
      if (json) printJson({ activations: views });
      else if (views.length === 0) out("no activations");
      else views.forEach(printActivation);
      return 0;
    }
    const id = ctx.positionals[0];
    if (!id || ctx.positionals.length > 1) throw new UsageError(USAGE, "activation deactivate needs one ACT_ID");
    const view = activationView(await ctx.admin.deactivate(id));
    if (json) printJson(view);
    else printActivation(view);
    return 0;
  } finally {
    await ctx.store.close();
  }
}

/**
 * `keyturn activation offline CODE`: the answer code for an offline computer's request code,
 * printed alone on stdout (or with the entitlement, --json). The activation takes a seat like any.
 */
async function offline(ctx: AdminContext, json: boolean): Promise<number> {
  const code = ctx.positionals[0];
  if (!code || ctx.positionals.length > 1) throw new UsageError(USAGE, "activation offline needs one CODE (the request code, quoted)");
  if (ctx.settings["base-url"] === undefined)
    throw new UsageError(USAGE, "activation offline needs the site's --base-url (or its --config): the token names it as its issuer");
  const licensing = await offlineLicensing(ctx);
  const key = typeof ctx.flags.key === "string" ? ctx.flags.key : undefined;
  const done = await answerOfflineRequest(licensing, decode(OfflineAnswerModel, { code, key }), { address: null, actor: "cli" });
  if (json) printJson(done);
  else {
    out(done.answer);
    // On stderr: stdout stays the answer code alone, to pipe or copy.
    err(answerLastsUntil(done.entitlement));
  }
  return 0;
}
