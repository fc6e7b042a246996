import { SQL } from "bun";
import { MIGRATIONS } from "./migrations";
import { applyControl, noControl } from "./release-controls";
import { activationFromRow, auditFromRow, challengeFromRow, DAY_MS, licenseFromRow, num, numOrNull, releaseControlFromRow, type Row } from "./rows";
import type {
  ActivateInput,
  ActivateResult,
  ActivationRecord,
  ActivationStatus,
  ActivationWithLicense,
  AuditFilter,
  AuditRecord,
  ChallengeRecord,
  ConsumeResult,
  DayCount,
  DeviceFields,
  EntitlementKind,
  InstallationCount,
  LicenseRecord,
  ReleaseControlOp,
  ReleaseControlRecord,
  ReleaseKey,
  Sighting,
  Store,
} from "./types";

/**
 * How often at most a process reads the release controls' generation (one indexed row). It bounds
 * how late a process serves a withdrawn release after another process withdrew it. Polling rather
 * than LISTEN/NOTIFY: a notification lost with a dropped connection would leave a process serving a
 * withdrawn release until its next restart, and a poll needs no connection of its own.
 */
export const CONTROLS_POLL_MS = 1000;

/**
 * Connects to the PostgreSQL database of `url` (its `search_path` query parameter, if any, picks the
 * schema) and applies pending migrations before returning.
 */
export async function openPostgresStore(url: string, opts: { max?: number; controlsPollMs?: number } = {}): Promise<PostgresStore> {
  const sql = new SQL(url, { max: opts.max ?? 10 });
  try {
    await migratePostgres(sql);
  } catch (e) {
    await sql.close();
    throw e;
  }
  return new PostgresStore(sql, opts.controlsPollMs ?? CONTROLS_POLL_MS);
}

export class PostgresStore implements Store {
  readonly kind = "postgres" as const;

  private controls = { generation: 0, readAt: -Infinity, reading: null as Promise<number> | null };

  constructor(
    readonly sql: SQL,
    private readonly controlsPollMs = CONTROLS_POLL_MS,
  ) {}

  async createLicense(l: LicenseRecord): Promise<void> {
    await this.sql`INSERT INTO licenses ${this.sql(licenseRow(l))}`;
  }

  async upsertStaffLicense(l: LicenseRecord): Promise<LicenseRecord> {
    const [r] = await this.sql`INSERT INTO licenses ${this.sql(licenseRow(l))}
      ON CONFLICT (id) DO UPDATE SET licensee = excluded.licensee, organization = excluded.organization,
      channels = excluded.channels, seats = excluded.seats RETURNING *`;
    return licenseFromRow(r);
  }

  async getLicense(id: string): Promise<LicenseRecord | null> {
    const [r] = await this.sql`SELECT * FROM licenses WHERE id = ${id}`;
    return r ? licenseFromRow(r) : null;
  }

  async findLicenseByKeyHash(keyHash: string): Promise<LicenseRecord | null> {
    const [r] = await this.sql`SELECT * FROM licenses WHERE key_hash = ${keyHash}`;
    return r ? licenseFromRow(r) : null;
  }

  async listLicenses(): Promise<LicenseRecord[]> {
    return (await this.sql`SELECT * FROM licenses ORDER BY issued, id`).map(licenseFromRow);
  }

  async revokeLicense(id: string, now: number): Promise<boolean> {
    return (await this.sql`UPDATE licenses SET revoked = ${now} WHERE id = ${id} AND revoked IS NULL`).count > 0;
  }

  // The license row lock serialises every activation of one license across all processes: after it
  // is granted, the count below sees every seat committed before, and no other can be taken until
  // this transaction ends. Activations of different licenses do not wait for each other.
  async activate(input: ActivateInput): Promise<ActivateResult> {
    return this.sql.begin(async (tx): Promise<ActivateResult> => {
      const [license] = await tx`SELECT seats FROM licenses WHERE id = ${input.licenseId} FOR UPDATE`;
      if (!license) throw new Error(`no license ${input.licenseId}`);
      const [existing] = await tx`SELECT id FROM activations
        WHERE license_id = ${input.licenseId} AND installation = ${input.installation} AND deactivated IS NULL`;
      const countActive = async () =>
        num((await tx`SELECT count(*) AS n FROM activations WHERE license_id = ${input.licenseId} AND deactivated IS NULL`)[0].n);
      // A deactivation does not take the license lock: if one commits between the select and this
      // update, the update finds no active row and the installation takes a new seat below.
      const [reused] = existing
        ? await tx`UPDATE activations SET product = ${input.product}, name = ${input.name},
            platform = ${input.platform}, version = ${input.version}, last_seen = ${input.now}
            WHERE id = ${existing.id} AND deactivated IS NULL RETURNING *`
        : [];
      const audit = async (activationId: string) => {
        if (input.audit) await tx`INSERT INTO audit ${tx(auditRow({ ...input.audit, activationId }))}`;
      };
      if (reused) {
        await audit(reused.id);
        return { outcome: "reused", activation: activationFromRow(reused), seatsUsed: await countActive() };
      }
      const used = await countActive();
      if (used >= num(license.seats)) {
        const holders = await tx`SELECT * FROM activations
          WHERE license_id = ${input.licenseId} AND deactivated IS NULL ORDER BY created, id`;
        return { outcome: "seat_limit", holders: holders.map(activationFromRow) };
      }
      const [row] = await tx`INSERT INTO activations ${tx({
        id: input.newId,
        license_id: input.licenseId,
        kind: input.kind,
        installation: input.installation,
        device_hash: input.deviceHash,
        product: input.product,
        name: input.name,
        platform: input.platform,
        version: input.version,
        created: input.now,
        last_seen: input.now,
      })} RETURNING *`;
      await audit(row.id);
      return { outcome: "created", activation: activationFromRow(row), seatsUsed: used + 1 };
    });
  }

  async getActivationWithLicense(id: string): Promise<ActivationWithLicense | null> {
    const [r] = await this.sql.unsafe(`SELECT ${ACTIVATION_WITH_LICENSE_COLUMNS} FROM activations a JOIN licenses l ON l.id = a.license_id WHERE a.id = $1`, [id]);
    return r ? activationWithLicenseFromRow(r) : null;
  }

  async getActivation(id: string): Promise<ActivationRecord | null> {
    const [r] = await this.sql`SELECT * FROM activations WHERE id = ${id}`;
    return r ? activationFromRow(r) : null;
  }

  async activationStatus(id: string): Promise<ActivationStatus | null> {
    const [r] = await this.sql`SELECT a.deactivated, l.revoked AS license_revoked, l.expires AS license_expires
      FROM activations a JOIN licenses l ON l.id = a.license_id WHERE a.id = ${id}`;
    return r
      ? { deactivated: numOrNull(r.deactivated), licenseRevoked: numOrNull(r.license_revoked), licenseExpires: numOrNull(r.license_expires) }
      : null;
  }

  async touchActivation(id: string, d: DeviceFields, now: number): Promise<void> {
    await this.sql`UPDATE activations SET product = ${d.product}, name = ${d.name}, platform = ${d.platform},
      version = ${d.version}, last_seen = ${now} WHERE id = ${id}`;
  }

  async listActivations(licenseId: string): Promise<ActivationRecord[]> {
    return (await this.sql`SELECT * FROM activations WHERE license_id = ${licenseId} ORDER BY created, id`).map(activationFromRow);
  }

  async countActiveSeats(licenseId: string): Promise<number> {
    const [r] = await this.sql`SELECT count(*) AS n FROM activations WHERE license_id = ${licenseId} AND deactivated IS NULL`;
    return num(r.n);
  }

  // Locks in the order activate takes them (license row, then activation row): the seat-count
  // trigger updates the license row, and the opposite order would deadlock with an activation of
  // the same license.
  async deactivate(id: string, now: number): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const [a] = await tx`SELECT license_id FROM activations WHERE id = ${id}`;
      if (!a) return false;
      await tx`SELECT 1 FROM licenses WHERE id = ${a.license_id} FOR UPDATE`;
      return (await tx`UPDATE activations SET deactivated = ${now} WHERE id = ${id} AND deactivated IS NULL`).count > 0;
    });
  }

  async createChallenge(c: ChallengeRecord): Promise<void> {
    await this.sql`INSERT INTO challenges (nonce_hash, installation, created, expires, used)
      VALUES (${c.nonceHash}, ${c.installation}, ${c.created}, ${c.expires}, NULL)`;
  }

  async findChallenge(nonceHash: string): Promise<ChallengeRecord | null> {
    const [r] = await this.sql`SELECT * FROM challenges WHERE nonce_hash = ${nonceHash}`;
    return r ? challengeFromRow(r) : null;
  }

  // One conditional UPDATE: the row lock it takes makes a racing second UPDATE re-check `used`
  // after the first commits, so exactly one caller gets the row back.
  async consumeChallenge(nonceHash: string, now: number): Promise<ConsumeResult> {
    const [r] = await this.sql`UPDATE challenges SET used = ${now} WHERE nonce_hash = ${nonceHash} AND used IS NULL RETURNING *`;
    if (r) return { outcome: "consumed", challenge: challengeFromRow(r) };
    const [exists] = await this.sql`SELECT 1 FROM challenges WHERE nonce_hash = ${nonceHash}`;
    return exists ? { outcome: "used" } : { outcome: "unknown" };
  }

  async pruneChallenges(before: number): Promise<number> {
    return (await this.sql`DELETE FROM challenges WHERE expires < ${before}`).count;
  }

  async writeAudit(a: AuditRecord): Promise<void> {
    await this.sql`INSERT INTO audit ${this.sql(auditRow(a))}`;
  }

  async listAudit(f: AuditFilter): Promise<AuditRecord[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    const add = (clause: string, value: string | number) => {
      params.push(value);
      where.push(clause.replace("?", `$${params.length}`));
    };
    if (f.licenseId !== undefined) add("license_id = ?", f.licenseId);
    if (f.activationId !== undefined) add("activation_id = ?", f.activationId);
    if (f.error !== undefined) add("error = ?", f.error);
    if (f.since !== undefined) add("time >= ?", f.since);
    if (f.until !== undefined) add("time < ?", f.until);
    params.push(f.limit ?? 1000);
    const text = `SELECT * FROM audit ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY time DESC, ref LIMIT $${params.length}`;
    return (await this.sql.unsafe(text, params)).map(auditFromRow);
  }

  async pruneAudit(before: number): Promise<number> {
    return (await this.sql`DELETE FROM audit WHERE time < ${before}`).count;
  }

  async applyReleaseControl(key: ReleaseKey, op: ReleaseControlOp, now: number): Promise<{ changed: boolean; control: ReleaseControlRecord }> {
    const result = await this.sql.begin(async (tx) => {
      // Serialises racing controls of one release (its row may not exist yet, so a row lock would not).
      await tx`SELECT pg_advisory_xact_lock(hashtext('keyturn release control ' || ${key.lane} || ' ' || ${key.version}))`;
      const [row] = await tx`SELECT * FROM release_controls WHERE lane = ${key.lane} AND version = ${key.version}`;
      const before = row ? releaseControlFromRow(row) : noControl(key, now);
      const after = applyControl(before, op, now);
      if (!after) return { changed: false, control: before };
      await tx`INSERT INTO release_controls (lane, version, halted, halted_ms, withdrawn, updated)
        VALUES (${key.lane}, ${key.version}, ${after.halted}, ${after.haltedMs}, ${after.withdrawn}, ${after.updated})
        ON CONFLICT (lane, version) DO UPDATE SET halted = excluded.halted, halted_ms = excluded.halted_ms,
        withdrawn = excluded.withdrawn, updated = excluded.updated`;
      await tx`UPDATE release_controls_generation SET generation = generation + 1 WHERE id = 1`;
      return { changed: true, control: after };
    });
    // This process sees its own change at once.
    if (result.changed) this.controls.readAt = -Infinity;
    return result;
  }

  async listReleaseControls(): Promise<ReleaseControlRecord[]> {
    return (await this.sql`SELECT * FROM release_controls ORDER BY lane, version`).map(releaseControlFromRow);
  }

  async releaseControlsGeneration(): Promise<number> {
    const c = this.controls;
    if (performance.now() - c.readAt < this.controlsPollMs) return c.generation;
    c.reading ??= (async () => {
      try {
        const started = performance.now();
        const [r] = await this.sql`SELECT generation FROM release_controls_generation WHERE id = 1`;
        c.generation = num(r.generation);
        c.readAt = started;
        return c.generation;
      } finally {
        c.reading = null;
      }
    })();
    return c.reading;
  }

  async recordKnownReleases(releases: readonly ReleaseKey[], now: number): Promise<ReleaseKey[]> {
    if (releases.length === 0) return [];
    const rows = await this.sql`INSERT INTO known_releases (lane, version, first_seen)
      SELECT lane, version, ${now} FROM unnest(${this.sql.array(releases.map((r) => r.lane), "TEXT")}::text[], ${this.sql.array(releases.map((r) => r.version), "TEXT")}::text[]) AS k(lane, version)
      ON CONFLICT DO NOTHING RETURNING lane, version`;
    return rows.map((r: Row) => ({ lane: r.lane, version: r.version }));
  }

  async recordSightings(sightings: readonly Sighting[]): Promise<void> {
    if (sightings.length === 0) return;
    await this.sql`UPDATE activations a SET last_seen = greatest(a.last_seen, s.last_seen), lane = coalesce(s.lane, a.lane)
      FROM unnest(${this.sql.array(sightings.map((s) => s.activationId), "TEXT")}::text[],
        ${this.sql.array(sightings.map((s) => s.lastSeen), "INT8")}::bigint[],
        ${this.sql.array(sightings.map((s) => s.lane), "TEXT")}::text[]) AS s(id, last_seen, lane)
      WHERE a.id = s.id`;
  }

  async installationsSeen(since: number): Promise<InstallationCount[]> {
    const rows = await this.sql`SELECT product, lane, version, count(*) AS n FROM activations
      WHERE deactivated IS NULL AND last_seen >= ${since} GROUP BY product, lane, version ORDER BY lane IS NULL, lane, product, version`;
    return rows.map((r: Row) => ({ product: r.product, lane: r.lane, version: r.version, installations: num(r.n) }));
  }

  async devicesOnLane(lane: string, since: number, limit: number): Promise<{ deviceHash: string; kind: EntitlementKind }[]> {
    const rows = await this.sql`SELECT device_hash, kind FROM activations
      WHERE lane = ${lane} AND deactivated IS NULL AND last_seen >= ${since} LIMIT ${limit}`;
    return rows.map((r: Row) => ({ deviceHash: r.device_hash, kind: r.kind }));
  }

  async activationsPerDay(since: number): Promise<DayCount[]> {
    const rows = await this.sql.unsafe(
      `SELECT time / ${DAY_MS} AS day,
        count(*) FILTER (WHERE outcome = 'ok') AS activations,
        count(*) FILTER (WHERE error = 'seat_limit') AS refusals
      FROM audit WHERE time >= $1 AND action IN ('activate', 'sign-in') GROUP BY day ORDER BY day`,
      [since],
    );
    return rows.map((r: Row) => ({ day: num(r.day) * DAY_MS, activations: num(r.activations), seatLimitRefusals: num(r.refusals) }));
  }

  async licensesExpiring(from: number, to: number, limit: number): Promise<LicenseRecord[]> {
    const rows = await this.sql`SELECT * FROM licenses WHERE kind = 'license' AND revoked IS NULL
      AND expires >= ${from} AND expires < ${to} ORDER BY expires, id LIMIT ${limit}`;
    return rows.map(licenseFromRow);
  }

  async ping(): Promise<void> {
    await this.sql`SELECT 1`;
  }

  async close(): Promise<void> {
    await this.sql.close();
  }
}

/** A license as a row of the licenses table (column names as keys). */
export function licenseRow(l: LicenseRecord) {
  return {
    id: l.id,
    kind: l.kind,
    key_hash: l.keyHash,
    licensee: l.licensee,
    organization: l.organization,
    plan: l.plan,
    plan_title: l.planTitle,
    channels: JSON.stringify(l.channels),
    seats: l.seats,
    issued: l.issued,
    expires: l.expires,
    revoked: l.revoked,
  };
}

function auditRow(a: AuditRecord) {
  return {
    ref: a.ref,
    time: a.time,
    address: a.address,
    action: a.action,
    activation_id: a.activationId,
    license_id: a.licenseId,
    outcome: a.outcome,
    error: a.error,
  };
}

/**
 * Applies every migration the schema has not seen, all in one transaction under an advisory lock
 * keyed by the schema: processes starting together queue on the lock, and each later one finds the
 * versions the first recorded. The transaction-scoped lock cannot outlive a crashed migrator.
 */
export async function migratePostgres(sql: SQL): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('keyturn migrations ' || current_schema()))`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)`;
    const done = new Set((await tx`SELECT version FROM schema_migrations`).map((r: Row) => num(r.version)));
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.postgres);
      await tx`INSERT INTO schema_migrations (version, applied) VALUES (${m.version}, ${Date.now()})`;
    }
  });
}

/** An activation with its license in one query: the license's columns prefixed `l_`. */
const ACTIVATION_WITH_LICENSE_COLUMNS = `a.*, l.kind AS l_kind, l.key_hash AS l_key_hash, l.licensee AS l_licensee,
  l.organization AS l_organization, l.plan AS l_plan, l.plan_title AS l_plan_title, l.channels AS l_channels,
  l.seats AS l_seats, l.issued AS l_issued, l.expires AS l_expires, l.revoked AS l_revoked, l.active_seats AS l_active_seats`;

const activationWithLicenseFromRow = (r: Row): ActivationWithLicense => ({
  activation: activationFromRow(r),
  license: licenseFromRow({
    id: r.license_id,
    kind: r.l_kind,
    key_hash: r.l_key_hash,
    licensee: r.l_licensee,
    organization: r.l_organization,
    plan: r.l_plan,
    plan_title: r.l_plan_title,
    channels: r.l_channels,
    seats: r.l_seats,
    issued: r.l_issued,
    expires: r.l_expires,
    revoked: r.l_revoked,
  }),
  seatsUsed: num(r.l_active_seats),
});
