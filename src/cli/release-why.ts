import { CLI_CALLER } from "../domain/admin/deps";
import { auditRead } from "../domain/admin/read-audit";
import { systemClock } from "../domain/clock";
import { loadKeyRing } from "../domain/keys";
import { ReleaseControls } from "../domain/releases/release-controls";
import { explainReleases, type WhyQuery } from "../domain/releases/release-why";
import { ReleaseSelection } from "../domain/releases/release-selection";
import { scanReleaseTree } from "../domain/releases/scan";
import { releaseKeysOf } from "../domain/releases/signature";
import { openAdmin } from "./admin-context";
import { out, printJson, UsageError } from "./io";

const USAGE = "keyturn release why ACTIVATION | --device HASH --license LICENSE [--json]";

/**
 * `keyturn release why`: for an installation, the release each of its lanes gives it and every rule
 * that decided it, from the records and the release tree as serve reads them.
 */
export async function releaseWhyCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const ctx = await openAdmin(USAGE, args, env, { device: { type: "string" }, license: { type: "string" }, json: { type: "boolean" } });
  try {
    const { device, license } = ctx.flags;
    if (ctx.positionals.length > 1) throw new UsageError(USAGE, `unexpected argument "${ctx.positionals[1]!}"`);
    const activation = ctx.positionals[0];
    if ((activation === undefined) === (typeof device !== "string" || typeof license !== "string"))
      throw new UsageError(USAGE, "release why needs an ACTIVATION, or --device and --license");
    const query: WhyQuery = activation !== undefined ? { activation } : { device: device as string, license: license as string };
    const { config, store } = ctx;
    const keys = await loadKeyRing(config.keysDir, config.variant);
    const { index } = await scanReleaseTree(config.releasesDir, { variant: config.variant, releaseKeys: releaseKeysOf(keys) });
    const selection = new ReleaseSelection(config.variant, new ReleaseControls(store, systemClock, config.variant), systemClock, store);
    const answer = await explainReleases({ store, admin: ctx.deps, selection, index }, query);
    await auditRead(ctx.deps, CLI_CALLER, "release-why", answer.installation.license);
    if (ctx.flags.json === true) {
      printJson(answer);
      return 0;
    }
    const i = answer.installation;
    out(`${i.activation ?? "no activation"} of ${i.license} (plan ${i.plan}${i.kind === "staff" ? ", staff" : ""}), device ${i.device}`);
    for (const l of answer.lanes) {
      out(`${l.lane}: ${l.served ?? "nothing"} (${l.decidedBy.rule}: ${l.decidedBy.reason})`);
      for (const r of l.releases) {
        const decided = r.steps.find((s) => s.effect !== "next") ?? r.steps.at(-1);
        out(
          `  ${r.version}  ${r.served ? "served" : decided?.effect === "admit" ? "admitted" : "passed over"}  ${decided ? `${decided.rule}: ${decided.reason}` : ""}`,
        );
      }
    }
    return 0;
  } finally {
    await ctx.store.close();
  }
}
