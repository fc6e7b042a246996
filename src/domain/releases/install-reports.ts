import { Type, type Static } from "@sinclair/typebox";
import type { Logger } from "../../config/log";
import type { InstallReport, ReleaseKey, Store } from "../../store/types";
import { closed } from "../admin/model";
import type { Clock } from "../clock";
import { KeyturnError } from "../errors";
import type { EntitlementClaims } from "../tokens";
import { laneName } from "./release-controls";
import type { ReleaseIndex } from "./release-index";

const VERSION = { minLength: 1, maxLength: 64, pattern: "^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$" };

/** POST /updates/report: what became of installing one release on this installation. */
export const InstallReportModel = closed(
  {
    from: Type.String({ ...VERSION, description: "The version it ran before" }),
    to: Type.String({ ...VERSION, description: "The version of the release installed (one of the installation's lanes)" }),
    outcome: Type.Union([Type.Literal("installed"), Type.Literal("failed"), Type.Literal("rolled-back")], {
      description: "installed; failed (the installer did not finish); rolled-back (installed, then undone)",
    }),
    code: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 40,
        pattern: "^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
        description: "A short code of the program's own (an exit code, an error name)",
      }),
    ),
  },
  "An install outcome report",
);
export type InstallReportInput = Static<typeof InstallReportModel>;

/** How often reports are written, and the automatic halts looked at (release-health.ts): soon, as one bad release spreads with time. */
export const REPORTS_FLUSH_MS = 5_000;
/** Reports held before a flush is started early, so memory stays bounded under any load. */
const MAX_PENDING = 50_000;

/** The installation a report is about, as the records know it (its product, platform and the lane it last read). */
export interface ReportingInstallation {
  readonly activationId: string;
  readonly deviceHash: string;
  readonly product: string | null;
  readonly platform: string;
  readonly channels: readonly string[];
  /** The lane whose manifest it last read (sightings); null when none. */
  readonly lane: string | null;
}

/**
 * The lane of the release a report names: among the installation's lanes (its product and platform,
 * the channels of its entitlement), those with a live release `to`; the lane it last read first.
 */
export function laneOfReport(index: ReleaseIndex, who: ReportingInstallation, to: string): string | null {
  const lanes = who.channels
    .filter((channel) => index.releasesOf(who.product, channel, who.platform).some((r) => r.manifest.version === to))
    .map((channel) => laneName(who.product, channel, who.platform));
  return lanes.find((l) => l === who.lane) ?? lanes[0] ?? null;
}

/**
 * Install outcome reports: each installation's latest report per release, coalesced in memory (a
 * retry replaces the one before) and written in one transaction every REPORTS_FLUSH_MS and at close,
 * as sightings are (adoption.ts). After each write `afterFlush` is told which releases got reports
 * (release-health.ts halts one whose failures crossed its rollout's autoHalt).
 */
export class InstallReports {
  private pending = new Map<string, InstallReport>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** Told, after each write, the releases that got reports in it. */
  afterFlush: (releases: readonly ReleaseKey[]) => Promise<void> = async () => {};

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly flushMs = REPORTS_FLUSH_MS,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref?.();
  }

  /**
   * Takes one report of the bearer's installation: refused (not_found) when `to` is no live release
   * of its lanes, so counts only ever name releases; nothing is written until the next flush.
   */
  async report(claims: EntitlementClaims, input: InstallReportInput, index: ReleaseIndex): Promise<{ lane: string; version: string }> {
    const activation = await this.store.getActivation(claims.sub);
    if (!activation || activation.deactivated !== null) throw new KeyturnError("not_found", "This site keeps no record of this installation.");
    const lane = laneOfReport(
      index,
      { activationId: activation.id, deviceHash: claims.dev, product: activation.product, platform: activation.platform, channels: claims.chn, lane: null },
      input.to,
    );
    if (lane === null) throw new KeyturnError("not_found", `No lane of this installation has a release ${input.to}.`);
    const report: InstallReport = {
      activationId: activation.id,
      deviceHash: claims.dev,
      lane,
      version: input.to,
      from: input.from,
      outcome: input.outcome,
      code: input.code ?? null,
      reported: this.clock(),
    };
    this.pending.set(`${report.activationId}\n${lane}\n${input.to}`, report);
    if (this.pending.size >= MAX_PENDING) void this.flush();
    return { lane, version: input.to };
  }

  /** Writes what is pending in one transaction; a failed write is logged and its reports kept for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      try {
        await this.store.recordInstallReports([...batch.values()]);
      } catch (e) {
        this.log.warn("install reports not written; kept for the next try", { count: batch.size, error: String((e as Error)?.message ?? e) });
        for (const [k, r] of batch) if (!this.pending.has(k)) this.pending.set(k, r);
        return;
      }
      const releases = new Map<string, ReleaseKey>();
      for (const r of batch.values()) releases.set(`${r.lane}\n${r.version}`, { lane: r.lane, version: r.version });
      try {
        await this.afterFlush([...releases.values()]);
      } catch (e) {
        this.log.warn("release health not checked after install reports", { error: String((e as Error)?.message ?? e) });
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}
