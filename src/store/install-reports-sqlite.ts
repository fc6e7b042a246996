import type { Database } from "bun:sqlite";
import { DAY_MS } from "./rows";
import { metadataPath } from "./sqlite-metadata";
import type { InstallOutcome, InstallReport, InstallReportCount, ReleaseKey } from "./types";

type Row = Record<string, unknown>;

/**
 * Install reports on SQLite (the Store's recordInstallReports and its reads). Called inside the
 * caller's write transaction; each report replaces the installation's earlier one on that release.
 */
export function writeInstallReports(db: Database, reports: readonly InstallReport[]): void {
  const upsert = db.query(`INSERT INTO install_reports (lane, version, activation_id, device_hash, from_version, outcome, code, reported)
    VALUES ($lane, $version, $id, $dev, $from, $outcome, $code, $reported)
    ON CONFLICT (lane, version, activation_id) DO UPDATE SET device_hash = excluded.device_hash, from_version = excluded.from_version,
    outcome = excluded.outcome, code = excluded.code, reported = excluded.reported WHERE excluded.reported >= install_reports.reported`);
  const running = db.query("UPDATE activations SET version = $version WHERE id = $id AND deactivated IS NULL");
  for (const r of reports) {
    upsert.run({
      lane: r.lane,
      version: r.version,
      id: r.activationId,
      dev: r.deviceHash,
      from: r.from,
      outcome: r.outcome,
      code: r.code,
      reported: r.reported,
    });
    if (r.outcome === "installed") running.run({ version: r.version, id: r.activationId });
    else if (r.outcome === "rolled-back") running.run({ version: r.from, id: r.activationId });
  }
}

export function installReportsPerDay(db: Database, since: number): InstallReportCount[] {
  const rows = db
    .query(`SELECT lane, version, reported / ${DAY_MS} AS day, outcome, count(*) AS n FROM install_reports
      WHERE reported >= ? GROUP BY lane, version, day, outcome ORDER BY lane, version, day, outcome`)
    .all(since) as Row[];
  return rows.map((r) => ({
    lane: r.lane as string,
    version: r.version as string,
    day: Number(r.day) * DAY_MS,
    outcome: r.outcome as InstallOutcome,
    installations: Number(r.n),
  }));
}

/** See Store.releaseHealth: each installation's latest report, of installations not deactivated. */
export function releaseHealth(db: Database, release: ReleaseKey, since: number, without?: string): { reports: number; failed: number } {
  const row = db
    .query(`SELECT count(*) AS n, coalesce(sum(outcome IN ('failed', 'rolled-back')), 0) AS failed FROM (
        SELECT r.outcome, row_number() OVER (PARTITION BY r.device_hash ORDER BY r.reported DESC) AS nth
        FROM install_reports r JOIN activations a ON a.id = r.activation_id JOIN licenses l ON l.id = a.license_id
        WHERE r.lane = ? AND r.version = ? AND r.reported >= ? AND a.deactivated IS NULL
          AND (? IS NULL OR json_extract(l.metadata, ?) IS NOT 'true')
      ) WHERE nth = 1`)
    .get(release.lane, release.version, since, without ?? null, metadataPath(without)) as Row;
  return { reports: Number(row.n), failed: Number(row.failed) };
}

export function releaseRunners(db: Database, release: ReleaseKey, limit: number): string[] {
  const rows = db
    .query(`SELECT device_hash FROM install_reports WHERE lane = $lane AND version = $version AND outcome = 'installed'
      UNION SELECT device_hash FROM activations WHERE (lane = $lane OR lane IS NULL) AND version = $version AND deactivated IS NULL LIMIT $limit`)
    .all({ lane: release.lane, version: release.version, limit }) as Row[];
  return rows.map((r) => r.device_hash as string);
}
