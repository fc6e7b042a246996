import type { MeterRecord, MeterSet, MeterTotal, MeterUse, MeterUseResult } from "./meter-types";
import type { Row } from "./rows";
import type { SqliteWriter } from "./sqlite-writer";

export const meterFromRow = (r: Row): MeterRecord => ({
  licenseId: r.license_id,
  name: r.name,
  limit: Number(r.lim),
  period: r.period === null ? null : Number(r.period),
  windowStart: Number(r.window_start),
  used: Number(r.used),
});

/** Replaces the licence's meters (MeterSet), inside the caller's transaction. */
export function writeMetersSqlite(w: SqliteWriter, set: MeterSet): void {
  const names = set.meters.map((m) => m.name);
  w.db.query(`DELETE FROM license_meters WHERE license_id = ? AND name NOT IN (SELECT value FROM json_each(?))`).run(set.licenseId, JSON.stringify(names));
  const upsert = w.db.query(`INSERT INTO license_meters (license_id, name, lim, period, window_start, used)
    VALUES ($licenseId, $name, $limit, $period, $now, 0)
    ON CONFLICT (license_id, name) DO UPDATE SET lim = excluded.lim,
      window_start = CASE WHEN period IS excluded.period THEN window_start ELSE excluded.window_start END,
      used = CASE WHEN period IS excluded.period THEN used ELSE 0 END,
      period = excluded.period`);
  for (const m of set.meters) upsert.run({ licenseId: set.licenseId, name: m.name, limit: m.limit, period: m.period, now: set.now });
}

export function listMetersSqlite(w: SqliteWriter, licenseId: string): MeterRecord[] {
  return (w.db.query("SELECT * FROM license_meters WHERE license_id = ? ORDER BY name").all(licenseId) as Row[]).map(meterFromRow);
}

/**
 * Under the write lock (BEGIN IMMEDIATE, held from the read to the commit): no other process
 * counts a use of the meter between the read and the write, so uses never pass the limit.
 */
export function useMeterSqlite(w: SqliteWriter, use: MeterUse): Promise<MeterUseResult> {
  return w.write((): MeterUseResult => {
    const done = w.db.query("SELECT meter, amount, answer FROM meter_uses WHERE license_id = ? AND key = ?").get(use.licenseId, use.key) as Row | null;
    if (done) return { outcome: "replayed", answer: done.answer, meter: done.meter, amount: Number(done.amount) };
    const row = w.db.query("SELECT * FROM license_meters WHERE license_id = ? AND name = ?").get(use.licenseId, use.meter) as Row | null;
    if (!row) return { outcome: "unknown" };
    const before = meterFromRow(row);
    const after = use.apply(before);
    if (!after) return { outcome: "refused", meter: before };
    w.db
      .query("UPDATE license_meters SET window_start = ?, used = ? WHERE license_id = ? AND name = ?")
      .run(after.windowStart, after.used, use.licenseId, use.meter);
    const journal = use.journal(before, after);
    w.db
      .query("INSERT INTO meter_uses (license_id, key, meter, amount, answer, created) VALUES (?, ?, ?, ?, ?, ?)")
      .run(use.licenseId, use.key, use.meter, use.amount, journal.answer, use.now);
    if (journal.audit) w.insertAudit(journal.audit);
    for (const e of journal.events) w.insertEvent(e);
    return { outcome: "used", answer: journal.answer };
  });
}

/** Use per meter name over licences not revoked, at `now`: a meter whose window ended counts as unused. */
export function meterTotalsSqlite(w: SqliteWriter, now: number): MeterTotal[] {
  const rows = w.db
    .query(`SELECT name, count(*) AS licenses, sum(cur) AS used, sum(lim) AS lim, sum(cur >= lim) AS exhausted FROM (
        SELECT m.name, m.lim, CASE WHEN m.period IS NULL OR m.window_start + m.period > $now THEN m.used ELSE 0 END AS cur
        FROM license_meters m JOIN licenses l ON l.id = m.license_id WHERE l.revoked IS NULL)
      GROUP BY name ORDER BY name`)
    .all({ now }) as Row[];
  return rows.map((r) => ({ name: r.name, licenses: Number(r.licenses), used: Number(r.used), limit: Number(r.lim), exhausted: Number(r.exhausted) }));
}

export function pruneMeterUsesSqlite(w: SqliteWriter, before: number): number {
  return w.db.query("DELETE FROM meter_uses WHERE created < ?").run(before).changes;
}
