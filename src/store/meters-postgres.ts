import type { SQL } from "bun";
import type { MeterRecord, MeterSet, MeterTotal, MeterUse, MeterUseResult } from "./meter-types";
import { meterFromRow } from "./meters-sqlite";
import type { PostgresWriter } from "./postgres-writer";

/** Replaces the licence's meters (MeterSet), inside the caller's transaction. */
export async function writeMetersPostgres(tx: SQL, set: MeterSet): Promise<void> {
  const names = set.meters.map((m) => m.name);
  await tx`DELETE FROM license_meters WHERE license_id = ${set.licenseId} AND NOT (name = ANY(${tx.array(names, "text")}))`;
  for (const m of set.meters)
    await tx`INSERT INTO license_meters (license_id, name, lim, period, window_start, used)
      VALUES (${set.licenseId}, ${m.name}, ${m.limit}, ${m.period}, ${set.now}, 0)
      ON CONFLICT (license_id, name) DO UPDATE SET lim = excluded.lim,
        window_start = CASE WHEN license_meters.period IS NOT DISTINCT FROM excluded.period THEN license_meters.window_start ELSE excluded.window_start END,
        used = CASE WHEN license_meters.period IS NOT DISTINCT FROM excluded.period THEN license_meters.used ELSE 0 END,
        period = excluded.period`;
}

export async function listMetersPostgres(w: PostgresWriter, licenseId: string): Promise<MeterRecord[]> {
  return (await w.sql`SELECT * FROM license_meters WHERE license_id = ${licenseId} ORDER BY name`).map(meterFromRow);
}

/** A use whose key another transaction recorded first (for another meter): answered as a replay after the rollback. */
class KeyTaken extends Error {}

/**
 * The meter's row is locked (FOR UPDATE) from the read to the commit: a use in another process
 * waits, then reads what this one wrote, so uses never pass the limit. The key is looked up after
 * the lock: a retry racing its first attempt on the same meter finds the first's answer.
 */
export async function useMeterPostgres(w: PostgresWriter, use: MeterUse): Promise<MeterUseResult> {
  const replayed = async (): Promise<MeterUseResult | null> => {
    const [done] = await w.sql`SELECT meter, amount, answer FROM meter_uses WHERE license_id = ${use.licenseId} AND key = ${use.key}`;
    return done ? { outcome: "replayed", answer: done.answer, meter: done.meter, amount: Number(done.amount) } : null;
  };
  try {
    return await w.sql.begin(async (tx): Promise<MeterUseResult> => {
      const [row] = await tx`SELECT * FROM license_meters WHERE license_id = ${use.licenseId} AND name = ${use.meter} FOR UPDATE`;
      const [done] = await tx`SELECT meter, amount, answer FROM meter_uses WHERE license_id = ${use.licenseId} AND key = ${use.key}`;
      if (done) return { outcome: "replayed", answer: done.answer, meter: done.meter, amount: Number(done.amount) };
      if (!row) return { outcome: "unknown" };
      const before = meterFromRow(row);
      const after = use.apply(before);
      if (!after) return { outcome: "refused", meter: before };
      await tx`UPDATE license_meters SET window_start = ${after.windowStart}, used = ${after.used} WHERE license_id = ${use.licenseId} AND name = ${use.meter}`;
      const journal = use.journal(before, after);
      const inserted = await tx`INSERT INTO meter_uses (license_id, key, meter, amount, answer, created)
        VALUES (${use.licenseId}, ${use.key}, ${use.meter}, ${use.amount}, ${journal.answer}, ${use.now}) ON CONFLICT DO NOTHING`;
      if (inserted.count === 0) throw new KeyTaken();
      if (journal.audit) await w.insertAudit(tx, journal.audit);
      for (const e of journal.events) await w.insertEvent(tx, e);
      return { outcome: "used", answer: journal.answer };
    });
  } catch (e) {
    if (!(e instanceof KeyTaken)) throw e;
    return (await replayed())!;
  }
}

/** Use per meter name over licences not revoked, at `now`: a meter whose window ended counts as unused. */
export async function meterTotalsPostgres(w: PostgresWriter, now: number): Promise<MeterTotal[]> {
  const rows = await w.sql`SELECT name, count(*) AS licenses, sum(cur) AS used, sum(lim) AS lim, sum(CASE WHEN cur >= lim THEN 1 ELSE 0 END) AS exhausted FROM (
      SELECT m.name, m.lim, CASE WHEN m.period IS NULL OR m.window_start + m.period > ${now} THEN m.used ELSE 0 END AS cur
      FROM license_meters m JOIN licenses l ON l.id = m.license_id WHERE l.revoked IS NULL) t
    GROUP BY name ORDER BY name`;
  return rows.map((r: Record<string, unknown>) => ({
    name: r.name as string,
    licenses: Number(r.licenses),
    used: Number(r.used),
    limit: Number(r.lim),
    exhausted: Number(r.exhausted),
  }));
}

export async function pruneMeterUsesPostgres(w: PostgresWriter, before: number): Promise<number> {
  return (await w.sql`DELETE FROM meter_uses WHERE created < ${before}`).count;
}
