import type { InstallReportCount } from "../../store/types";
import { isoTime } from "../clock";

/** Installations by the outcome of their latest report on a release. */
export interface OutcomeCounts {
  readonly installed: number;
  readonly failed: number;
  readonly rolledBack: number;
}

/** One release's install reports in a window: totals, and per UTC day (days with reports only, oldest first). */
export interface ReleaseReports extends OutcomeCounts {
  readonly lane: string;
  readonly version: string;
  readonly days: readonly ({ readonly day: string } & OutcomeCounts)[];
}

const KEY = { installed: "installed", failed: "failed", "rolled-back": "rolledBack" } as const;

/** The records' counts (Store.installReportsPerDay) as figures per release, by lane then version. */
export function reportsPerRelease(rows: readonly InstallReportCount[]): ReleaseReports[] {
  const releases = new Map<
    string,
    { lane: string; version: string; totals: Record<keyof OutcomeCounts, number>; days: Map<number, Record<keyof OutcomeCounts, number>> }
  >();
  for (const r of rows) {
    const key = `${r.lane}\n${r.version}`;
    let release = releases.get(key);
    if (!release) releases.set(key, (release = { lane: r.lane, version: r.version, totals: { installed: 0, failed: 0, rolledBack: 0 }, days: new Map() }));
    let day = release.days.get(r.day);
    if (!day) release.days.set(r.day, (day = { installed: 0, failed: 0, rolledBack: 0 }));
    day[KEY[r.outcome]] += r.installations;
    release.totals[KEY[r.outcome]] += r.installations;
  }
  return [...releases.values()]
    .sort((a, b) => (a.lane < b.lane ? -1 : a.lane > b.lane ? 1 : a.version < b.version ? -1 : a.version > b.version ? 1 : 0))
    .map((r) => ({
      lane: r.lane,
      version: r.version,
      ...r.totals,
      days: [...r.days].sort(([a], [b]) => a - b).map(([day, c]) => ({ day: isoTime(day).slice(0, 10), ...c })),
    }));
}

/** Failed and rolled back as a share of the installations reporting, in percent (0 with none). */
export const failureShare = (c: OutcomeCounts): number => {
  const all = c.installed + c.failed + c.rolledBack;
  return all === 0 ? 0 : Math.round(((c.failed + c.rolledBack) / all) * 1000) / 10;
};
