import { SQL } from "bun";
import { bridgeEventFromRow, bridgeEventParams } from "./bridge-rows";
import { installReportsPerDayPg, releaseHealthPg, releaseRunnersPg, writeInstallReportsPg } from "./install-reports-postgres";
import { MIGRATIONS } from "./migrations";
import { insertMailPostgres } from "./postgres-mail";
import {
  activationFromRow,
  adminTokenFromRow,
  consoleSessionFromRow,
  staffGroupsText,
  attemptFromRow,
  auditFromRow,
  challengeFromRow,
  containsPattern,
  DAY_MS,
  storedBucket,
  deliveryFromRow,
  endpointFromRow,
  eventFromRow,
  licenseFromRow,
  num,
  numOrNull,
  patchColumns,
  releaseControlFromRow,
  subscribers,
  type EventHead,
  type Row,
  featuresColumn,
} from "./rows";
import { applyControl, noControl } from "./release-controls";
import type { MeterRecord, MeterTotal, MeterUse, MeterUseResult } from "./meter-types";
import { listMetersPostgres, meterTotalsPostgres, pruneMeterUsesPostgres, useMeterPostgres, writeMetersPostgres } from "./meters-postgres";
import type { PostgresWriter } from "./postgres-writer";
import type { ConversionJournal, StartTrialResult, TrialCounts, TrialJournal, TrialQuery, TrialRecord } from "./trial-types";
import {
  convertTrialPostgres,
  findTrialPostgres,
  listTrialsPostgres,
  startTrialPostgres,
  trialCountsPostgres,
  trialOfLicensePostgres,
} from "./trials-postgres";
import type {
  ActivateInput,
  ActivateResult,
  ActivationRecord,
  ActivationStatus,
  ActivationWithLicense,
  AdminTokenRecord,
  ConsoleSessionRecord,
  AttemptOutcome,
  AttemptRecord,
  AuditFilter,
  AuditRecord,
  ChallengeRecord,
  ClaimedDelivery,
  ConsumeResult,
  DayCount,
  DeliveryFilter,
  DeliveryRecord,
  DeviceFields,
  EntitlementKind,
  EventFilter,
  EventRecord,
  FeedPosition,
  FeedStateQuery,
  FeedStateRow,
  IdempotencyRecord,
  IdempotentCreate,
  IdRange,
  InstallationCount,
  Journal,
  LicensePatch,
  LicenseQuery,
  LicenseRecord,
  NewEvent,
  ReleaseControlOp,
  ReleaseControlRecord,
  ReleaseKey,
  RevokedLicenseRecord,
  RolloutCountQuery,
  RolloutReach,
  SealedChange,
  SealedValue,
  Sighting,
  InstallReport,
  InstallReportCount,
  Store,
  UpdateLicenseResult,
  WebhookEndpointRecord,
  BridgeEventRecord,
  BridgeWrite,
  MailableLicences,
} from "./types";

type Tx = SQL;

const WHOLE: IdRange = { from: null, to: null };

/**
 * Inserts an outbox event inside `tx`. The advisory lock (one per schema, held to the commit)
 * orders the writers of events, so seq order is commit order: a feed reader that has seen seq N
 * never later finds a newly committed event below N.
 */
export async function insertEvent(tx: Tx, e: NewEvent): Promise<void> {
  if (!e.feed) {
    const [subscriber] = await tx`SELECT 1 FROM webhook_endpoints WHERE jsonb_exists(types::jsonb, ${e.type}) LIMIT 1`;
    if (!subscriber) return;
  }
  await tx`SELECT pg_advisory_xact_lock(hashtext('keyturn events ' || current_schema()))`;
  await tx`INSERT INTO events (id, type, time, data) VALUES (${e.id}, ${e.type}, ${e.time}, ${e.data})`;
}

/** A bridge event's row and its links; a recorded event fails the transaction (`orIgnore`: answers false instead). */
async function insertBridge(tx: Tx, w: BridgeWrite, orIgnore: boolean): Promise<boolean> {
  const row = bridgeEventParams(w.event);
  const inserted = orIgnore ? await tx`INSERT INTO bridge_events ${tx(row)} ON CONFLICT DO NOTHING` : await tx`INSERT INTO bridge_events ${tx(row)}`;
  if (inserted.count === 0) return false;
  for (const l of w.links)
    await tx`INSERT INTO bridge_links (provider, reference, license_id, alias) VALUES (${l.provider}, ${l.reference}, ${l.licenseId}, ${l.alias ?? null})
      ON CONFLICT (provider, reference) DO UPDATE SET license_id = excluded.license_id, alias = NULL
      WHERE bridge_links.license_id IS NULL AND excluded.license_id IS NOT NULL`;
  return true;
}

/** Writes a change's audit line and event inside the change's transaction. */
/** Journal.endsPortalSessions, inside the transaction of the change. */
async function endPortalSessions(tx: Tx, licenseId: string, j: Pick<Journal<never>, "endsPortalSessions">): Promise<void> {
  if (j.endsPortalSessions !== undefined)
    await tx`UPDATE console_sessions SET revoked = ${j.endsPortalSessions} WHERE kind = 'portal' AND license_id = ${licenseId} AND revoked IS NULL`;
}

async function journal<T>(tx: Tx, j: Journal<T>, after: T): Promise<void> {
  if (j.meters) await writeMetersPostgres(tx, j.meters);
  if (j.audit) await tx`INSERT INTO audit ${tx(auditRow(j.audit))}`;
  if (j.bridge) await insertBridge(tx, j.bridge(after), false);
  const event = j.event?.(after);
  if (event) await insertEvent(tx, event);
  for (const m of j.mail ?? []) await insertMailPostgres(tx, m);
}

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
  let applied: number[];
  try {
    applied = await migratePostgres(sql);
  } catch (e) {
    await sql.close();
    throw e;
  }
  return new PostgresStore(sql, opts.controlsPollMs ?? CONTROLS_POLL_MS, applied);
}

export class PostgresStore implements Store {
  readonly kind = "postgres" as const;

  private controls = { generation: 0, readAt: -Infinity, reading: null as Promise<number> | null };

  /** What the meters' and trials' modules write through (postgres-writer.ts). */
  private readonly writer: PostgresWriter;

  constructor(
    readonly sql: SQL,
    private readonly controlsPollMs = CONTROLS_POLL_MS,
    readonly migrationsApplied: readonly number[] = [],
  ) {
    this.writer = {
      sql,
      insertAudit: async (tx, line) => void (await tx`INSERT INTO audit ${tx(auditRow(line))}`),
      insertEvent,
      insertLicense: async (tx, license) => void (await tx`INSERT INTO licenses ${tx(licenseRow(license))}`),
    };
  }

  async createLicense(l: LicenseRecord, j: Journal<LicenseRecord> = {}): Promise<void> {
    if (!j.audit && !j.event && !j.meters && !j.bridge && !j.mail) {
      await this.sql`INSERT INTO licenses ${this.sql(licenseRow(l))}`;
      return;
    }
    await this.sql.begin(async (tx) => {
      await tx`INSERT INTO licenses ${tx(licenseRow(l))}`;
      await journal(tx, j, l);
    });
  }

  // The idempotency row is inserted first: a racing transaction with the same key waits on its
  // primary key until this one commits, then inserts nothing and reads the committed answer.
  async createLicenseIdempotent(l: LicenseRecord, idem: IdempotencyRecord, j: Journal<LicenseRecord>, expiredBefore: number): Promise<IdempotentCreate> {
    return this.sql.begin(async (tx): Promise<IdempotentCreate> => {
      await tx`DELETE FROM idempotency WHERE scope = ${idem.scope} AND key = ${idem.key} AND created < ${expiredBefore}`;
      const inserted = await tx`INSERT INTO idempotency (scope, key, request_hash, answer, created)
        VALUES (${idem.scope}, ${idem.key}, ${idem.requestHash}, ${idem.answer}, ${idem.created}) ON CONFLICT DO NOTHING`;
      if (inserted.count === 0) {
        const [r] = await tx`SELECT * FROM idempotency WHERE scope = ${idem.scope} AND key = ${idem.key}`;
        return {
          outcome: "replayed",
          record: { scope: r.scope, key: r.key, requestHash: r.request_hash, answer: r.answer, created: num(r.created) },
        };
      }
      await tx`INSERT INTO licenses ${tx(licenseRow(l))}`;
      await journal(tx, j, l);
      return { outcome: "created" };
    });
  }

  async pruneIdempotency(before: number): Promise<number> {
    return (await this.sql`DELETE FROM idempotency WHERE created < ${before}`).count + (await pruneMeterUsesPostgres(this.writer, before));
  }

  // The license row lock is the one activate takes: no seat can be taken between the check and the update.
  async updateLicense(id: string, patch: LicensePatch, j: Journal<LicenseRecord>): Promise<UpdateLicenseResult> {
    return this.sql.begin(async (tx): Promise<UpdateLicenseResult> => {
      const [current] = await tx`SELECT * FROM licenses WHERE id = ${id} FOR UPDATE`;
      if (!current) return { outcome: "unknown" };
      const used = num(current.active_seats);
      if (patch.seats !== undefined && patch.seats < used) return { outcome: "seats_in_use", seatsUsed: used };
      const { sets, params } = patchColumns(patch);
      if (sets.length === 0) {
        // Only the meters changed (their own table): still the change's audit line and event.
        if (j.meters) await journal(tx, j, licenseFromRow(current));
        return { outcome: "updated", license: licenseFromRow(current), seatsUsed: used };
      }
      const values = sets.map((c) => params[c]);
      const text = `UPDATE licenses SET ${sets.map((c, i) => `${c} = $${i + 1}`).join(", ")} WHERE id = $${sets.length + 1} RETURNING *`;
      const [r] = await tx.unsafe(text, [...values, id]);
      const license = licenseFromRow(r);
      await endPortalSessions(tx, id, j);
      await journal(tx, j, license);
      return { outcome: "updated", license, seatsUsed: used };
    });
  }

  async reinstateLicense(id: string, j: Journal<LicenseRecord>): Promise<LicenseRecord | null> {
    return this.sql.begin(async (tx) => {
      const [r] = await tx`UPDATE licenses SET revoked = NULL WHERE id = ${id} AND revoked IS NOT NULL RETURNING *`;
      if (!r) return null;
      const license = licenseFromRow(r);
      await journal(tx, j, license);
      return license;
    });
  }

  async searchLicenses(query: LicenseQuery): Promise<Array<{ license: LicenseRecord; seatsUsed: number }>> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    const p = (v: string | number) => (params.push(v), `$${params.length}`);
    if (query.text) {
      const t = p(containsPattern(query.text));
      where.push(`(lower(licensee) LIKE ${t} ESCAPE '\\' OR lower(organization) LIKE ${t} ESCAPE '\\'
        OR lower(coalesce(email, '')) LIKE ${t} ESCAPE '\\' OR lower(id) LIKE ${t} ESCAPE '\\')`);
    }
    if (query.status === "revoked") where.push("revoked IS NOT NULL");
    else if (query.status === "active") where.push(`revoked IS NULL AND (expires IS NULL OR expires > ${p(query.now)})`);
    else if (query.status === "expired") where.push(`revoked IS NULL AND expires <= ${p(query.now)}`);
    if (query.after) where.push(`(issued, id) > (${p(query.after.issued)}, ${p(query.after.id)})`);
    const text = `SELECT * FROM licenses ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY issued, id LIMIT ${p(query.limit)}`;
    return (await this.sql.unsafe(text, params)).map((r: Row) => ({ license: licenseFromRow(r), seatsUsed: num(r.active_seats) }));
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

  // The license row's lock (the UPDATE) orders this before any activation or refresh of the license
  // that follows: every token exp recorded before it is seen by the max below.
  async revokeLicense(id: string, now: number, j: Journal<RevokedLicenseRecord> = {}): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const [r] = await tx`UPDATE licenses SET revoked = ${now} WHERE id = ${id} AND revoked IS NULL RETURNING *`;
      if (!r) return false;
      await endPortalSessions(tx, id, j);
      const [t] = await tx`SELECT max(token_exp) AS exp FROM activations WHERE license_id = ${id}`;
      await journal(tx, j, { ...licenseFromRow(r), tokensExpire: numOrNull(t.exp) });
      return true;
    });
  }

  // The license row lock serialises every activation of one license across all processes: after it
  // is granted, the count below sees every seat committed before, and no other can be taken until
  // this transaction ends. Activations of different licenses do not wait for each other.
  async activate(input: ActivateInput): Promise<ActivateResult> {
    return this.sql.begin(async (tx): Promise<ActivateResult> => {
      const [license] = await tx`SELECT seats, seat_lease FROM licenses WHERE id = ${input.licenseId} FOR UPDATE`;
      if (!license) throw new Error(`no license ${input.licenseId}`);
      const [existing] = await tx`SELECT id FROM activations
        WHERE license_id = ${input.licenseId} AND installation = ${input.installation} AND deactivated IS NULL`;
      const countActive = async () => num((await tx`SELECT count(*) AS n FROM activations WHERE license_id = ${input.licenseId} AND deactivated IS NULL`)[0].n);
      // A deactivation does not take the license lock: if one commits between the select and this
      // update, the update finds no active row and the installation takes a new seat below.
      const [reused] = existing
        ? await tx`UPDATE activations SET product = ${input.product}, name = ${input.name},
            platform = ${input.platform}, version = ${input.version}, last_seen = ${input.now},
            token_exp = GREATEST(token_exp, ${input.tokenExp ?? null}::bigint)
            WHERE id = ${existing.id} AND deactivated IS NULL RETURNING *`
        : [];
      const audit = async (activationId: string) => {
        if (input.audit) await tx`INSERT INTO audit ${tx(auditRow({ ...input.audit, activationId }))}`;
      };
      const withEvent = async (result: ActivateResult) => {
        const event = input.event?.(result);
        if (event) await insertEvent(tx, event);
        return result;
      };
      if (reused) {
        await audit(reused.id);
        return withEvent({ outcome: "reused", activation: activationFromRow(reused), seatsUsed: await countActive() });
      }
      const used = await countActive();
      let reclaimed: ActivationRecord | undefined;
      if (used >= num(license.seats)) {
        // The license row's lock orders activations; the cutoff is checked again on the row updated,
        // so a sighting committed meanwhile keeps its seat.
        const cutoff = license.seat_lease === null ? null : input.now - num(license.seat_lease);
        // `deactivated` leads the order (it is NULL in every row found): PostgreSQL takes an index's
        // order past a column only when it is fixed by `=`, so without it every lapsed seat of the
        // licence would be read and sorted; with it the index gives them in order (migration 23).
        const [lapsed] =
          cutoff === null
            ? []
            : await tx`UPDATE activations SET deactivated = ${input.now}
                WHERE id = (SELECT id FROM activations WHERE license_id = ${input.licenseId} AND deactivated IS NULL
                  AND last_seen < ${cutoff} ORDER BY deactivated, last_seen, id LIMIT 1)
                AND deactivated IS NULL AND last_seen < ${cutoff} RETURNING *`;
        if (!lapsed) {
          const holders = await tx`SELECT * FROM activations
            WHERE license_id = ${input.licenseId} AND deactivated IS NULL ORDER BY created, id`;
          return withEvent({ outcome: "seat_limit", holders: holders.map(activationFromRow) });
        }
        reclaimed = activationFromRow(lapsed);
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
        token_exp: input.tokenExp ?? null,
      })} RETURNING *`;
      await audit(row.id);
      const activation = activationFromRow(row);
      if (!reclaimed) return withEvent({ outcome: "created", activation, seatsUsed: used + 1 });
      const j = input.reclaim?.(reclaimed, activation);
      if (j) {
        await tx`INSERT INTO audit ${tx(auditRow(j.audit))}`;
        for (const e of j.events) await insertEvent(tx, e);
      }
      return withEvent({ outcome: "created", activation, seatsUsed: used, reclaimed });
    });
  }

  async getActivationWithLicense(id: string): Promise<ActivationWithLicense | null> {
    const [r] = await this.sql.unsafe(`SELECT ${ACTIVATION_WITH_LICENSE_COLUMNS} FROM activations a JOIN licenses l ON l.id = a.license_id WHERE a.id = $1`, [
      id,
    ]);
    return r ? activationWithLicenseFromRow(r) : null;
  }

  async getActivation(id: string): Promise<ActivationRecord | null> {
    const [r] = await this.sql`SELECT * FROM activations WHERE id = ${id}`;
    return r ? activationFromRow(r) : null;
  }

  async activationStatus(id: string): Promise<ActivationStatus | null> {
    const [r] = await this.sql`SELECT a.deactivated, l.revoked AS license_revoked, l.expires AS license_expires
      FROM activations a JOIN licenses l ON l.id = a.license_id WHERE a.id = ${id}`;
    return r ? { deactivated: numOrNull(r.deactivated), licenseRevoked: numOrNull(r.license_revoked), licenseExpires: numOrNull(r.license_expires) } : null;
  }

  // GREATEST ignores a NULL: token_exp only grows, and is set by the first token recorded.
  async touchActivation(id: string, d: DeviceFields, now: number, tokenExp?: number): Promise<void> {
    await this.sql`UPDATE activations SET product = ${d.product}, name = ${d.name}, platform = ${d.platform},
      version = ${d.version}, last_seen = ${now}, token_exp = GREATEST(token_exp, ${tokenExp ?? null}::bigint) WHERE id = ${id}`;
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
  async deactivate(id: string, now: number, j: Journal<ActivationRecord> = {}): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const [a] = await tx`SELECT license_id FROM activations WHERE id = ${id}`;
      if (!a) return false;
      await tx`SELECT 1 FROM licenses WHERE id = ${a.license_id} FOR UPDATE`;
      const [r] = await tx`UPDATE activations SET deactivated = ${now} WHERE id = ${id} AND deactivated IS NULL RETURNING *`;
      if (!r) return false;
      await journal(tx, j, activationFromRow(r));
      return true;
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
    const { text, params } = auditSearch(f);
    return (await this.sql.unsafe(text, params)).map(auditFromRow);
  }

  async pruneAudit(before: number): Promise<number> {
    return (await this.sql`DELETE FROM audit WHERE time < ${before}`).count;
  }

  async appendEvent(event: NewEvent, audit?: AuditRecord): Promise<void> {
    await this.sql.begin((tx) => journal(tx, { audit, event: () => event }, null));
  }

  async pruneEvents(before: number): Promise<{ events: number; deliveries: number }> {
    return this.sql.begin(async (tx) => {
      const deliveries = (await tx`DELETE FROM webhook_deliveries WHERE created < ${before} AND status <> 'pending'`).count;
      const [deleted] = await tx`WITH d AS (DELETE FROM events WHERE time < ${before} AND seq <= (SELECT seq FROM webhook_fanout WHERE name = 'events')
        AND seq < (SELECT max(seq) FROM events) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = events.seq) RETURNING seq)
        SELECT count(*) AS n, max(seq) AS newest FROM d`;
      if (deleted.newest !== null) await tx`UPDATE feed_epoch SET pruned_through = GREATEST(pruned_through, ${deleted.newest}::bigint) WHERE id = 1`;
      return { events: num(deleted.n), deliveries };
    });
  }

  async listEvents(f: EventFilter): Promise<EventRecord[]> {
    const after = BigInt(f.after).toString();
    const rows = f.types
      ? await this.sql`SELECT * FROM events WHERE seq > ${after}::bigint AND type = ANY(${this.sql.array([...f.types], "TEXT")}) ORDER BY seq LIMIT ${f.limit}`
      : await this.sql`SELECT * FROM events WHERE seq > ${after}::bigint ORDER BY seq LIMIT ${f.limit}`;
    return rows.map(eventFromRow);
  }

  async feedPosition(): Promise<FeedPosition> {
    const [r] = await this
      .sql`SELECT epoch, pruned_through::text AS pruned_through, (SELECT coalesce(max(seq), 0) FROM events)::text AS newest FROM feed_epoch WHERE id = 1`;
    return { epoch: r.epoch, newest: BigInt(r.newest), prunedThrough: BigInt(r.pruned_through) };
  }

  async listFeedState(q: FeedStateQuery): Promise<FeedStateRow[]> {
    const rows = await this.sql.unsafe(FEED_STATE_SQL[q.section], [q.now, q.after ?? "", q.limit, q.fallbackTtlMs]);
    return rows.map((r: Row) => ({ id: r.id, until: num(r.until), ...(r.license ? { license: r.license } : {}) }));
  }

  async createAdminToken(t: AdminTokenRecord, audit?: AuditRecord): Promise<void> {
    await this.sql.begin(async (tx) => {
      await tx`INSERT INTO admin_tokens (id, name, secret_hash, scopes, created, expires, revoked, last_used)
        VALUES (${t.id}, ${t.name}, ${t.secretHash}, ${JSON.stringify(t.scopes)}, ${t.created}, ${t.expires}, ${t.revoked}, ${t.lastUsed})`;
      await journal(tx, { audit }, null);
    });
  }

  async findAdminTokenBySecretHash(secretHash: string): Promise<AdminTokenRecord | null> {
    const [r] = await this.sql`SELECT * FROM admin_tokens WHERE secret_hash = ${secretHash}`;
    return r ? adminTokenFromRow(r) : null;
  }

  async listAdminTokens(): Promise<AdminTokenRecord[]> {
    return (await this.sql`SELECT * FROM admin_tokens ORDER BY created, id`).map(adminTokenFromRow);
  }

  async revokeAdminToken(id: string, now: number, audit?: AuditRecord): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      if ((await tx`UPDATE admin_tokens SET revoked = ${now} WHERE id = ${id} AND revoked IS NULL`).count === 0) return false;
      await tx`UPDATE console_sessions SET revoked = ${now} WHERE token_id = ${id} AND revoked IS NULL`;
      await journal(tx, { audit }, null);
      return true;
    });
  }

  async touchAdminToken(id: string, now: number, staleBefore: number): Promise<void> {
    await this.sql`UPDATE admin_tokens SET last_used = ${now} WHERE id = ${id} AND (last_used IS NULL OR last_used < ${staleBefore})`;
  }

  async createConsoleSession(c: ConsoleSessionRecord, audit?: AuditRecord): Promise<void> {
    await this.sql.begin(async (tx) => {
      await tx`INSERT INTO console_sessions (id_hash, kind, token_id, subject, license_id, name, scopes, staff_groups, detail, created, expires, revoked)
        VALUES (${c.idHash}, ${c.kind}, ${c.tokenId}, ${c.subject}, ${c.licenseId}, ${c.name}, ${JSON.stringify(c.scopes)}, ${staffGroupsText(c)}, ${c.detail}, ${c.created}, ${c.expires}, ${c.revoked})`;
      await journal(tx, { audit }, null);
    });
  }

  async findConsoleSession(idHash: string): Promise<ConsoleSessionRecord | null> {
    const [r] = await this.sql`SELECT * FROM console_sessions WHERE id_hash = ${idHash}`;
    return r ? consoleSessionFromRow(r) : null;
  }

  async revokeConsoleSession(idHash: string, now: number, audit?: AuditRecord): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      if ((await tx`UPDATE console_sessions SET revoked = ${now} WHERE id_hash = ${idHash} AND revoked IS NULL`).count === 0) return false;
      await journal(tx, { audit }, null);
      return true;
    });
  }

  async listConsoleSessions(now: number, limit: number): Promise<ConsoleSessionRecord[]> {
    const rows = await this.sql`SELECT * FROM console_sessions WHERE kind = 'console' AND revoked IS NULL AND expires > ${now}
      ORDER BY created DESC, id_hash LIMIT ${limit}`;
    return rows.map(consoleSessionFromRow);
  }

  async pruneConsoleSessions(before: number): Promise<number> {
    return (await this.sql`DELETE FROM console_sessions WHERE expires < ${before}`).count;
  }

  async createWebhookEndpoint(e: Omit<WebhookEndpointRecord, "afterSeq">, audit?: AuditRecord): Promise<WebhookEndpointRecord> {
    return this.sql.begin(async (tx) => {
      // Under the events lock: every event committed after this endpoint has a greater seq.
      await tx`SELECT pg_advisory_xact_lock(hashtext('keyturn events ' || current_schema()))`;
      const [r] = await tx`INSERT INTO webhook_endpoints (id, url, types, secret, enabled, disabled_reason, created, after_seq)
        VALUES (${e.id}, ${e.url}, ${JSON.stringify(e.types)}, ${e.secret}, ${e.enabled}, ${e.disabledReason}, ${e.created},
        (SELECT coalesce(max(seq), 0) FROM events)) RETURNING *`;
      await journal(tx, { audit }, null);
      return endpointFromRow(r);
    });
  }

  async getBridgeEvent(provider: string, eventId: string): Promise<BridgeEventRecord | null> {
    const [r] = await this.sql`SELECT * FROM bridge_events WHERE provider = ${provider} AND event_id = ${eventId}`;
    return r ? bridgeEventFromRow(r) : null;
  }

  async recordBridgeEvent(write: BridgeWrite): Promise<boolean> {
    return this.sql.begin((tx) => insertBridge(tx, write, true));
  }

  async countBridgeReplay(provider: string, eventId: string): Promise<void> {
    await this.sql`UPDATE bridge_events SET replays = replays + 1 WHERE provider = ${provider} AND event_id = ${eventId}`;
  }

  async findBridgeLink(provider: string, references: readonly string[]): Promise<string | null> {
    for (const reference of references) {
      const [r] = await this.sql`SELECT l.license_id, a.license_id AS aliased FROM bridge_links l
        LEFT JOIN bridge_links a ON a.provider = l.provider AND a.reference = l.alias
        WHERE l.provider = ${provider} AND l.reference = ${reference}`;
      if (r?.license_id) return r.license_id;
      if (r?.aliased) return r.aliased;
    }
    return null;
  }

  async rememberBridgeCustomer(provider: string, customer: string, email: string, updated: number): Promise<void> {
    await this.sql`INSERT INTO bridge_customers (provider, customer, email, updated) VALUES (${provider}, ${customer}, ${email}, ${updated})
      ON CONFLICT (provider, customer) DO UPDATE SET email = excluded.email, updated = excluded.updated WHERE excluded.updated >= bridge_customers.updated`;
  }

  async bridgeCustomerEmail(provider: string, customer: string): Promise<string | null> {
    const [r] = await this.sql`SELECT email FROM bridge_customers WHERE provider = ${provider} AND customer = ${customer}`;
    return r ? r.email : null;
  }

  async listBridgeEvents(q: { before?: { received: number; provider: string; eventId: string }; limit: number }): Promise<BridgeEventRecord[]> {
    const rows = q.before
      ? await this.sql`SELECT * FROM bridge_events WHERE (received, provider, event_id) < (${q.before.received}, ${q.before.provider}, ${q.before.eventId})
          ORDER BY received DESC, provider DESC, event_id DESC LIMIT ${q.limit}`
      : await this.sql`SELECT * FROM bridge_events ORDER BY received DESC, provider DESC, event_id DESC LIMIT ${q.limit}`;
    return rows.map(bridgeEventFromRow);
  }

  async listWebhookEndpoints(): Promise<WebhookEndpointRecord[]> {
    return (await this.sql`SELECT * FROM webhook_endpoints ORDER BY created, id`).map(endpointFromRow);
  }

  async getWebhookEndpoint(id: string): Promise<WebhookEndpointRecord | null> {
    const [r] = await this.sql`SELECT * FROM webhook_endpoints WHERE id = ${id}`;
    return r ? endpointFromRow(r) : null;
  }

  async setWebhookEndpointEnabled(id: string, enabled: boolean, reason: string | null, audit?: AuditRecord): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const changed = (await tx`UPDATE webhook_endpoints SET enabled = ${enabled}, disabled_reason = ${reason} WHERE id = ${id}`).count > 0;
      if (changed) await journal(tx, { audit }, null);
      return changed;
    });
  }

  async setWebhookEndpointSecret(id: string, secret: string, audit?: AuditRecord): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const changed = (await tx`UPDATE webhook_endpoints SET secret = ${secret} WHERE id = ${id}`).count > 0;
      if (changed) await journal(tx, { audit }, null);
      return changed;
    });
  }

  async removeWebhookEndpoint(id: string, audit?: AuditRecord): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const removed = (await tx`DELETE FROM webhook_endpoints WHERE id = ${id}`).count > 0;
      if (removed) await journal(tx, { audit }, null);
      return removed;
    });
  }

  // The cursor row lock makes one process at a time fan out. The newest seq is read before the
  // endpoints: an endpoint not yet visible then held the events lock from its insert to its commit,
  // so every event up to that seq is at or before its afterSeq and none is skipped for it.
  async fanOutEvents(now: number, limit: number, newDeliveryId: () => string): Promise<number> {
    return this.sql.begin(async (tx) => {
      const [cursorRow] = await tx`SELECT seq FROM webhook_fanout WHERE name = 'events' FOR UPDATE`;
      const cursor = num(cursorRow.seq);
      const newest = num((await tx`SELECT coalesce(max(seq), 0) AS seq FROM events`)[0].seq);
      if (newest <= cursor) return 0;
      const endpoints = (await tx`SELECT * FROM webhook_endpoints WHERE enabled`).map(endpointFromRow);
      if (endpoints.length === 0) {
        const [{ n }] = await tx`SELECT count(*) AS n FROM events WHERE seq > ${cursor} AND seq <= ${newest}`;
        await tx`UPDATE webhook_fanout SET seq = ${newest} WHERE name = 'events'`;
        return num(n);
      }
      const events = (await tx`SELECT seq, id, type FROM events WHERE seq > ${cursor} ORDER BY seq LIMIT ${limit}`).map(
        (r: Row): EventHead => ({ seq: num(r.seq), id: r.id, type: r.type }),
      );
      for (const event of events)
        for (const endpoint of subscribers(endpoints, event))
          await tx`INSERT INTO webhook_deliveries (id, endpoint_id, event_seq, event_id, status, attempts, next_attempt, created)
            VALUES (${newDeliveryId()}, ${endpoint.id}, ${event.seq}, ${event.id}, 'pending', 0, ${now}, ${now}) ON CONFLICT DO NOTHING`;
      await tx`UPDATE webhook_fanout SET seq = ${events.at(-1)!.seq} WHERE name = 'events'`;
      return events.length;
    });
  }

  async claimDeliveries(now: number, leaseUntil: number, owner: string, limit: number): Promise<ClaimedDelivery[]> {
    const rows = await this.sql`UPDATE webhook_deliveries d SET lease_until = ${leaseUntil}, lease_owner = ${owner}
      FROM (SELECT id FROM (
              SELECT d2.id, d2.next_attempt, d2.event_seq,
                row_number() OVER (PARTITION BY d2.endpoint_id ORDER BY d2.next_attempt, d2.event_seq) AS n
              FROM webhook_deliveries d2 JOIN webhook_endpoints e ON e.id = d2.endpoint_id
              WHERE d2.status = 'pending' AND d2.next_attempt <= ${now} AND (d2.lease_until IS NULL OR d2.lease_until < ${now}) AND e.enabled
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries b WHERE b.endpoint_id = d2.endpoint_id AND b.status = 'pending' AND b.lease_until >= ${now})) x
            WHERE n = 1 ORDER BY next_attempt, event_seq LIMIT ${limit}) due
      WHERE d.id = due.id AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < ${now}) RETURNING d.*`;
    const claimed: ClaimedDelivery[] = [];
    for (const r of rows) {
      const [e] = await this.sql`SELECT * FROM webhook_endpoints WHERE id = ${r.endpoint_id}`;
      const [ev] = await this.sql`SELECT * FROM events WHERE seq = ${r.event_seq}`;
      if (e && ev) claimed.push({ delivery: deliveryFromRow(r), endpoint: endpointFromRow(e), event: eventFromRow(ev), leaseOwner: owner });
    }
    return claimed;
  }

  async recordAttempt(a: AttemptRecord, owner: string, outcome: AttemptOutcome): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const next = outcome.status === "pending" ? outcome.nextAttempt : a.time;
      const [r] = await tx`UPDATE webhook_deliveries SET status = ${outcome.status}, attempts = attempts + 1, next_attempt = ${next},
          last_attempt = ${a.time}, lease_until = NULL, lease_owner = NULL
        WHERE id = ${a.deliveryId} AND lease_owner = ${owner} RETURNING endpoint_id`;
      if (!r) return false;
      await tx`INSERT INTO webhook_attempts (delivery_id, attempt, time, duration_ms, status_code, error)
        VALUES (${a.deliveryId}, ${a.attempt}, ${a.time}, ${a.durationMs}, ${a.statusCode}, ${a.error})`;
      if (outcome.status === "failed" && outcome.disableEndpoint)
        await tx`UPDATE webhook_endpoints SET enabled = false, disabled_reason = ${outcome.disableEndpoint} WHERE id = ${r.endpoint_id}`;
      return true;
    });
  }

  async listDeliveries(f: DeliveryFilter): Promise<DeliveryRecord[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    const p = (v: string | number) => (params.push(v), `$${params.length}`);
    if (f.endpointId !== undefined) where.push(`endpoint_id = ${p(f.endpointId)}`);
    if (f.status !== undefined) where.push(`status = ${p(f.status)}`);
    if (f.after !== undefined) where.push(`id < ${p(f.after)}`);
    const text = `SELECT * FROM webhook_deliveries ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY id DESC LIMIT ${p(f.limit)}`;
    return (await this.sql.unsafe(text, params)).map(deliveryFromRow);
  }

  async getDelivery(id: string): Promise<DeliveryRecord | null> {
    const [r] = await this.sql`SELECT * FROM webhook_deliveries WHERE id = ${id}`;
    return r ? deliveryFromRow(r) : null;
  }

  async listAttempts(deliveryId: string): Promise<AttemptRecord[]> {
    return (await this.sql`SELECT * FROM webhook_attempts WHERE delivery_id = ${deliveryId} ORDER BY attempt`).map(attemptFromRow);
  }

  async retryDelivery(id: string, now: number, audit?: AuditRecord): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      const changed = (await tx`UPDATE webhook_deliveries SET status = 'pending', next_attempt = ${now} WHERE id = ${id} AND status <> 'delivered'`).count > 0;
      if (changed) await journal(tx, { audit }, null);
      return changed;
    });
  }

  async applyReleaseControl(
    key: ReleaseKey,
    op: ReleaseControlOp,
    now: number,
    j: Journal<ReleaseControlRecord> = {},
    haltRule?: string,
  ): Promise<{ changed: boolean; control: ReleaseControlRecord }> {
    const result = await this.sql.begin(async (tx) => {
      // Serialises racing controls of one release (its row may not exist yet, so a row lock would not).
      await tx`SELECT pg_advisory_xact_lock(hashtext('keyturn release control ' || ${key.lane} || ' ' || ${key.version}))`;
      const [row] = await tx`SELECT * FROM release_controls WHERE lane = ${key.lane} AND version = ${key.version}`;
      const before = row ? releaseControlFromRow(row) : noControl(key, now);
      const after = applyControl(before, op, now, haltRule);
      if (!after) return { changed: false, control: before };
      await tx`INSERT INTO release_controls (lane, version, halted, halted_ms, withdrawn, updated, halt_rule)
        VALUES (${key.lane}, ${key.version}, ${after.halted}, ${after.haltedMs}, ${after.withdrawn}, ${after.updated}, ${after.haltRule ?? null})
        ON CONFLICT (lane, version) DO UPDATE SET halted = excluded.halted, halted_ms = excluded.halted_ms,
        withdrawn = excluded.withdrawn, updated = excluded.updated, halt_rule = excluded.halt_rule`;
      await tx`UPDATE release_controls_generation SET generation = generation + 1 WHERE id = 1`;
      await journal(tx, j, after);
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

  async recordKeyCheck(candidate: string): Promise<string> {
    await this.sql`INSERT INTO record_key_check (id, value) VALUES (1, ${candidate}) ON CONFLICT DO NOTHING`;
    const [row] = await this.sql`SELECT value FROM record_key_check WHERE id = 1`;
    return row.value as string;
  }

  async readRecordKeyCheck(): Promise<string | null> {
    const [row] = await this.sql`SELECT value FROM record_key_check WHERE id = 1`;
    return (row?.value as string | undefined) ?? null;
  }

  async listSealed(prefix: string, limit?: number): Promise<SealedValue[]> {
    const most = limit ?? null;
    const secrets = await this.sql`SELECT id, secret FROM webhook_endpoints WHERE starts_with(secret, ${prefix}) ORDER BY id LIMIT ${most}`;
    const answers = await this.sql`SELECT scope, key, answer FROM idempotency WHERE starts_with(answer, ${prefix}) ORDER BY scope, key LIMIT ${most}`;
    const mails = await this.sql`SELECT id, body FROM mail_outbox WHERE starts_with(body, ${prefix}) ORDER BY id LIMIT ${most}`;
    return [
      ...secrets.map((r: Row): SealedValue => ({ kind: "webhook-secret", endpointId: r.id as string, value: r.secret as string })),
      ...answers.map((r: Row): SealedValue => ({ kind: "idempotency-answer", scope: r.scope as string, key: r.key as string, value: r.answer as string })),
      ...mails.map((r: Row): SealedValue => ({ kind: "mail-body", mailId: r.id as string, value: r.body as string })),
    ];
  }

  async replaceSealed(prefix: string, values: readonly SealedChange[], check: { readonly before: string | null; readonly after: string }): Promise<boolean> {
    const changed = new Error("changed meanwhile");
    try {
      await this.sql.begin(async (tx) => {
        // UPDATE locks the row: of two rotations, the second finds the value the first wrote and changes nothing.
        const kept =
          check.before === null
            ? await tx`INSERT INTO record_key_check (id, value) VALUES (1, ${check.after}) ON CONFLICT DO NOTHING`
            : await tx`UPDATE record_key_check SET value = ${check.after} WHERE id = 1 AND value = ${check.before}`;
        if (kept.count !== 1) throw changed;
        for (const v of values) {
          const result =
            v.kind === "mail-body"
              ? await tx`UPDATE mail_outbox SET body = ${v.after} WHERE id = ${v.mailId} AND body = ${v.value}`
              : v.kind === "webhook-secret"
                ? await tx`UPDATE webhook_endpoints SET secret = ${v.after} WHERE id = ${v.endpointId} AND secret = ${v.value}`
                : await tx`UPDATE idempotency SET answer = ${v.after} WHERE scope = ${v.scope} AND key = ${v.key} AND answer = ${v.value}`;
          if (result.count !== 1) throw changed;
        }
        const [held] = await tx`SELECT (SELECT count(*) FROM webhook_endpoints WHERE starts_with(secret, ${prefix}))
          + (SELECT count(*) FROM idempotency WHERE starts_with(answer, ${prefix}))
          + (SELECT count(*) FROM mail_outbox WHERE starts_with(body, ${prefix})) AS n`;
        if (num(held.n) !== values.length) throw changed;
      });
      return true;
    } catch (e) {
      if (e === changed) return false;
      throw e;
    }
  }

  async noteVariant(variant: string, now: number): Promise<{ readonly variant: string; readonly noted: number }> {
    // Read first: a start on noted records writes nothing.
    let [row] = await this.sql`SELECT variant, noted FROM records_variant WHERE id = 1`;
    if (!row) {
      await this.sql`INSERT INTO records_variant (id, variant, noted) VALUES (1, ${variant}, ${now}) ON CONFLICT DO NOTHING`;
      [row] = await this.sql`SELECT variant, noted FROM records_variant WHERE id = 1`;
    }
    return { variant: row.variant as string, noted: num(row.noted) };
  }

  async recordKnownReleases(releases: readonly ReleaseKey[], now: number, eventOf?: (release: ReleaseKey) => NewEvent): Promise<ReleaseKey[]> {
    if (releases.length === 0) return [];
    return this.sql.begin(async (tx) => {
      const baseline = (await tx`INSERT INTO known_releases_baseline (id, taken) VALUES (1, ${now}) ON CONFLICT DO NOTHING RETURNING id`).length > 0;
      const rows = await tx`INSERT INTO known_releases (lane, version, first_seen)
        SELECT lane, version, ${now} FROM unnest(${tx.array(
          releases.map((r) => r.lane),
          "TEXT",
        )}::text[], ${tx.array(
          releases.map((r) => r.version),
          "TEXT",
        )}::text[]) AS k(lane, version)
        ON CONFLICT DO NOTHING RETURNING lane, version`;
      if (baseline) return [];
      const added: ReleaseKey[] = rows.map((r: Row) => ({ lane: r.lane, version: r.version }));
      if (eventOf) for (const r of added) await insertEvent(tx, eventOf(r));
      return added;
    });
  }

  async listKnownReleases(): Promise<ReleaseKey[]> {
    const rows = await this.sql`SELECT lane, version FROM known_releases ORDER BY lane, version`;
    return rows.map((r: Row) => ({ lane: r.lane as string, version: r.version as string }));
  }

  async recordInstallReports(reports: readonly InstallReport[]): Promise<void> {
    if (reports.length === 0) return;
    await writeInstallReportsPg(this.sql, reports);
  }

  async installReportsPerDay(since: number): Promise<InstallReportCount[]> {
    return installReportsPerDayPg(this.sql, since);
  }

  async releaseHealth(release: ReleaseKey, since: number, without?: string): Promise<{ reports: number; failed: number }> {
    return releaseHealthPg(this.sql, release, since, without);
  }

  async releaseRunners(release: ReleaseKey, limit: number): Promise<string[]> {
    return releaseRunnersPg(this.sql, release, limit);
  }

  async recordSightings(sightings: readonly Sighting[]): Promise<void> {
    if (sightings.length === 0) return;
    await this.sql`UPDATE activations a SET last_seen = greatest(a.last_seen, s.last_seen), lane = coalesce(s.lane, a.lane)
      FROM unnest(${this.sql.array(
        sightings.map((s) => s.activationId),
        "TEXT",
      )}::text[],
        ${this.sql.array(
          sightings.map((s) => s.lastSeen),
          "INT8",
        )}::bigint[],
        ${this.sql.array(
          sightings.map((s) => s.lane),
          "TEXT",
        )}::text[]) AS s(id, last_seen, lane)
      WHERE a.id = s.id`;
  }

  async installationsSeen(since: number): Promise<InstallationCount[]> {
    return this.installationsSeenIn(WHOLE, since);
  }

  async installationsSeenIn(range: IdRange, since: number): Promise<InstallationCount[]> {
    const rows = await this.sql`SELECT product, lane, version, count(*) AS n FROM activations
      WHERE (${range.from}::text IS NULL OR id >= ${range.from}) AND (${range.to}::text IS NULL OR id < ${range.to}) AND deactivated IS NULL AND last_seen >= ${since}
      GROUP BY product, lane, version ORDER BY lane IS NULL, lane, product, version`;
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

  async activationsOnDay(day: number): Promise<DayCount | null> {
    const [r] = await this.sql`SELECT count(*) AS n, count(*) FILTER (WHERE outcome = 'ok') AS activations,
        count(*) FILTER (WHERE error = 'seat_limit') AS refusals
      FROM audit WHERE action IN ('activate', 'sign-in') AND time >= ${day} AND time < ${day + DAY_MS}`;
    return num(r.n) === 0 ? null : { day, activations: num(r.activations), seatLimitRefusals: num(r.refusals) };
  }

  async seatCounts(now: number): Promise<{ inUse: number; lapsed: number }> {
    return this.seatCountsIn(WHOLE, now);
  }

  async seatCountsIn(range: IdRange, now: number): Promise<{ inUse: number; lapsed: number }> {
    // licenses.active_seats is kept by triggers (migration 2); only leased licenses have seats to look at.
    const [r] = await this.sql`SELECT coalesce(sum(active_seats), 0) AS held,
        coalesce(sum((SELECT count(*) FROM activations a WHERE a.license_id = l.id AND a.deactivated IS NULL
          AND a.last_seen < ${now} - l.seat_lease)) FILTER (WHERE seat_lease IS NOT NULL), 0) AS lapsed
      FROM licenses l WHERE (${range.from}::text IS NULL OR id >= ${range.from}) AND (${range.to}::text IS NULL OR id < ${range.to}) AND kind = 'license' AND revoked IS NULL`;
    const lapsed = num(r.lapsed);
    return { inUse: num(r.held) - lapsed, lapsed };
  }

  async licensesExpiring(from: number, to: number, limit: number, mailable?: MailableLicences): Promise<LicenseRecord[]> {
    const rows = await this.sql`SELECT * FROM licenses WHERE kind = 'license' AND revoked IS NULL
      AND expires >= ${from} AND expires < ${to}
      AND (${mailable?.without ?? null}::text IS NULL OR (email IS NOT NULL
        AND ((metadata::jsonb ->> ${mailable?.without ?? ""}) IS NULL OR (metadata::jsonb ->> ${mailable?.unless ?? ""}) IS NOT NULL)))
      ORDER BY expires, id LIMIT ${limit}`;
    return rows.map(licenseFromRow);
  }

  async sliceEnd(): Promise<string | null> {
    return null;
  }

  async rolloutReleaseNumbers(releases: readonly ReleaseKey[], dropLimit: number): Promise<{ numbers: number[]; dropped: number }> {
    return this.sql.begin(async (tx) => {
      const numbers: number[] = [];
      for (const r of releases) {
        await tx`INSERT INTO rollout_releases (lane, version) VALUES (${r.lane}, ${r.version}) ON CONFLICT DO NOTHING`;
        const [row] = await tx`SELECT no FROM rollout_releases WHERE lane = ${r.lane} AND version = ${r.version}`;
        numbers.push(num(row.no));
      }
      const kept = new Set(numbers);
      let dropped = 0;
      for (const { no } of await tx`SELECT no FROM rollout_releases`) {
        if (kept.has(num(no)) || dropped >= dropLimit) continue;
        const gone = await tx`DELETE FROM rollout_buckets WHERE release_no = ${no} AND activation_id IN
          (SELECT activation_id FROM rollout_buckets WHERE release_no = ${no} LIMIT ${dropLimit - dropped})`;
        dropped += gone.count;
        if (dropped < dropLimit) await tx`DELETE FROM rollout_releases WHERE no = ${no}`;
      }
      return { numbers, dropped };
    });
  }

  async rolloutReachIn(range: IdRange, releases: readonly RolloutCountQuery[], since: number): Promise<RolloutReach[]> {
    if (releases.length === 0) return [];
    const lanes = new Map<string | null, { seen: number; staff: number }>(
      (
        await this.sql`SELECT lane, count(*) AS seen, count(*) FILTER (WHERE kind = 'staff') AS staff FROM activations
        WHERE (${range.from}::text IS NULL OR id >= ${range.from}) AND (${range.to}::text IS NULL OR id < ${range.to})
          AND deactivated IS NULL AND last_seen >= ${since} GROUP BY lane`
      ).map((r: Row) => [r.lane as string | null, { seen: num(r.seen), staff: num(r.staff) }]),
    );
    const counted = new Map<number, { bucketed: number; admitted: number }>(
      (
        await this.sql`SELECT b.release_no AS no, count(*) AS bucketed, count(*) FILTER (WHERE b.bucket < t.threshold) AS admitted
        FROM unnest(${this.sql.array(
          releases.map((r) => r.no),
          "INT8",
        )}::bigint[], ${this.sql.array(
          releases.map((r) => r.lane),
          "TEXT",
        )}::text[],
          ${this.sql.array(
            releases.map((r) => storedBucket(r.threshold).toString()),
            "TEXT",
          )}::text[]::bigint[]) AS t(no, lane, threshold)
        JOIN rollout_buckets b ON b.release_no = t.no
        JOIN activations a ON a.id = b.activation_id AND a.lane = t.lane
        WHERE (${range.from}::text IS NULL OR a.id >= ${range.from}) AND (${range.to}::text IS NULL OR a.id < ${range.to})
          AND a.deactivated IS NULL AND a.last_seen >= ${since} AND a.kind <> 'staff'
        GROUP BY b.release_no`
      ).map((r: Row) => [num(r.no), { bucketed: num(r.bucketed), admitted: num(r.admitted) }]),
    );
    const answers: RolloutReach[] = [];
    for (const r of releases) {
      const lane = lanes.get(r.lane) ?? { seen: 0, staff: 0 };
      const c = counted.get(r.no) ?? { bucketed: 0, admitted: 0 };
      const unbucketed =
        lane.seen - lane.staff === c.bucketed
          ? []
          : (
              await this.sql`SELECT a.id, a.device_hash FROM activations a
              WHERE (${range.from}::text IS NULL OR a.id >= ${range.from}) AND (${range.to}::text IS NULL OR a.id < ${range.to})
              AND a.lane = ${r.lane} AND a.deactivated IS NULL AND a.last_seen >= ${since} AND a.kind <> 'staff'
              AND NOT EXISTS (SELECT 1 FROM rollout_buckets b WHERE b.release_no = ${r.no} AND b.activation_id = a.id)`
            ).map((x: Row) => ({
              activationId: x.id as string,
              deviceHash: x.device_hash as string,
            }));
      answers.push({ seen: lane.seen, admitted: lane.staff + c.admitted, unbucketed });
    }
    return answers;
  }

  async storeRolloutBuckets(no: number, buckets: readonly { activationId: string; bucket: bigint }[]): Promise<void> {
    if (buckets.length === 0) return;
    await this.sql`INSERT INTO rollout_buckets (release_no, activation_id, bucket)
      SELECT ${no}, b.id, b.bucket::bigint FROM unnest(${this.sql.array(
        buckets.map((b) => b.activationId),
        "TEXT",
      )}::text[],
        ${this.sql.array(
          buckets.map((b) => storedBucket(b.bucket).toString()),
          "TEXT",
        )}::text[]) AS b(id, bucket)
      ON CONFLICT DO NOTHING`;
  }

  async listMeters(licenseId: string): Promise<MeterRecord[]> {
    return listMetersPostgres(this.writer, licenseId);
  }

  async useMeter(use: MeterUse): Promise<MeterUseResult> {
    return useMeterPostgres(this.writer, use);
  }

  async meterTotals(now: number): Promise<MeterTotal[]> {
    return meterTotalsPostgres(this.writer, now);
  }

  async startTrial(trial: TrialRecord, license: LicenseRecord, journal: TrialJournal): Promise<StartTrialResult> {
    return startTrialPostgres(this.writer, trial, license, journal);
  }

  async convertTrial(deviceHash: string, toLicenseId: string, now: number, journal: ConversionJournal): Promise<TrialRecord | null> {
    return convertTrialPostgres(this.writer, deviceHash, toLicenseId, now, journal);
  }

  async getTrialOfLicense(licenseId: string): Promise<TrialRecord | null> {
    return trialOfLicensePostgres(this.writer, licenseId);
  }

  async findTrial(deviceHash: string): Promise<TrialRecord | null> {
    return findTrialPostgres(this.writer, deviceHash);
  }

  async listTrials(query: TrialQuery): Promise<TrialRecord[]> {
    return listTrialsPostgres(this.writer, query);
  }

  async trialCounts(): Promise<TrialCounts> {
    return trialCountsPostgres(this.writer);
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
    email: l.email ?? null,
    metadata: JSON.stringify(l.metadata ?? {}),
    token_ttl: l.tokenTtl ?? null,
    seat_lease: l.seatLease ?? null,
    updates_until: l.updatesUntil ?? null,
    features: featuresColumn(l.features),
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
    actor: a.actor ?? null,
  };
}

/**
 * Applies every migration the schema has not seen, all in one transaction under an advisory lock
 * keyed by the schema: processes starting together queue on the lock, and each later one finds the
 * versions the first recorded. The transaction-scoped lock cannot outlive a crashed migrator.
 * Answers the versions applied.
 */
export async function migratePostgres(sql: SQL): Promise<number[]> {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('keyturn migrations ' || current_schema()))`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)`;
    const done = new Set((await tx`SELECT version FROM schema_migrations`).map((r: Row) => num(r.version)));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.postgres);
      await tx`INSERT INTO schema_migrations (version, applied) VALUES (${m.version}, ${Date.now()})`;
      applied.push(m.version);
    }
    return applied;
  });
}

/** An activation with its license in one query: the license's columns prefixed `l_`. */
/** A feed snapshot's sections (FeedStateQuery), by id ($1 now, $2 after, $3 limit, $4 fallback ttl). */
const FEED_STATE_SQL = {
  // A deactivation whose licence is revoked is left out: the licence's own entry refuses its tokens
  // as long (its end is the latest of its activations'), so a mirror keeps one entry, not one per installation.
  activations: `SELECT a.id, coalesce(a.token_exp, a.deactivated + $4) AS until, a.license_id AS license FROM activations a
    WHERE a.deactivated IS NOT NULL AND a.id > $2 AND coalesce(a.token_exp, a.deactivated + $4) > $1
      AND NOT EXISTS (SELECT 1 FROM licenses l WHERE l.id = a.license_id AND l.revoked IS NOT NULL AND (a.token_exp IS NOT NULL OR a.deactivated <= l.revoked))
    ORDER BY a.id LIMIT $3`,
  licenses: `SELECT * FROM (SELECT l.id, (SELECT max(coalesce(a.token_exp, l.revoked + $4)) FROM activations a WHERE a.license_id = l.id) AS until
    FROM licenses l WHERE l.revoked IS NOT NULL AND l.id > $2) s WHERE until > $1 ORDER BY id LIMIT $3`,
  expiries: `SELECT id, until FROM (SELECT l.id, l.expires AS until,
      (SELECT max(coalesce(a.token_exp, a.last_seen + $4)) FROM activations a WHERE a.license_id = l.id) AS tokens
    FROM licenses l WHERE l.expires IS NOT NULL AND l.revoked IS NULL AND l.id > $2) s WHERE tokens > until AND tokens > $1 ORDER BY id LIMIT $3`,
} as const;

const ACTIVATION_WITH_LICENSE_COLUMNS = `a.*, l.kind AS l_kind, l.key_hash AS l_key_hash, l.licensee AS l_licensee,
  l.organization AS l_organization, l.plan AS l_plan, l.plan_title AS l_plan_title, l.channels AS l_channels,
  l.seats AS l_seats, l.issued AS l_issued, l.expires AS l_expires, l.revoked AS l_revoked, l.active_seats AS l_active_seats, l.token_ttl AS l_token_ttl, l.seat_lease AS l_seat_lease,
  l.updates_until AS l_updates_until, l.features AS l_features`;

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
    token_ttl: r.l_token_ttl,
    seat_lease: r.l_seat_lease,
    updates_until: r.l_updates_until,
    features: r.l_features,
  }),
  seatsUsed: num(r.l_active_seats),
});

/** The audit search's statement (exported so a test can read its query plan: each filter has an index). */
export function auditSearch(f: AuditFilter): { text: string; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  const add = (clause: string, value: string | number) => {
    params.push(value);
    where.push(clause.replace("?", `$${params.length}`));
  };
  if (f.ref !== undefined) add("ref = ?", f.ref);
  if (f.licenseId !== undefined) add("license_id = ?", f.licenseId);
  if (f.activationId !== undefined) add("activation_id = ?", f.activationId);
  if (f.error !== undefined) add("error = ?", f.error);
  if (f.since !== undefined) add("time >= ?", f.since);
  if (f.until !== undefined) add("time < ?", f.until);
  if (f.after !== undefined) {
    params.push(f.after.time, f.after.ref);
    where.push(`(time < $${params.length - 1} OR (time = $${params.length - 1} AND ref > $${params.length}))`);
  }
  params.push(f.limit ?? 1000);
  const text = `SELECT * FROM audit ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY time DESC, ref LIMIT $${params.length}`;
  return { text, params };
}
