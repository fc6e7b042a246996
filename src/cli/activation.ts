import { isoTime } from "../domain/clock";
import type { ActivationRecord } from "../store/types";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

const USAGE = "keyturn activation list --license KEY|ID [--json]  |  keyturn activation deactivate ACT_ID [--json]";

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

/** `keyturn activation list|deactivate`. */
export async function activationCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "list" && sub !== "deactivate")
    throw new UsageError(USAGE, sub ? `unknown activation command "${sub}"` : "missing activation command");
  const ctx = await openAdmin(USAGE, rest, env, { license: { type: "string" }, json: { type: "boolean" } });
  try {
    const json = ctx.flags.json === true;
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
