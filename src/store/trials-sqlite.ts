import { activationFromRow, licenseFromRow, type Row } from "./rows";
import type { SqliteWriter } from "./sqlite-writer";
import type { ConversionJournal, StartTrialResult, TrialCounts, TrialJournal, TrialQuery, TrialRecord } from "./trial-types";
import { writeMetersSqlite } from "./meters-sqlite";
import type { LicenseRecord } from "./types";

export const trialFromRow = (r: Row): TrialRecord => ({
  deviceHash: r.device_hash,
  licenseId: r.license_id,
  started: Number(r.started),
  converted: r.converted === null ? null : Number(r.converted),
  convertedTo: r.converted_to,
});

/** Under the write lock: of racing starts for one device, the first creates, the others find it. */
export function startTrialSqlite(w: SqliteWriter, trial: TrialRecord, license: LicenseRecord, journal: TrialJournal): Promise<StartTrialResult> {
  return w.write((): StartTrialResult => {
    const found = w.db.query("SELECT * FROM trials WHERE device_hash = ?").get(trial.deviceHash) as Row | null;
    if (found) return { outcome: "existing", trial: trialFromRow(found) };
    w.insertLicense(license);
    if (journal.meters) writeMetersSqlite(w, journal.meters);
    w.db
      .query("INSERT INTO trials (device_hash, license_id, started, converted, converted_to) VALUES (?, ?, ?, NULL, NULL)")
      .run(trial.deviceHash, trial.licenseId, trial.started);
    if (journal.audit) w.insertAudit(journal.audit);
    if (journal.event) w.insertEvent(journal.event);
    return { outcome: "started", trial: { ...trial, converted: null, convertedTo: null } };
  });
}

export function convertTrialSqlite(
  w: SqliteWriter,
  deviceHash: string,
  toLicenseId: string,
  now: number,
  journal: ConversionJournal,
): Promise<TrialRecord | null> {
  return w.write((): TrialRecord | null => {
    const row = w.db
      .query("UPDATE trials SET converted = ?, converted_to = ? WHERE device_hash = ? AND converted IS NULL RETURNING *")
      .get(now, toLicenseId, deviceHash) as Row | null;
    if (!row) return null;
    const trial = trialFromRow(row);
    const license = licenseFromRow(
      w.db.query("UPDATE licenses SET expires = min(coalesce(expires, ?), ?) WHERE id = ? RETURNING *").get(now, now, trial.licenseId) as Row,
    );
    const ended = (
      w.db.query("UPDATE activations SET deactivated = ? WHERE license_id = ? AND deactivated IS NULL RETURNING *").all(now, trial.licenseId) as Row[]
    ).map(activationFromRow);
    const j = journal(trial, license, ended);
    if (j.audit) w.insertAudit(j.audit);
    for (const e of j.events) w.insertEvent(e);
    return trial;
  });
}

export function trialOfLicenseSqlite(w: SqliteWriter, licenseId: string): TrialRecord | null {
  const r = w.db.query("SELECT * FROM trials WHERE license_id = ?").get(licenseId) as Row | null;
  return r ? trialFromRow(r) : null;
}

export function findTrialSqlite(w: SqliteWriter, deviceHash: string): TrialRecord | null {
  const r = w.db.query("SELECT * FROM trials WHERE device_hash = ?").get(deviceHash) as Row | null;
  return r ? trialFromRow(r) : null;
}

export function listTrialsSqlite(w: SqliteWriter, q: TrialQuery): TrialRecord[] {
  const after = q.after ? "WHERE started < $started OR (started = $started AND device_hash > $hash)" : "";
  return (
    w.db
      .query(`SELECT * FROM trials ${after} ORDER BY started DESC, device_hash LIMIT $limit`)
      .all({ limit: q.limit, ...(q.after ? { started: q.after.started, hash: q.after.deviceHash } : {}) }) as Row[]
  ).map(trialFromRow);
}

export function trialCountsSqlite(w: SqliteWriter): TrialCounts {
  const r = w.db.query("SELECT count(*) AS started, count(converted) AS converted FROM trials").get() as Row;
  return { started: Number(r.started), converted: Number(r.converted) };
}
