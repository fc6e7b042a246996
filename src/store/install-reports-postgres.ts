import type { SQL } from "bun";
import { DAY_MS } from "./rows";
import type { InstallOutcome, InstallReport, InstallReportCount, ReleaseKey } from "./types";

type Row = Record<string, unknown>;

/** Install reports on PostgreSQL: as install-reports-sqlite.ts, in one transaction. */
export async function writeInstallReportsPg(sql: SQL, reports: readonly InstallReport[]): Promise<void> {
  await sql.begin(async (tx) => {
    for (const r of reports) {
      await tx`INSERT INTO install_reports (lane, version, activation_id, device_hash, from_version, outcome, code, reported)
        VALUES (${r.lane}, ${r.version}, ${r.activationId}, ${r.deviceHash}, ${r.from}, ${r.outcome}, ${r.code}, ${r.reported})
        ON CONFLICT (lane, version, activation_id) DO UPDATE SET device_hash = excluded.device_hash, from_version = excluded.from_version,
        outcome = excluded.outcome, code = excluded.code, reported = excluded.reported WHERE excluded.reported >= install_reports.reported`;
      const running = r.outcome === "installed" ? r.version : r.outcome === "rolled-back" ? r.from : null;
      if (running !== null) await tx`UPDATE activations SET version = ${running} WHERE id = ${r.activationId} AND deactivated IS NULL`;
    }
  });
}

export async function installReportsPerDayPg(sql: SQL, since: number): Promise<InstallReportCount[]> {
  const rows: Row[] = await sql`SELECT lane, version, reported / ${DAY_MS} AS day, outcome, count(*) AS n FROM install_reports
    WHERE reported >= ${since} GROUP BY lane, version, day, outcome ORDER BY lane, version, day, outcome`;
  return rows.map((r) => ({
    lane: r.lane as string,
    version: r.version as string,
    day: Number(r.day) * DAY_MS,
    outcome: r.outcome as InstallOutcome,
    installations: Number(r.n),
  }));
}

/** See Store.releaseHealth: each installation's latest report, of installations not deactivated. */
export async function releaseHealthPg(sql: SQL, release: ReleaseKey, since: number, without?: string): Promise<{ reports: number; failed: number }> {
  const [row] = await sql`SELECT count(*) AS n, count(*) FILTER (WHERE outcome IN ('failed', 'rolled-back')) AS failed FROM (
      SELECT r.outcome, row_number() OVER (PARTITION BY r.device_hash ORDER BY r.reported DESC) AS nth
      FROM install_reports r JOIN activations a ON a.id = r.activation_id JOIN licenses l ON l.id = a.license_id
      WHERE r.lane = ${release.lane} AND r.version = ${release.version} AND r.reported >= ${since} AND a.deactivated IS NULL
        AND (${without ?? null}::text IS NULL OR (l.metadata::jsonb ->> ${without ?? ""}) IS DISTINCT FROM 'true')
    ) AS latest WHERE nth = 1`;
  return { reports: Number(row.n), failed: Number(row.failed) };
}

export async function releaseRunnersPg(sql: SQL, release: ReleaseKey, limit: number): Promise<string[]> {
  const rows: Row[] = await sql`SELECT device_hash FROM install_reports WHERE lane = ${release.lane} AND version = ${release.version} AND outcome = 'installed'
    UNION SELECT device_hash FROM activations WHERE (lane = ${release.lane} OR lane IS NULL) AND version = ${release.version} AND deactivated IS NULL LIMIT ${limit}`;
  return rows.map((r) => r.device_hash as string);
}
