import type { ReleaseControlOp } from "../store/types";
import { adminAudit, CLI_CALLER } from "../domain/admin/deps";
import { isoTime, systemClock } from "../domain/clock";
import { ReleaseControls } from "../domain/releases/release-controls";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

const USAGE = "keyturn release halt|resume|withdraw|restore --lane PRODUCT/CHANNEL/PLATFORM (gamma: CHANNEL/PLATFORM) --version V [--json]";

const DONE: Record<ReleaseControlOp, string> = { halt: "halted", resume: "resumed", withdraw: "withdrawn", restore: "restored" };

/**
 * `keyturn release halt|resume|withdraw|restore`: a release control in the records (works while
 * serve runs: every process sharing the records follows it), with an audit line.
 */
export async function releaseControlCommand(op: ReleaseControlOp, args: string[], env: Record<string, string | undefined>): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, { lane: { type: "string" }, version: { type: "string" }, json: { type: "boolean" } });
  try {
    const { lane, version } = ctx.flags;
    if (typeof lane !== "string" || typeof version !== "string") throw new UsageError(USAGE, `release ${op} needs --lane and --version`);
    if (ctx.positionals.length > 0) throw new UsageError(USAGE, `unexpected argument "${ctx.positionals[0]!}"`);
    const controls = new ReleaseControls(ctx.store, systemClock, ctx.config.variant);
    const admin = { variant: ctx.config.variant, store: ctx.store, clock: systemClock, tokenTtlSeconds: ctx.config.tokenTtlSeconds };
    const change = await controls.applyToKnown(op, lane, version, null, adminAudit(admin, CLI_CALLER, `release-${op}`));
    const c = change.control;
    if (ctx.flags.json === true) {
      printJson({
        changed: change.changed,
        release: { lane: c.lane, version: c.version },
        halted: c.halted === null ? null : isoTime(c.halted),
        withdrawn: c.withdrawn === null ? null : isoTime(c.withdrawn),
      });
      return 0;
    }
    const state = [c.halted !== null ? `halted since ${isoTime(c.halted)}` : "running", c.withdrawn !== null ? `withdrawn since ${isoTime(c.withdrawn)}` : null]
      .filter(Boolean)
      .join(", ");
    out(`${c.lane} ${c.version}: ${change.changed ? DONE[op] : `already ${DONE[op]}`} (${state})`);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
