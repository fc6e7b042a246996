import { systemClock } from "../domain/clock";
import { loadKeyRing } from "../domain/keys";
import { ReleaseControls } from "../domain/releases/release-controls";
import type { ReleaseIndex } from "../domain/releases/release-index";
import { ReleaseTreeUnreadable, scanReleaseTree } from "../domain/releases/scan";
import { releaseKeysOf } from "../domain/releases/signature";
import { collectStats, STATS_DAYS } from "../domain/stats";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

export const USAGE =
  "keyturn stats [--json]   (adoption by version per lane, rollouts' reach, activations per day, seats in use and lapsed, licenses expiring, trials and their conversions, metered use)";

/** `keyturn stats`: what GET /admin/stats answers, from the records and the release tree (for rollouts' reach). */
export async function statsCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, { json: { type: "boolean" } });
  try {
    if (ctx.positionals.length > 0) throw new UsageError(USAGE, `unexpected argument "${ctx.positionals[0]!}"`);
    const { config, store } = ctx;
    let index: ReleaseIndex | null = null;
    try {
      const keys = await loadKeyRing(config.keysDir, config.variant);
      index = (await scanReleaseTree(config.releasesDir, { variant: config.variant, releaseKeys: releaseKeysOf(keys) })).index;
    } catch (e) {
      if (!(e instanceof ReleaseTreeUnreadable)) throw e;
    }
    const stats = await collectStats({ store, clock: systemClock, controls: new ReleaseControls(store, systemClock, config.variant), index });
    if (ctx.flags.json === true) {
      printJson(stats);
      return 0;
    }
    out(`installations seen in the last ${STATS_DAYS} days (since ${stats.since}), by lane and version:`);
    if (stats.installations.length === 0) out("  none");
    for (const i of stats.installations)
      out(`  ${i.lane ?? `${i.product ?? ""}${i.product ? " " : ""}(no update check yet)`}  ${i.version}  ${i.installations}`);
    out("rollouts (releases with a rollout or a control):");
    if (index === null) out(`  release tree ${config.releasesDir} not readable: not shown`);
    else if (stats.rollouts.length === 0) out("  none");
    for (const r of stats.rollouts) {
      const state = [r.halted ? `halted ${r.halted}` : null, r.withdrawn ? `withdrawn ${r.withdrawn}` : null].filter(Boolean).join(", ");
      out(`  ${r.lane} ${r.version}: share ${r.share} %, admits ${r.admitted} of ${r.seen} installations seen on the lane${state ? ` (${state})` : ""}`);
    }
    out("install reports per release (installations by their latest report: installed / failed / rolled back):");
    if (stats.installReports.length === 0) out("  none");
    for (const r of stats.installReports) out(`  ${r.lane} ${r.version}: ${r.installed} / ${r.failed} / ${r.rolledBack}`);
    out("activations / seat_limit refusals per day:");
    for (const d of stats.activationsPerDay) if (d.activations > 0 || d.seatLimitRefusals > 0) out(`  ${d.day}  ${d.activations} / ${d.seatLimitRefusals}`);
    out(`seats: ${stats.seats.inUse} in use, ${stats.seats.lapsed} lapsed (leased, not seen within the lease: free to the next activation)`);
    out(`licenses expiring in the next ${STATS_DAYS} days:`);
    if (stats.expiringLicenses.length === 0) out("  none");
    for (const l of stats.expiringLicenses) out(`  ${l.id}  ${l.expires}  ${l.licensee} (${l.organization})`);
    out(`trials: ${stats.trials.started} started, ${stats.trials.converted} converted to a bought licence`);
    out("metered use in the current periods:");
    if (stats.meters.length === 0) out("  none");
    for (const m of stats.meters) out(`  meter ${m.name}: ${m.used} of ${m.limit} used on ${m.licenses} licences, ${m.exhausted} with nothing left`);
    return 0;
  } finally {
    await ctx.store.close();
  }
}
