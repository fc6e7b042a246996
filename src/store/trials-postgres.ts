import { activationFromRow, licenseFromRow } from "./rows";
import type { PostgresWriter } from "./postgres-writer";
import type { ConversionJournal, StartTrialResult, TrialCounts, TrialJournal, TrialQuery, TrialRecord } from "./trial-types";
import { writeMetersPostgres } from "./meters-postgres";
import { trialFromRow } from "./trials-sqlite";
import type { LicenseRecord } from "./types";

/**
 * A transaction-scoped advisory lock per device hash orders racing starts for one device (in any
 * process): the second waits, then finds the first's trial.
 */
export async function startTrialPostgres(w: PostgresWriter, trial: TrialRecord, license: LicenseRecord, journal: TrialJournal): Promise<StartTrialResult> {
  return w.sql.begin(async (tx): Promise<StartTrialResult> => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('keyturn trial ' || ${trial.deviceHash}))`;
    const [found] = await tx`SELECT * FROM trials WHERE device_hash = ${trial.deviceHash}`;
    if (found) return { outcome: "existing", trial: trialFromRow(found) };
    await w.insertLicense(tx, license);
    if (journal.meters) await writeMetersPostgres(tx, journal.meters);
    await tx`INSERT INTO trials (device_hash, license_id, started, converted, converted_to)
      VALUES (${trial.deviceHash}, ${trial.licenseId}, ${trial.started}, NULL, NULL)`;
    if (journal.audit) await w.insertAudit(tx, journal.audit);
    if (journal.event) await w.insertEvent(tx, journal.event);
    return { outcome: "started", trial: { ...trial, converted: null, convertedTo: null } };
  });
}

// Locks in activate's order (licence row, then its activations) so a conversion and an activation
// of the trial cannot deadlock.
export async function convertTrialPostgres(
  w: PostgresWriter,
  deviceHash: string,
  toLicenseId: string,
  now: number,
  journal: ConversionJournal,
): Promise<TrialRecord | null> {
  return w.sql.begin(async (tx): Promise<TrialRecord | null> => {
    const [open] = await tx`SELECT license_id FROM trials WHERE device_hash = ${deviceHash} AND converted IS NULL`;
    if (!open) return null;
    await tx`SELECT 1 FROM licenses WHERE id = ${open.license_id} FOR UPDATE`;
    const [row] = await tx`UPDATE trials SET converted = ${now}, converted_to = ${toLicenseId}
      WHERE device_hash = ${deviceHash} AND converted IS NULL RETURNING *`;
    if (!row) return null;
    const trial = trialFromRow(row);
    const [l] = await tx`UPDATE licenses SET expires = LEAST(coalesce(expires, ${now}), ${now}) WHERE id = ${trial.licenseId} RETURNING *`;
    const ended = (await tx`UPDATE activations SET deactivated = ${now} WHERE license_id = ${trial.licenseId} AND deactivated IS NULL RETURNING *`).map(
      activationFromRow,
    );
    const j = journal(trial, licenseFromRow(l), ended);
    if (j.audit) await w.insertAudit(tx, j.audit);
    for (const e of j.events) await w.insertEvent(tx, e);
    return trial;
  });
}

export async function trialOfLicensePostgres(w: PostgresWriter, licenseId: string): Promise<TrialRecord | null> {
  const [r] = await w.sql`SELECT * FROM trials WHERE license_id = ${licenseId}`;
  return r ? trialFromRow(r) : null;
}

export async function findTrialPostgres(w: PostgresWriter, deviceHash: string): Promise<TrialRecord | null> {
  const [r] = await w.sql`SELECT * FROM trials WHERE device_hash = ${deviceHash}`;
  return r ? trialFromRow(r) : null;
}

export async function listTrialsPostgres(w: PostgresWriter, q: TrialQuery): Promise<TrialRecord[]> {
  const rows = q.after
    ? await w.sql`SELECT * FROM trials WHERE started < ${q.after.started} OR (started = ${q.after.started} AND device_hash > ${q.after.deviceHash})
        ORDER BY started DESC, device_hash LIMIT ${q.limit}`
    : await w.sql`SELECT * FROM trials ORDER BY started DESC, device_hash LIMIT ${q.limit}`;
  return rows.map(trialFromRow);
}

export async function trialCountsPostgres(w: PostgresWriter): Promise<TrialCounts> {
  const [r] = await w.sql`SELECT count(*) AS started, count(converted) AS converted FROM trials`;
  return { started: Number(r.started), converted: Number(r.converted) };
}
