import { Database, type Statement } from "bun:sqlite";
import { chmodSync, closeSync, fchmodSync, openSync, statSync } from "node:fs";
import { join } from "node:path";
import { metadataPaths } from "./sqlite-metadata";
import { installReportsPerDay, releaseHealth, releaseRunners, writeInstallReports } from "./install-reports-sqlite";
import { MIGRATIONS } from "./migrations";
import { insertMailSqlite } from "./sqlite-mail";
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
  deliveryFromRow,
  endpointFromRow,
  eventFromRow,
  licenseFromRow,
  patchColumns,
  releaseControlFromRow,
  subscribers,
  type EventHead,
  storedBucket,
  type Row,
  featuresColumn,
} from "./rows";
import { applyControl, noControl } from "./release-controls";
import type { MeterRecord, MeterTotal, MeterUse, MeterUseResult } from "./meter-types";
import { listMetersSqlite, meterTotalsSqlite, pruneMeterUsesSqlite, useMeterSqlite, writeMetersSqlite } from "./meters-sqlite";
import type { SqliteWriter } from "./sqlite-writer";
import type { ConversionJournal, StartTrialResult, TrialCounts, TrialJournal, TrialQuery, TrialRecord } from "./trial-types";
import { convertTrialSqlite, findTrialSqlite, listTrialsSqlite, startTrialSqlite, trialCountsSqlite, trialOfLicenseSqlite } from "./trials-sqlite";
import { bridgeEventFromRow, bridgeEventParams } from "./bridge-rows";
import { CHECKPOINT_PAGES, CheckpointPacing, passiveCheckpoint, SQLITE_AUTOCHECKPOINT_PAGES } from "./sqlite-checkpoints";
import { GroupCommit } from "./sqlite-group-commit";
import { walIndexReader, walProgressOf } from "./sqlite-wal-index";
import { sqliteWriteStamp, type WriteStamp } from "./sqlite-write-stamp";
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
  IdRange,
  IdempotentCreate,
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

export const SQLITE_FILE = "keyturn.sqlite";
/** Activation statuses kept between writes (a few hundred bytes each). */
const STATUS_CACHE_SIZE = 10_000;
/** How long one check of the release controls' generation answers for (see releaseControlsGeneration). */
const CONTROLS_CHECK_MS = 1;

/** Opens (creating when needed) the records in `dataDir`, in WAL mode, and applies migrations. */
export function openSqliteStore(dataDir: string): SqliteStore {
  const file = join(dataDir, SQLITE_FILE);
  makeOwnerOnly(file);
  return new SqliteStore(new Database(file, { create: true, strict: true }));
}

/**
 * The records (licensees, device names, addresses) are for keyturn's user alone. SQLite creates a
 * database 0644 less the umask, whatever the directory's mode, and gives its -wal and -shm the mode
 * of the database file; so the file is created 0600 before SQLite opens it, and one an earlier
 * keyturn left readable to others is tightened, with the -wal and -shm it left. An existing file is
 * changed by path, never opened here: closing a descriptor of a database would drop the locks
 * another connection of this process holds on it. What cannot be changed (a file of another user)
 * is left for SQLite to open or refuse as before.
 */
function makeOwnerOnly(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, "wx", 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") for (const f of [file, `${file}-wal`, `${file}-shm`]) tighten(f);
    return;
  }
  try {
    fchmodSync(fd, 0o600); // whatever the umask
  } finally {
    closeSync(fd);
  }
}

function tighten(file: string): void {
  try {
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  } catch {
    // Not there (SQLite creates it with the database's mode), or not ours.
  }
}

export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  private readonly q: ReturnType<SqliteStore["prepare"]>;
  private readonly groupCommit: GroupCommit;
  /** Null where the WAL index cannot be read: SQLite's own checkpoints then, every CHECKPOINT_PAGES.start pages. */
  private readonly checkpoints: CheckpointPacing | null;
  private readonly checkpoint: ReturnType<typeof passiveCheckpoint>;
  private readonly writeStamp: WriteStamp;
  /** A stamp of its own (each call consumes "changed"): the release controls' generation is read again only after a commit. */
  private readonly controlsStamp: WriteStamp;
  private controlsGeneration = 0;
  private controlsCheckedAt = -Infinity;
  private readonly readActivationWithLicense: (id: string) => ActivationWithLicense | null;
  /** What the meters' and trials' modules write through (sqlite-writer.ts). */
  private readonly writer: SqliteWriter;
  readonly migrationsApplied: readonly number[];

  constructor(readonly db: Database) {
    // Several processes (serve and the admin commands) share the file: wait for each other's locks.
    db.exec("PRAGMA busy_timeout = 10000");
    db.exec("PRAGMA journal_mode = WAL");
    // WAL + NORMAL survives a killed process (the crash test); only a power cut may lose the last commits.
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("PRAGMA foreign_keys = ON");
    // Until the pacing below takes over (and where it cannot read the WAL index), SQLite checkpoints.
    db.exec(`PRAGMA wal_autocheckpoint = ${CHECKPOINT_PAGES.start}`);
    this.migrationsApplied = migrateSqlite(db);
    this.q = this.prepare();
    const wal = walIndexReader(db.filename);
    this.checkpoint = passiveCheckpoint(db);
    this.checkpoints = wal ? new CheckpointPacing({ progress: walProgressOf(wal), checkpoint: this.checkpoint.run }) : null;
    if (this.checkpoints) db.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
    this.groupCommit = new GroupCommit(db, () => this.checkpoints?.committed());
    this.writeStamp = sqliteWriteStamp(db, db.filename);
    this.controlsStamp = sqliteWriteStamp(db, db.filename);
    this.writer = {
      db,
      write: (write) => this.groupCommit.write(write),
      insertAudit: (line) => this.q.insertAudit.run(auditParams(line)),
      insertEvent: (event) => this.insertEvent(event),
      insertLicense: (license) => this.q.insertLicense.run(licenseParams(license)),
    };
    this.readActivationWithLicense = db.transaction((id: string) => {
      const a = this.q.activationById.get(id) as Row | null;
      const l = a && (this.q.licenseById.get(a.license_id) as Row | null);
      return l ? { activation: activationFromRow(a), license: licenseFromRow(l), seatsUsed: l.active_seats as number } : null;
    });
  }

  private prepare() {
    const db = this.db;
    const s = (sql: string): Statement => db.prepare(sql);
    return {
      insertLicense: s(`INSERT INTO licenses (id, kind, key_hash, licensee, organization, plan, plan_title,
        channels, seats, issued, expires, revoked, email, metadata, token_ttl, seat_lease, updates_until, features) VALUES ($id, $kind, $keyHash, $licensee, $organization,
        $plan, $planTitle, $channels, $seats, $issued, $expires, $revoked, $email, $metadata, $tokenTtl, $seatLease, $updatesUntil, $features)`),
      upsertStaff: s(`INSERT INTO licenses (id, kind, key_hash, licensee, organization, plan, plan_title,
        channels, seats, issued, expires, revoked, email, metadata, token_ttl) VALUES ($id, $kind, $keyHash, $licensee, $organization,
        $plan, $planTitle, $channels, $seats, $issued, $expires, $revoked, $email, $metadata, $tokenTtl)
        ON CONFLICT(id) DO UPDATE SET licensee = excluded.licensee, organization = excluded.organization,
        channels = excluded.channels, seats = excluded.seats RETURNING *`),
      licenseById: s("SELECT * FROM licenses WHERE id = ?"),
      licenseByKeyHash: s("SELECT * FROM licenses WHERE key_hash = ?"),
      listLicenses: s("SELECT * FROM licenses ORDER BY issued, id"),
      revokeLicense: s("UPDATE licenses SET revoked = ? WHERE id = ? AND revoked IS NULL"),
      activeSeat: s("SELECT * FROM activations WHERE license_id = ? AND installation = ? AND deactivated IS NULL"),
      activeHolders: s("SELECT * FROM activations WHERE license_id = ? AND deactivated IS NULL ORDER BY created, id"),
      // Kept by the database (migration 2), so reading it does not scan the license's seats.
      countActive: s("SELECT active_seats AS n FROM licenses WHERE id = ?"),
      seatsOf: s("SELECT seats, active_seats, seat_lease FROM licenses WHERE id = ?"),
      // The held seat seen longest ago, if its lease ran out (last seen before the cutoff): the held
      // seats' rows are read (no index orders them by last_seen: migration 24), which only a full
      // licence asks for. Ties go in the held seats' index order. Read, then deactivated by id: 3x
      // cheaper than one UPDATE … WHERE id = (subquery) (bench/README.md).
      lapsedSeat: s(`SELECT * FROM activations WHERE license_id = ? AND deactivated IS NULL AND last_seen < ?
        ORDER BY last_seen LIMIT 1`),
      insertActivation: s(`INSERT INTO activations (id, license_id, kind, installation, device_hash, product, name,
        platform, version, created, last_seen, token_exp) VALUES ($id, $licenseId, $kind, $installation, $deviceHash,
        $product, $name, $platform, $version, $now, $now, $tokenExp)`),
      // token_exp only grows: a token issued earlier under a longer TTL still lives until its own exp.
      touch: s(`UPDATE activations SET product = $product, name = $name, platform = $platform,
        version = $version, last_seen = $now, token_exp = coalesce(max(token_exp, $tokenExp), $tokenExp, token_exp) WHERE id = $id`),
      tokensExpire: s(`SELECT max(token_exp) AS exp FROM ${licenseActivations("?1")}`),
      activationById: s("SELECT * FROM activations WHERE id = ?"),
      // Subqueries rather than a join: bun:sqlite reads a join's columns several times slower
      // (bench/README.md, "Notes behind the code").
      status: s(`SELECT a.deactivated, (SELECT revoked FROM licenses WHERE id = a.license_id) AS license_revoked,
        (SELECT expires FROM licenses WHERE id = a.license_id) AS license_expires FROM activations a WHERE a.id = ?`),
      listActivations: s(`SELECT * FROM ${licenseActivations("?1")} ORDER BY created, id`),
      deactivate: s("UPDATE activations SET deactivated = ? WHERE id = ? AND deactivated IS NULL"),
      insertChallenge: s(`INSERT INTO challenges (nonce_hash, installation, created, expires, used)
        VALUES ($nonceHash, $installation, $created, $expires, NULL)`),
      consumeChallenge: s("UPDATE challenges SET used = ? WHERE nonce_hash = ? AND used IS NULL RETURNING *"),
      challengeExists: s("SELECT 1 FROM challenges WHERE nonce_hash = ?"),
      challengeByHash: s("SELECT * FROM challenges WHERE nonce_hash = ?"),
      pruneChallenges: s("DELETE FROM challenges WHERE expires < ?"),
      insertAudit: s(`INSERT INTO audit (ref, time, address, action, activation_id, license_id, outcome, error, actor)
        VALUES ($ref, $time, $address, $action, $activationId, $licenseId, $outcome, $error, $actor)`),
      insertEvent: s("INSERT INTO events (id, type, time, data) VALUES ($id, $type, $time, $data)"),
      // Read in the writing transaction, so an endpoint added at the same moment is seen or starts after.
      subscribed: s("SELECT 1 FROM webhook_endpoints e, json_each(e.types) t WHERE t.value = ? LIMIT 1"),
      reinstateLicense: s("UPDATE licenses SET revoked = NULL WHERE id = ? AND revoked IS NOT NULL RETURNING *"),
      deactivateReturning: s("UPDATE activations SET deactivated = ? WHERE id = ? AND deactivated IS NULL RETURNING *"),
      pruneAudit: s("DELETE FROM audit WHERE time < ?"),
      ping: s("SELECT 1"),
      controlByKey: s("SELECT * FROM release_controls WHERE lane = ? AND version = ?"),
      upsertControl: s(`INSERT INTO release_controls (lane, version, halted, halted_ms, withdrawn, updated, halt_rule)
        VALUES ($lane, $version, $halted, $haltedMs, $withdrawn, $updated, $haltRule)
        ON CONFLICT (lane, version) DO UPDATE SET halted = excluded.halted, halted_ms = excluded.halted_ms,
        withdrawn = excluded.withdrawn, updated = excluded.updated, halt_rule = excluded.halt_rule`),
      bumpControls: s("UPDATE release_controls_generation SET generation = generation + 1 WHERE id = 1"),
      controlsGeneration: s("SELECT generation FROM release_controls_generation WHERE id = 1"),
      listControls: s("SELECT * FROM release_controls ORDER BY lane, version"),
      insertKnown: s("INSERT INTO known_releases (lane, version, first_seen) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"),
      listKnown: s("SELECT lane, version FROM known_releases ORDER BY lane, version"),
      sighting: s(`UPDATE activations SET last_seen = max(last_seen, $lastSeen), lane = coalesce($lane, lane) WHERE id = $id`),
    };
  }

  async createLicense(l: LicenseRecord, journal: Journal<LicenseRecord> = {}): Promise<void> {
    if (!journal.audit && !journal.event && !journal.meters && !journal.bridge && !journal.mail) {
      this.q.insertLicense.run(licenseParams(l));
      return;
    }
    await this.groupCommit.write(() => {
      this.q.insertLicense.run(licenseParams(l));
      this.journal(journal, l);
    });
  }

  async createLicenseIdempotent(l: LicenseRecord, idem: IdempotencyRecord, journal: Journal<LicenseRecord>, expiredBefore: number): Promise<IdempotentCreate> {
    return this.groupCommit.write((): IdempotentCreate => {
      this.db.query("DELETE FROM idempotency WHERE scope = ? AND key = ? AND created < ?").run(idem.scope, idem.key, expiredBefore);
      const inserted = this.db
        .query(`INSERT INTO idempotency (scope, key, request_hash, answer, created) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT DO NOTHING`)
        .run(idem.scope, idem.key, idem.requestHash, idem.answer, idem.created).changes;
      if (inserted === 0) {
        const r = this.db.query("SELECT * FROM idempotency WHERE scope = ? AND key = ?").get(idem.scope, idem.key) as Row;
        return { outcome: "replayed", record: idempotencyFromRow(r) };
      }
      this.q.insertLicense.run(licenseParams(l));
      this.journal(journal, l);
      return { outcome: "created" };
    });
  }

  async pruneIdempotency(before: number): Promise<number> {
    return this.db.query("DELETE FROM idempotency WHERE created < ?").run(before).changes + pruneMeterUsesSqlite(this.writer, before);
  }

  async updateLicense(id: string, patch: LicensePatch, journal: Journal<LicenseRecord>): Promise<UpdateLicenseResult> {
    return this.groupCommit.write((): UpdateLicenseResult => {
      const current = this.q.licenseById.get(id) as Row | null;
      if (!current) return { outcome: "unknown" };
      const used = current.active_seats as number;
      // Inside the write transaction: no seat can be taken between this check and the update.
      if (patch.seats !== undefined && patch.seats < used) return { outcome: "seats_in_use", seatsUsed: used };
      const { sets, params } = patchColumns(patch);
      if (sets.length === 0) {
        // Only the meters changed (their own table): still the change's audit line and event.
        if (journal.meters) this.journal(journal, licenseFromRow(current));
        return { outcome: "updated", license: licenseFromRow(current), seatsUsed: used };
      }
      const r = this.db.query(`UPDATE licenses SET ${sets.map((c) => `${c} = $${c}`).join(", ")} WHERE id = $id RETURNING *`).get({ ...params, id }) as Row;
      const license = licenseFromRow(r);
      this.endPortalSessions(id, journal);
      this.journal(journal, license);
      return { outcome: "updated", license, seatsUsed: used };
    });
  }

  async reinstateLicense(id: string, journal: Journal<LicenseRecord>): Promise<LicenseRecord | null> {
    return this.groupCommit.write(() => {
      const r = this.q.reinstateLicense.get(id) as Row | null;
      if (!r) return null;
      const license = licenseFromRow(r);
      this.journal(journal, license);
      return license;
    });
  }

  async searchLicenses(query: LicenseQuery): Promise<Array<{ license: LicenseRecord; seatsUsed: number }>> {
    const where: string[] = [];
    const params: Record<string, string | number> = { limit: query.limit };
    if (query.text) {
      where.push(`(lower(licensee) LIKE $text ESCAPE '\\' OR lower(organization) LIKE $text ESCAPE '\\'
        OR lower(coalesce(email, '')) LIKE $text ESCAPE '\\' OR lower(id) LIKE $text ESCAPE '\\')`);
      params.text = containsPattern(query.text);
    }
    if (query.status === "revoked") where.push("revoked IS NOT NULL");
    else if (query.status === "active") where.push("revoked IS NULL AND (expires IS NULL OR expires > $now)"), (params.now = query.now);
    else if (query.status === "expired") where.push("revoked IS NULL AND expires <= $now"), (params.now = query.now);
    if (query.after) {
      where.push("(issued > $afterIssued OR (issued = $afterIssued AND id > $afterId))");
      params.afterIssued = query.after.issued;
      params.afterId = query.after.id;
    }
    const sql = `SELECT * FROM licenses ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY issued, id LIMIT $limit`;
    return (this.db.query(sql).all(params) as Row[]).map((r) => ({ license: licenseFromRow(r), seatsUsed: r.active_seats as number }));
  }

  async upsertStaffLicense(l: LicenseRecord): Promise<LicenseRecord> {
    return licenseFromRow(this.q.upsertStaff.get(licenseParams(l)) as Row);
  }

  async getLicense(id: string): Promise<LicenseRecord | null> {
    const r = this.q.licenseById.get(id) as Row | null;
    return r ? licenseFromRow(r) : null;
  }

  async findLicenseByKeyHash(keyHash: string): Promise<LicenseRecord | null> {
    const r = this.q.licenseByKeyHash.get(keyHash) as Row | null;
    return r ? licenseFromRow(r) : null;
  }

  async listLicenses(): Promise<LicenseRecord[]> {
    return (this.q.listLicenses.all() as Row[]).map(licenseFromRow);
  }

  async revokeLicense(id: string, now: number, journal: Journal<RevokedLicenseRecord> = {}): Promise<boolean> {
    if (!journal.audit && !journal.event && !journal.bridge && journal.endsPortalSessions === undefined) return this.q.revokeLicense.run(now, id).changes > 0;
    return this.groupCommit.write(() => {
      if (this.q.revokeLicense.run(now, id).changes === 0) return false;
      this.endPortalSessions(id, journal);
      const tokensExpire = (this.q.tokensExpire.get(id) as Row).exp as number | null;
      this.journal(journal, { ...licenseFromRow(this.q.licenseById.get(id) as Row), tokensExpire });
      return true;
    });
  }

  /** Journal.endsPortalSessions, inside the transaction of the change. */
  private endPortalSessions(licenseId: string, journal: Pick<Journal<never>, "endsPortalSessions">): void {
    if (journal.endsPortalSessions !== undefined)
      this.db
        .query("UPDATE console_sessions SET revoked = ? WHERE kind = 'portal' AND license_id = ? AND revoked IS NULL")
        .run(journal.endsPortalSessions, licenseId);
  }

  /** Writes a change's audit line and event, inside the transaction of the change. */
  private journal<T>(journal: Journal<T>, after: T): void {
    if (journal.meters) writeMetersSqlite(this.writer, journal.meters);
    if (journal.audit) this.q.insertAudit.run(auditParams(journal.audit));
    if (journal.bridge) this.insertBridge(journal.bridge(after), false);
    const event = journal.event?.(after);
    if (event) this.insertEvent(event);
    for (const m of journal.mail ?? []) insertMailSqlite(this.db, m);
  }

  /** The event's row and its links; a recorded event throws (`orIgnore`: answers false instead). */
  private insertBridge(w: BridgeWrite, orIgnore: boolean): boolean {
    const p = bridgeEventParams(w.event);
    const inserted = this.db
      .query(
        `INSERT INTO bridge_events (provider, event_id, type, received, outcome, detail, license_id)
         VALUES ($provider, $event_id, $type, $received, $outcome, $detail, $license_id)${orIgnore ? " ON CONFLICT DO NOTHING" : ""}`,
      )
      .run(p).changes;
    if (inserted === 0) return false;
    for (const l of w.links)
      this.db
        .query(
          `INSERT INTO bridge_links (provider, reference, license_id, alias) VALUES (?, ?, ?, ?)
           ON CONFLICT (provider, reference) DO UPDATE SET license_id = excluded.license_id, alias = NULL
           WHERE bridge_links.license_id IS NULL AND excluded.license_id IS NOT NULL`,
        )
        .run(l.provider, l.reference, l.licenseId, l.alias ?? null);
    return true;
  }

  async getBridgeEvent(provider: string, eventId: string): Promise<BridgeEventRecord | null> {
    const r = this.db.query("SELECT * FROM bridge_events WHERE provider = ? AND event_id = ?").get(provider, eventId) as Row | null;
    return r ? bridgeEventFromRow(r) : null;
  }

  async recordBridgeEvent(write: BridgeWrite): Promise<boolean> {
    return this.groupCommit.write(() => this.insertBridge(write, true));
  }

  async countBridgeReplay(provider: string, eventId: string): Promise<void> {
    await this.groupCommit.write(() =>
      this.db.query("UPDATE bridge_events SET replays = replays + 1 WHERE provider = ? AND event_id = ?").run(provider, eventId),
    );
  }

  async findBridgeLink(provider: string, references: readonly string[]): Promise<string | null> {
    const find = this.db.query("SELECT license_id, alias FROM bridge_links WHERE provider = ? AND reference = ?");
    for (const reference of references) {
      const r = find.get(provider, reference) as Row | null;
      if (r?.license_id) return r.license_id;
      const aliased = r?.alias ? (find.get(provider, r.alias) as Row | null) : null;
      if (aliased?.license_id) return aliased.license_id;
    }
    return null;
  }

  async rememberBridgeCustomer(provider: string, customer: string, email: string, updated: number): Promise<void> {
    await this.groupCommit.write(() =>
      this.db
        .query(
          `INSERT INTO bridge_customers (provider, customer, email, updated) VALUES (?, ?, ?, ?)
           ON CONFLICT (provider, customer) DO UPDATE SET email = excluded.email, updated = excluded.updated WHERE excluded.updated >= bridge_customers.updated`,
        )
        .run(provider, customer, email, updated),
    );
  }

  async bridgeCustomerEmail(provider: string, customer: string): Promise<string | null> {
    const r = this.db.query("SELECT email FROM bridge_customers WHERE provider = ? AND customer = ?").get(provider, customer) as Row | null;
    return r ? r.email : null;
  }

  async listBridgeEvents(q: { before?: { received: number; provider: string; eventId: string }; limit: number }): Promise<BridgeEventRecord[]> {
    const rows = q.before
      ? this.db
          .query("SELECT * FROM bridge_events WHERE (received, provider, event_id) < (?, ?, ?) ORDER BY received DESC, provider DESC, event_id DESC LIMIT ?")
          .all(q.before.received, q.before.provider, q.before.eventId, q.limit)
      : this.db.query("SELECT * FROM bridge_events ORDER BY received DESC, provider DESC, event_id DESC LIMIT ?").all(q.limit);
    return (rows as Row[]).map(bridgeEventFromRow);
  }

  private insertEvent(e: NewEvent): void {
    if (!e.feed && this.q.subscribed.get(e.type) === null) return;
    this.q.insertEvent.run({ id: e.id, type: e.type, time: e.time, data: e.data });
  }

  // Runs inside a group commit's transaction (BEGIN IMMEDIATE): the write lock is held from before
  // the count to after the insert, so no other process can take a seat in between.
  private activateNow(input: ActivateInput): ActivateResult {
    const q = this.q;
    const existing = q.activeSeat.get(input.licenseId, input.installation) as Row | null;
    if (existing) {
      q.touch.run({ ...deviceFields(input), id: existing.id, now: input.now, tokenExp: input.tokenExp ?? null });
      const used = (q.countActive.get(input.licenseId) as Row).n;
      this.auditSeat(input, existing.id);
      return this.withEvent(input, { outcome: "reused", activation: activationFromRow(q.activationById.get(existing.id) as Row), seatsUsed: used });
    }
    const license = q.seatsOf.get(input.licenseId) as Row;
    const used = license.active_seats as number;
    let reclaimed: ActivationRecord | undefined;
    if (used >= license.seats) {
      const lapsed = license.seat_lease === null ? null : (q.lapsedSeat.get(input.licenseId, input.now - license.seat_lease) as Row | null);
      if (!lapsed) return this.withEvent(input, { outcome: "seat_limit", holders: (q.activeHolders.all(input.licenseId) as Row[]).map(activationFromRow) });
      // Within the write transaction: nothing can have changed the row since it was read.
      q.deactivate.run(input.now, lapsed.id);
      reclaimed = activationFromRow({ ...lapsed, deactivated: input.now });
    }
    q.insertActivation.run({
      ...deviceFields(input),
      id: input.newId,
      licenseId: input.licenseId,
      kind: input.kind,
      installation: input.installation,
      now: input.now,
      tokenExp: input.tokenExp ?? null,
    });
    this.auditSeat(input, input.newId);
    const activation: ActivationRecord = {
      id: input.newId,
      licenseId: input.licenseId,
      kind: input.kind,
      installation: input.installation,
      ...deviceFields(input),
      created: input.now,
      lastSeen: input.now,
      deactivated: null,
      tokenExp: input.tokenExp ?? null,
    };
    if (!reclaimed) return this.withEvent(input, { outcome: "created", activation, seatsUsed: used + 1 });
    const journal = input.reclaim?.(reclaimed, activation);
    if (journal) {
      q.insertAudit.run(auditParams(journal.audit));
      for (const e of journal.events) this.insertEvent(e);
    }
    return this.withEvent(input, { outcome: "created", activation, seatsUsed: used, reclaimed });
  }

  private auditSeat(input: ActivateInput, activationId: string): void {
    if (input.audit) this.q.insertAudit.run(auditParams({ ...input.audit, activationId }));
  }

  private withEvent(input: ActivateInput, result: ActivateResult): ActivateResult {
    const event = input.event?.(result);
    if (event) this.insertEvent(event);
    return result;
  }

  async activate(input: ActivateInput): Promise<ActivateResult> {
    return this.groupCommit.write(() => this.activateNow(input));
  }

  async getActivation(id: string): Promise<ActivationRecord | null> {
    const r = this.q.activationById.get(id) as Row | null;
    return r ? activationFromRow(r) : null;
  }

  // Two single-table reads in one read transaction: cheaper in bun:sqlite than a join of both rows,
  // or than reads each in a transaction of its own (bench/README.md, "Notes behind the code").
  async getActivationWithLicense(id: string): Promise<ActivationWithLicense | null> {
    return this.readActivationWithLicense(id);
  }

  // Every bearer request reads its activation's status. A status already read is reused only while
  // nothing was committed since, by this connection or any other (an admin command revoking).
  private readonly statusCache = new Map<string, ActivationStatus>();

  async activationStatus(id: string): Promise<ActivationStatus | null> {
    if (this.writeStamp.changedSinceLastCall()) this.statusCache.clear();
    const cached = this.statusCache.get(id);
    if (cached) return cached;
    const r = this.q.status.get(id) as Row | null;
    if (!r) return null;
    const status = { deactivated: r.deactivated, licenseRevoked: r.license_revoked, licenseExpires: r.license_expires };
    if (this.statusCache.size >= STATUS_CACHE_SIZE) this.statusCache.clear();
    this.statusCache.set(id, status);
    return status;
  }

  async touchActivation(id: string, device: DeviceFields, now: number, tokenExp?: number): Promise<void> {
    this.q.touch.run({ ...deviceFields(device), id, now, tokenExp: tokenExp ?? null });
  }

  async listActivations(licenseId: string): Promise<ActivationRecord[]> {
    return (this.q.listActivations.all(licenseId) as Row[]).map(activationFromRow);
  }

  async countActiveSeats(licenseId: string): Promise<number> {
    return (this.q.countActive.get(licenseId) as Row | null)?.n ?? 0;
  }

  async deactivate(id: string, now: number, journal: Journal<ActivationRecord> = {}): Promise<boolean> {
    if (!journal.audit && !journal.event) return this.q.deactivate.run(now, id).changes > 0;
    return this.groupCommit.write(() => {
      const r = this.q.deactivateReturning.get(now, id) as Row | null;
      if (!r) return false;
      this.journal(journal, activationFromRow(r));
      return true;
    });
  }

  async createChallenge(c: ChallengeRecord): Promise<void> {
    this.q.insertChallenge.run({ nonceHash: c.nonceHash, installation: c.installation, created: c.created, expires: c.expires });
  }

  async findChallenge(nonceHash: string): Promise<ChallengeRecord | null> {
    const r = this.q.challengeByHash.get(nonceHash) as Row | null;
    return r ? challengeFromRow(r) : null;
  }

  async consumeChallenge(nonceHash: string, now: number): Promise<ConsumeResult> {
    const r = this.q.consumeChallenge.get(now, nonceHash) as Row | null;
    if (r) return { outcome: "consumed", challenge: challengeFromRow(r) };
    return this.q.challengeExists.get(nonceHash) ? { outcome: "used" } : { outcome: "unknown" };
  }

  async pruneChallenges(before: number): Promise<number> {
    return this.q.pruneChallenges.run(before).changes;
  }

  async writeAudit(a: AuditRecord): Promise<void> {
    await this.groupCommit.write(() => void this.q.insertAudit.run(auditParams(a)));
  }

  async listAudit(f: AuditFilter): Promise<AuditRecord[]> {
    const { sql, params } = auditSearch(f);
    return (this.db.query(sql).all(params) as Row[]).map(auditFromRow);
  }

  async pruneAudit(before: number): Promise<number> {
    return this.q.pruneAudit.run(before).changes;
  }

  async appendEvent(event: NewEvent, audit?: AuditRecord): Promise<void> {
    await this.groupCommit.write(() => this.journal({ audit, event: () => event }, null));
  }

  async pruneEvents(before: number): Promise<{ events: number; deliveries: number }> {
    return this.db
      .transaction(() => {
        const deliveries = this.db.query("DELETE FROM webhook_deliveries WHERE created < ? AND status <> 'pending'").run(before).changes;
        const deleted = this.db
          .query(`DELETE FROM events WHERE time < ? AND seq <= (SELECT seq FROM webhook_fanout WHERE name = 'events')
        AND seq < (SELECT max(seq) FROM events) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = events.seq)
        RETURNING seq`)
          .values(before) as number[][];
        const newest = deleted.reduce((m, [seq]) => Math.max(m, seq!), 0);
        if (newest > 0) this.db.query("UPDATE feed_epoch SET pruned_through = max(pruned_through, ?) WHERE id = 1").run(newest);
        return { events: deleted.length, deliveries };
      })
      .immediate();
  }

  async listEvents(f: EventFilter): Promise<EventRecord[]> {
    const types = f.types ?? null;
    const sql = `SELECT * FROM events WHERE seq > ? ${types ? `AND type IN (${types.map(() => "?").join(", ")})` : ""} ORDER BY seq LIMIT ?`;
    return (this.db.query(sql).all(Number(f.after), ...(types ?? []), f.limit) as Row[]).map(eventFromRow);
  }

  async feedPosition(): Promise<FeedPosition> {
    const r = this.db.query("SELECT epoch, pruned_through, (SELECT coalesce(max(seq), 0) FROM events) AS newest FROM feed_epoch WHERE id = 1").get() as Row;
    return { epoch: r.epoch, newest: BigInt(r.newest), prunedThrough: BigInt(r.pruned_through) };
  }

  async listFeedState(q: FeedStateQuery): Promise<FeedStateRow[]> {
    return this.db.query(FEED_STATE_SQL[q.section]).all({ now: q.now, after: q.after ?? "", limit: q.limit, ttl: q.fallbackTtlMs }) as FeedStateRow[];
  }

  async createAdminToken(t: AdminTokenRecord, audit?: AuditRecord): Promise<void> {
    await this.groupCommit.write(() => {
      this.db
        .query(`INSERT INTO admin_tokens (id, name, secret_hash, scopes, created, expires, revoked, last_used)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
        .run(t.id, t.name, t.secretHash, JSON.stringify(t.scopes), t.created, t.expires, t.revoked, t.lastUsed);
      this.journal({ audit }, null);
    });
  }

  async findAdminTokenBySecretHash(secretHash: string): Promise<AdminTokenRecord | null> {
    const r = this.db.query("SELECT * FROM admin_tokens WHERE secret_hash = ?").get(secretHash) as Row | null;
    return r ? adminTokenFromRow(r) : null;
  }

  async listAdminTokens(): Promise<AdminTokenRecord[]> {
    return (this.db.query("SELECT * FROM admin_tokens ORDER BY created, id").all() as Row[]).map(adminTokenFromRow);
  }

  async revokeAdminToken(id: string, now: number, audit?: AuditRecord): Promise<boolean> {
    return this.groupCommit.write(() => {
      if (this.db.query("UPDATE admin_tokens SET revoked = ? WHERE id = ? AND revoked IS NULL").run(now, id).changes === 0) return false;
      this.db.query("UPDATE console_sessions SET revoked = ? WHERE token_id = ? AND revoked IS NULL").run(now, id);
      this.journal({ audit }, null);
      return true;
    });
  }

  async touchAdminToken(id: string, now: number, staleBefore: number): Promise<void> {
    this.db.query("UPDATE admin_tokens SET last_used = ? WHERE id = ? AND (last_used IS NULL OR last_used < ?)").run(now, id, staleBefore);
  }

  async createConsoleSession(c: ConsoleSessionRecord, audit?: AuditRecord): Promise<void> {
    await this.groupCommit.write(() => {
      this.db
        .query(`INSERT INTO console_sessions (id_hash, kind, token_id, subject, license_id, name, scopes, staff_groups, detail, created, expires, revoked)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
        .run(
          c.idHash,
          c.kind,
          c.tokenId,
          c.subject,
          c.licenseId,
          c.name,
          JSON.stringify(c.scopes),
          staffGroupsText(c),
          c.detail,
          c.created,
          c.expires,
          c.revoked,
        );
      this.journal({ audit }, null);
    });
  }

  async findConsoleSession(idHash: string): Promise<ConsoleSessionRecord | null> {
    const r = this.db.query("SELECT * FROM console_sessions WHERE id_hash = ?").get(idHash) as Row | null;
    return r ? consoleSessionFromRow(r) : null;
  }

  async revokeConsoleSession(idHash: string, now: number, audit?: AuditRecord): Promise<boolean> {
    return this.groupCommit.write(() => {
      if (this.db.query("UPDATE console_sessions SET revoked = ? WHERE id_hash = ? AND revoked IS NULL").run(now, idHash).changes === 0) return false;
      this.journal({ audit }, null);
      return true;
    });
  }

  async listConsoleSessions(now: number, limit: number): Promise<ConsoleSessionRecord[]> {
    const rows = this.db
      .query("SELECT * FROM console_sessions WHERE kind = 'console' AND revoked IS NULL AND expires > ? ORDER BY created DESC, id_hash LIMIT ?")
      .all(now, limit) as Row[];
    return rows.map(consoleSessionFromRow);
  }

  async pruneConsoleSessions(before: number): Promise<number> {
    return this.db.query("DELETE FROM console_sessions WHERE expires < ?").run(before).changes;
  }

  async createWebhookEndpoint(e: Omit<WebhookEndpointRecord, "afterSeq">, audit?: AuditRecord): Promise<WebhookEndpointRecord> {
    return this.groupCommit.write(() => {
      const r = this.db
        .query(`INSERT INTO webhook_endpoints (id, url, types, secret, enabled, disabled_reason, created, after_seq)
          VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) FROM events)) RETURNING *`)
        .get(e.id, e.url, JSON.stringify(e.types), e.secret, e.enabled ? 1 : 0, e.disabledReason, e.created) as Row;
      this.journal({ audit }, null);
      return endpointFromRow(r);
    });
  }

  async listWebhookEndpoints(): Promise<WebhookEndpointRecord[]> {
    return (this.db.query("SELECT * FROM webhook_endpoints ORDER BY created, id").all() as Row[]).map(endpointFromRow);
  }

  async getWebhookEndpoint(id: string): Promise<WebhookEndpointRecord | null> {
    const r = this.db.query("SELECT * FROM webhook_endpoints WHERE id = ?").get(id) as Row | null;
    return r ? endpointFromRow(r) : null;
  }

  async setWebhookEndpointEnabled(id: string, enabled: boolean, reason: string | null, audit?: AuditRecord): Promise<boolean> {
    return this.groupCommit.write(() => {
      const changed = this.db.query("UPDATE webhook_endpoints SET enabled = ?, disabled_reason = ? WHERE id = ?").run(enabled ? 1 : 0, reason, id).changes > 0;
      if (changed) this.journal({ audit }, null);
      return changed;
    });
  }

  async setWebhookEndpointSecret(id: string, secret: string, audit?: AuditRecord): Promise<boolean> {
    return this.groupCommit.write(() => {
      const changed = this.db.query("UPDATE webhook_endpoints SET secret = ? WHERE id = ?").run(secret, id).changes > 0;
      if (changed) this.journal({ audit }, null);
      return changed;
    });
  }

  async removeWebhookEndpoint(id: string, audit?: AuditRecord): Promise<boolean> {
    return this.groupCommit.write(() => {
      const removed = this.db.query("DELETE FROM webhook_endpoints WHERE id = ?").run(id).changes > 0;
      if (removed) this.journal({ audit }, null);
      return removed;
    });
  }

  async fanOutEvents(now: number, limit: number, newDeliveryId: () => string): Promise<number> {
    return this.groupCommit.write(() => {
      const cursor = (this.db.query("SELECT seq FROM webhook_fanout WHERE name = 'events'").get() as Row).seq as number;
      const newest = (this.db.query("SELECT coalesce(max(seq), 0) AS seq FROM events").get() as Row).seq as number;
      if (newest <= cursor) return 0;
      const endpoints = (this.db.query("SELECT * FROM webhook_endpoints WHERE enabled = 1").all() as Row[]).map(endpointFromRow);
      // No endpoint to deliver to: pass every event at once, reading none (an endpoint added later
      // starts after the newest event anyway).
      if (endpoints.length === 0) {
        const passed = (this.db.query("SELECT count(*) AS n FROM events WHERE seq > ?").get(cursor) as Row).n as number;
        this.db.query("UPDATE webhook_fanout SET seq = ? WHERE name = 'events'").run(newest);
        return passed;
      }
      const events = this.db.query("SELECT seq, id, type FROM events WHERE seq > ? ORDER BY seq LIMIT ?").all(cursor, limit) as EventHead[];
      const insert = this.db.query(`INSERT INTO webhook_deliveries (id, endpoint_id, event_seq, event_id, status, attempts, next_attempt, created)
        VALUES (?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT DO NOTHING`);
      for (const event of events) for (const endpoint of subscribers(endpoints, event)) insert.run(newDeliveryId(), endpoint.id, event.seq, event.id, now, now);
      this.db.query("UPDATE webhook_fanout SET seq = ? WHERE name = 'events'").run(events.at(-1)!.seq);
      return events.length;
    });
  }

  async claimDeliveries(now: number, leaseUntil: number, owner: string, limit: number): Promise<ClaimedDelivery[]> {
    return this.groupCommit.write(() => {
      const rows = this.db
        .query(`UPDATE webhook_deliveries SET lease_until = $leaseUntil, lease_owner = $owner WHERE id IN (
            SELECT id FROM (
              SELECT d.id, d.next_attempt, d.event_seq,
                ROW_NUMBER() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt, d.event_seq) AS n
              FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
              WHERE d.status = 'pending' AND d.next_attempt <= $now AND (d.lease_until IS NULL OR d.lease_until < $now) AND e.enabled = 1
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries b WHERE b.endpoint_id = d.endpoint_id AND b.status = 'pending' AND b.lease_until >= $now))
            WHERE n = 1 ORDER BY next_attempt, event_seq LIMIT $limit) RETURNING *`)
        .all({ leaseUntil, owner, now, limit }) as Row[];
      return rows.map((r) => ({
        delivery: deliveryFromRow(r),
        endpoint: endpointFromRow(this.db.query("SELECT * FROM webhook_endpoints WHERE id = ?").get(r.endpoint_id) as Row),
        event: eventFromRow(this.db.query("SELECT * FROM events WHERE seq = ?").get(r.event_seq) as Row),
        leaseOwner: owner,
      }));
    });
  }

  async recordAttempt(a: AttemptRecord, owner: string, outcome: AttemptOutcome): Promise<boolean> {
    return this.groupCommit.write(() => {
      const r = this.db
        .query(`UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_attempt = ?, last_attempt = ?,
            lease_until = NULL, lease_owner = NULL WHERE id = ? AND lease_owner = ? RETURNING endpoint_id`)
        .get(outcome.status, outcome.status === "pending" ? outcome.nextAttempt : a.time, a.time, a.deliveryId, owner) as Row | null;
      if (!r) return false;
      this.db
        .query("INSERT INTO webhook_attempts (delivery_id, attempt, time, duration_ms, status_code, error) VALUES (?, ?, ?, ?, ?, ?)")
        .run(a.deliveryId, a.attempt, a.time, a.durationMs, a.statusCode, a.error);
      if (outcome.status === "failed" && outcome.disableEndpoint)
        this.db.query("UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ?").run(outcome.disableEndpoint, r.endpoint_id);
      return true;
    });
  }

  async listDeliveries(f: DeliveryFilter): Promise<DeliveryRecord[]> {
    const where: string[] = [];
    const params: Record<string, string | number> = { limit: f.limit };
    if (f.endpointId !== undefined) where.push("endpoint_id = $endpointId"), (params.endpointId = f.endpointId);
    if (f.status !== undefined) where.push("status = $status"), (params.status = f.status);
    if (f.after !== undefined) where.push("id < $after"), (params.after = f.after);
    const sql = `SELECT * FROM webhook_deliveries ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY id DESC LIMIT $limit`;
    return (this.db.query(sql).all(params) as Row[]).map(deliveryFromRow);
  }

  async getDelivery(id: string): Promise<DeliveryRecord | null> {
    const r = this.db.query("SELECT * FROM webhook_deliveries WHERE id = ?").get(id) as Row | null;
    return r ? deliveryFromRow(r) : null;
  }

  async listAttempts(deliveryId: string): Promise<AttemptRecord[]> {
    return (this.db.query("SELECT * FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt").all(deliveryId) as Row[]).map(attemptFromRow);
  }

  async retryDelivery(id: string, now: number, audit?: AuditRecord): Promise<boolean> {
    return this.groupCommit.write(() => {
      const changed =
        this.db.query("UPDATE webhook_deliveries SET status = 'pending', next_attempt = ? WHERE id = ? AND status <> 'delivered'").run(now, id).changes > 0;
      if (changed) this.journal({ audit }, null);
      return changed;
    });
  }

  async applyReleaseControl(
    key: ReleaseKey,
    op: ReleaseControlOp,
    now: number,
    journal: Journal<ReleaseControlRecord> = {},
    haltRule?: string,
  ): Promise<{ changed: boolean; control: ReleaseControlRecord }> {
    return this.groupCommit.write(() => {
      const row = this.q.controlByKey.get(key.lane, key.version) as Row | null;
      const before = row ? releaseControlFromRow(row) : noControl(key, now);
      const after = applyControl(before, op, now, haltRule);
      if (!after) return { changed: false, control: before };
      this.q.upsertControl.run({ ...after, haltRule: after.haltRule ?? null });
      this.q.bumpControls.run();
      this.journal(journal, after);
      this.controlsCheckedAt = -Infinity;
      return { changed: true, control: after };
    });
  }

  async listReleaseControls(): Promise<ReleaseControlRecord[]> {
    return (this.q.listControls.all() as Row[]).map(releaseControlFromRow);
  }

  // The WAL-index read (a pread, 1.5–2.5 µs) is shared by the requests of one millisecond: another
  // process's change is seen within a millisecond of its commit, this process's own at once.
  async releaseControlsGeneration(): Promise<number> {
    const now = performance.now();
    if (now - this.controlsCheckedAt < CONTROLS_CHECK_MS) return this.controlsGeneration;
    this.controlsCheckedAt = now;
    if (this.controlsStamp.changedSinceLastCall()) this.controlsGeneration = (this.q.controlsGeneration.get() as Row).generation;
    return this.controlsGeneration;
  }

  async recordKeyCheck(candidate: string): Promise<string> {
    return this.groupCommit.write(() => {
      this.db.query("INSERT INTO record_key_check (id, value) VALUES (1, ?) ON CONFLICT DO NOTHING").run(candidate);
      return (this.db.query("SELECT value FROM record_key_check WHERE id = 1").get() as Row).value as string;
    });
  }

  async readRecordKeyCheck(): Promise<string | null> {
    return ((this.db.query("SELECT value FROM record_key_check WHERE id = 1").get() as Row | null)?.value as string | undefined) ?? null;
  }

  async listSealed(prefix: string, limit = -1): Promise<SealedValue[]> {
    const secrets = this.db
      .query("SELECT id, secret FROM webhook_endpoints WHERE substr(secret, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2")
      .all(prefix, limit) as Row[];
    const answers = this.db
      .query("SELECT scope, key, answer FROM idempotency WHERE substr(answer, 1, length(?1)) = ?1 ORDER BY scope, key LIMIT ?2")
      .all(prefix, limit) as Row[];
    const mails = this.db.query("SELECT id, body FROM mail_outbox WHERE substr(body, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2").all(prefix, limit) as Row[];
    return [
      ...secrets.map((r): SealedValue => ({ kind: "webhook-secret", endpointId: r.id as string, value: r.secret as string })),
      ...answers.map((r): SealedValue => ({ kind: "idempotency-answer", scope: r.scope as string, key: r.key as string, value: r.answer as string })),
      ...mails.map((r): SealedValue => ({ kind: "mail-body", mailId: r.id as string, value: r.body as string })),
    ];
  }

  async replaceSealed(prefix: string, values: readonly SealedChange[], check: { readonly before: string | null; readonly after: string }): Promise<boolean> {
    const changed = new Error("changed meanwhile");
    try {
      await this.groupCommit.write(() => {
        const kept =
          check.before === null
            ? this.db.query("INSERT INTO record_key_check (id, value) VALUES (1, ?) ON CONFLICT DO NOTHING").run(check.after)
            : this.db.query("UPDATE record_key_check SET value = ? WHERE id = 1 AND value = ?").run(check.after, check.before);
        if (kept.changes !== 1) throw changed;
        const secret = this.db.query("UPDATE webhook_endpoints SET secret = ? WHERE id = ? AND secret = ?");
        const answer = this.db.query("UPDATE idempotency SET answer = ? WHERE scope = ? AND key = ? AND answer = ?");
        const mail = this.db.query("UPDATE mail_outbox SET body = ? WHERE id = ? AND body = ?");
        for (const v of values) {
          const result =
            v.kind === "mail-body"
              ? mail.run(v.after, v.mailId, v.value)
              : v.kind === "webhook-secret"
                ? secret.run(v.after, v.endpointId, v.value)
                : answer.run(v.after, v.scope, v.key, v.value);
          if (result.changes !== 1) throw changed;
        }
        const held = this.db
          .query(
            "SELECT (SELECT count(*) FROM webhook_endpoints WHERE substr(secret, 1, length(?1)) = ?1) + (SELECT count(*) FROM idempotency WHERE substr(answer, 1, length(?1)) = ?1) + (SELECT count(*) FROM mail_outbox WHERE substr(body, 1, length(?1)) = ?1) AS n",
          )
          .get(prefix) as Row;
        if (held.n !== values.length) throw changed;
      });
      return true;
    } catch (e) {
      if (e === changed) return false;
      throw e;
    }
  }

  async noteVariant(variant: string, now: number): Promise<{ readonly variant: string; readonly noted: number }> {
    const read = () => this.db.query("SELECT variant, noted FROM records_variant WHERE id = 1").get() as Row | null;
    // Read first: a start on noted records writes nothing.
    const row =
      read() ??
      (await this.groupCommit.write(() => {
        this.db.query("INSERT INTO records_variant (id, variant, noted) VALUES (1, ?, ?) ON CONFLICT DO NOTHING").run(variant, now);
        return read()!;
      }));
    return { variant: row.variant as string, noted: row.noted as number };
  }

  async recordKnownReleases(releases: readonly ReleaseKey[], now: number, eventOf?: (release: ReleaseKey) => NewEvent): Promise<ReleaseKey[]> {
    if (releases.length === 0) return [];
    return this.groupCommit.write(() => {
      const baseline = this.db.query("INSERT INTO known_releases_baseline (id, taken) VALUES (1, ?) ON CONFLICT DO NOTHING").run(now).changes > 0;
      const added = releases.filter((r) => this.q.insertKnown.run(r.lane, r.version, now).changes > 0);
      if (baseline) return [];
      if (eventOf) for (const r of added) this.insertEvent(eventOf(r));
      return added;
    });
  }

  async listKnownReleases(): Promise<ReleaseKey[]> {
    return (this.q.listKnown.all() as Row[]).map((r) => ({ lane: r.lane as string, version: r.version as string }));
  }

  async recordInstallReports(reports: readonly InstallReport[]): Promise<void> {
    if (reports.length === 0) return;
    await this.groupCommit.write(() => writeInstallReports(this.db, reports));
  }

  async installReportsPerDay(since: number): Promise<InstallReportCount[]> {
    return installReportsPerDay(this.db, since);
  }

  async releaseHealth(release: ReleaseKey, since: number, without?: string): Promise<{ reports: number; failed: number }> {
    return releaseHealth(this.db, release, since, without);
  }

  async releaseRunners(release: ReleaseKey, limit: number): Promise<string[]> {
    return releaseRunners(this.db, release, limit);
  }

  async recordSightings(sightings: readonly Sighting[]): Promise<void> {
    if (sightings.length === 0) return;
    await this.groupCommit.write(() => {
      for (const s of sightings) this.q.sighting.run({ id: s.activationId, lastSeen: s.lastSeen, lane: s.lane });
    });
  }

  async installationsSeen(since: number): Promise<InstallationCount[]> {
    return this.installationsSeenIn(WHOLE, since);
  }

  async installationsSeenIn(range: IdRange, since: number): Promise<InstallationCount[]> {
    const rows = this.db
      .query(`SELECT product, lane, version, count(*) AS n FROM activations
        WHERE id >= $from AND id < $to AND deactivated IS NULL AND last_seen >= $since
        GROUP BY product, lane, version ORDER BY lane IS NULL, lane, product, version`)
      .all({ ...bounds(range), since }) as Row[];
    return rows.map((r) => ({ product: r.product, lane: r.lane, version: r.version, installations: r.n }));
  }

  async devicesOnLane(lane: string, since: number, limit: number): Promise<{ deviceHash: string; kind: EntitlementKind }[]> {
    const rows = this.db
      .query("SELECT device_hash, kind FROM activations WHERE lane = ? AND deactivated IS NULL AND last_seen >= ? LIMIT ?")
      .all(lane, since, limit) as Row[];
    return rows.map((r) => ({ deviceHash: r.device_hash, kind: r.kind }));
  }

  async activationsPerDay(since: number): Promise<DayCount[]> {
    const rows = this.db
      .query(`SELECT time / ${DAY_MS} AS day,
          sum(outcome = 'ok' AND action IN ('activate', 'sign-in')) AS activations,
          sum(error = 'seat_limit') AS refusals
        FROM audit WHERE time >= ? AND (action IN ('activate', 'sign-in')) GROUP BY day ORDER BY day`)
      .all(since) as Row[];
    return rows.map((r) => ({ day: r.day * DAY_MS, activations: r.activations ?? 0, seatLimitRefusals: r.refusals ?? 0 }));
  }

  async activationsOnDay(day: number): Promise<DayCount | null> {
    const r = this.db
      .query(`SELECT count(*) AS n, sum(outcome = 'ok') AS activations, sum(error = 'seat_limit') AS refusals
        FROM audit WHERE action IN ('activate', 'sign-in') AND time >= $day AND time < $end`)
      .get({ day, end: day + DAY_MS }) as Row;
    return r.n === 0 ? null : { day, activations: r.activations ?? 0, seatLimitRefusals: r.refusals ?? 0 };
  }

  async seatCounts(now: number): Promise<{ inUse: number; lapsed: number }> {
    return this.seatCountsIn(WHOLE, now);
  }

  async seatCountsIn(range: IdRange, now: number): Promise<{ inUse: number; lapsed: number }> {
    // licenses.active_seats is kept by triggers (migration 2); only leased licenses have seats to look at.
    const r = this.db
      .query(`SELECT sum(active_seats) AS held, sum(CASE WHEN seat_lease IS NULL THEN 0 ELSE
          (SELECT count(*) FROM activations a WHERE a.license_id = l.id AND a.deactivated IS NULL AND a.last_seen < $now - l.seat_lease) END) AS lapsed
        FROM licenses l WHERE id >= $from AND id < $to AND kind = 'license' AND revoked IS NULL`)
      .get({ ...bounds(range), now }) as Row;
    const lapsed = r.lapsed ?? 0;
    return { inUse: (r.held ?? 0) - lapsed, lapsed };
  }

  async licensesExpiring(from: number, to: number, limit: number, mailable?: MailableLicences): Promise<LicenseRecord[]> {
    const rows = this.db
      .query(`SELECT * FROM licenses WHERE kind = 'license' AND revoked IS NULL AND expires >= ? AND expires < ?
        AND (? IS NULL OR (email IS NOT NULL AND (json_extract(metadata, ?) IS NULL OR json_extract(metadata, ?) IS NOT NULL)))
        ORDER BY expires, id LIMIT ?`)
      .all(from, to, mailable?.without ?? null, ...metadataPaths(mailable), limit) as Row[];
    return rows.map(licenseFromRow);
  }

  async sliceEnd(table: "activations" | "licenses", from: string | null, step: number): Promise<string | null> {
    const r = this.db.query(`SELECT id FROM ${table} WHERE id >= ? ORDER BY id LIMIT 1 OFFSET ?`).get(from ?? "", step) as Row | null;
    return r ? (r.id as string) : null;
  }

  async rolloutReleaseNumbers(releases: readonly ReleaseKey[], dropLimit: number): Promise<{ numbers: number[]; dropped: number }> {
    return this.groupCommit.write(() => {
      const numbers = releases.map((r) => {
        this.db.query("INSERT INTO rollout_releases (lane, version) VALUES (?, ?) ON CONFLICT DO NOTHING").run(r.lane, r.version);
        return (this.db.query("SELECT no FROM rollout_releases WHERE lane = ? AND version = ?").get(r.lane, r.version) as Row).no as number;
      });
      const kept = new Set(numbers);
      let dropped = 0;
      for (const { no } of this.db.query("SELECT no FROM rollout_releases").all() as Row[]) {
        if (kept.has(no) || dropped >= dropLimit) continue;
        dropped += this.db
          .query(`DELETE FROM rollout_buckets WHERE release_no = $no AND activation_id IN
            (SELECT activation_id FROM rollout_buckets WHERE release_no = $no LIMIT $limit)`)
          .run({ no, limit: dropLimit - dropped }).changes;
        if (dropped < dropLimit) this.db.query("DELETE FROM rollout_releases WHERE no = ?").run(no);
      }
      return { numbers, dropped };
    });
  }

  async rolloutReachIn(range: IdRange, releases: readonly RolloutCountQuery[], since: number): Promise<RolloutReach[]> {
    if (releases.length === 0) return [];
    const active = "a.id >= $from AND a.id < $to AND a.deactivated IS NULL AND a.last_seen >= $since";
    const params = { ...bounds(range), since };
    const lanes = new Map(
      (
        this.db.query(`SELECT a.lane, count(*) AS seen, sum(a.kind = 'staff') AS staff FROM activations a WHERE ${active} GROUP BY a.lane`).all(params) as Row[]
      ).map((r) => [r.lane as string | null, { seen: r.seen as number, staff: r.staff as number }]),
    );
    // One seek per installation reads its buckets of every release (keyed by installation first);
    // each release's lane and threshold are chosen by its number.
    const byNo = (value: (i: number) => string) => `CASE b.release_no ${releases.map((r, i) => `WHEN ${r.no} THEN ${value(i)}`).join(" ")} END`;
    const counted = new Map(
      (
        this.db
          .query(`SELECT b.release_no AS no, count(*) AS bucketed, sum(b.bucket < ${byNo((i) => `$threshold${i}`)}) AS admitted
          FROM activations a JOIN rollout_buckets b ON b.activation_id = a.id
          WHERE ${active} AND a.kind <> 'staff' AND b.release_no IN (${releases.map((r) => r.no).join(", ")}) AND a.lane = ${byNo((i) => `$lane${i}`)}
          GROUP BY b.release_no`)
          .all({
            ...params,
            ...Object.fromEntries(
              releases.flatMap((r, i) => [
                [`threshold${i}`, storedBucket(r.threshold)],
                [`lane${i}`, r.lane],
              ]),
            ),
          }) as Row[]
      ).map((r) => [r.no as number, { bucketed: r.bucketed as number, admitted: (r.admitted ?? 0) as number }]),
    );
    return releases.map((r) => {
      const lane = lanes.get(r.lane) ?? { seen: 0, staff: 0 };
      const c = counted.get(r.no) ?? { bucketed: 0, admitted: 0 };
      const unbucketed =
        lane.seen - lane.staff === c.bucketed
          ? []
          : (
              this.db
                .query(`SELECT a.id, a.device_hash FROM activations a WHERE ${active} AND a.lane = $lane AND a.kind <> 'staff'
                AND NOT EXISTS (SELECT 1 FROM rollout_buckets b WHERE b.activation_id = a.id AND b.release_no = $no)`)
                .all({ ...params, lane: r.lane, no: r.no }) as Row[]
            ).map((x) => ({ activationId: x.id as string, deviceHash: x.device_hash as string }));
      return { seen: lane.seen, admitted: lane.staff + c.admitted, unbucketed };
    });
  }

  async storeRolloutBuckets(no: number, buckets: readonly { activationId: string; bucket: bigint }[]): Promise<void> {
    if (buckets.length === 0) return;
    await this.groupCommit.write(() => {
      const insert = this.db.query("INSERT INTO rollout_buckets (release_no, activation_id, bucket) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
      for (const b of buckets) insert.run(no, b.activationId, storedBucket(b.bucket));
    });
  }

  async listMeters(licenseId: string): Promise<MeterRecord[]> {
    return listMetersSqlite(this.writer, licenseId);
  }

  async useMeter(use: MeterUse): Promise<MeterUseResult> {
    return useMeterSqlite(this.writer, use);
  }

  async meterTotals(now: number): Promise<MeterTotal[]> {
    return meterTotalsSqlite(this.writer, now);
  }

  async startTrial(trial: TrialRecord, license: LicenseRecord, journal: TrialJournal): Promise<StartTrialResult> {
    return startTrialSqlite(this.writer, trial, license, journal);
  }

  async convertTrial(deviceHash: string, toLicenseId: string, now: number, journal: ConversionJournal): Promise<TrialRecord | null> {
    return convertTrialSqlite(this.writer, deviceHash, toLicenseId, now, journal);
  }

  async getTrialOfLicense(licenseId: string): Promise<TrialRecord | null> {
    return trialOfLicenseSqlite(this.writer, licenseId);
  }

  async findTrial(deviceHash: string): Promise<TrialRecord | null> {
    return findTrialSqlite(this.writer, deviceHash);
  }

  async listTrials(query: TrialQuery): Promise<TrialRecord[]> {
    return listTrialsSqlite(this.writer, query);
  }

  async trialCounts(): Promise<TrialCounts> {
    return trialCountsSqlite(this.writer);
  }

  async ping(): Promise<void> {
    this.q.ping.get();
  }

  async close(): Promise<void> {
    this.groupCommit.flush();
    this.checkpoints?.close();
    this.checkpoint.finalize();
    // Prepared statements keep the connection open after close() (SQLite's close_v2 "zombie"):
    // finalize them so the file is really closed and the WAL checkpointed.
    for (const statement of Object.values(this.q)) statement.finalize();
    this.groupCommit.finalize();
    this.writeStamp.close();
    this.controlsStamp.close();
    this.db.close();
  }
}

/** Active seats of licenses (not staff, not revoked): lapsed when their license's lease ran out since the last sighting. */
/** Every id: SQLite compares text bytewise, and ids are ASCII. */
const WHOLE: IdRange = { from: null, to: null };
const bounds = (range: IdRange) => ({ from: range.from ?? "", to: range.to ?? "\u{10FFFF}" });

function licenseParams(l: LicenseRecord) {
  return {
    ...l,
    channels: JSON.stringify(l.channels),
    email: l.email ?? null,
    metadata: JSON.stringify(l.metadata ?? {}),
    tokenTtl: l.tokenTtl ?? null,
    seatLease: l.seatLease ?? null,
    updatesUntil: l.updatesUntil ?? null,
    features: featuresColumn(l.features),
  };
}

function auditParams(a: AuditRecord) {
  return { ...a, actor: a.actor ?? null };
}

const idempotencyFromRow = (r: Row): IdempotencyRecord => ({
  scope: r.scope,
  key: r.key,
  requestHash: r.request_hash,
  answer: r.answer,
  created: Number(r.created),
});

/**
 * A licence's activations, held and ended, as a table to select from: one search of each index that
 * begins with the licence (the held seats' unique one, and the ended ones': migration 24). Neither
 * holds them all, so a plain `WHERE license_id = ?` would read every activation.
 */
export function licenseActivations(license: string): string {
  return `(SELECT * FROM activations WHERE license_id = ${license} AND deactivated IS NULL
    UNION ALL SELECT * FROM activations WHERE license_id = ${license} AND deactivated IS NOT NULL)`;
}

/** A feed snapshot's sections (FeedStateQuery), by id: what a mirror must still refuse at $now. */
const FEED_STATE_SQL = {
  // A deactivation whose licence is revoked is left out: the licence's own entry refuses its tokens
  // as long (its end is the latest of its activations'), so a mirror keeps one entry, not one per installation.
  activations: `SELECT a.id, coalesce(a.token_exp, a.deactivated + $ttl) AS until, a.license_id AS license FROM activations a
    WHERE a.deactivated IS NOT NULL AND a.id > $after AND coalesce(a.token_exp, a.deactivated + $ttl) > $now
      AND NOT EXISTS (SELECT 1 FROM licenses l WHERE l.id = a.license_id AND l.revoked IS NOT NULL AND (a.token_exp IS NOT NULL OR a.deactivated <= l.revoked))
    ORDER BY a.id LIMIT $limit`,
  licenses: `SELECT * FROM (SELECT l.id, (SELECT max(coalesce(a.token_exp, l.revoked + $ttl)) FROM ${licenseActivations("l.id")} a) AS until
    FROM licenses l WHERE l.revoked IS NOT NULL AND l.id > $after) WHERE until > $now ORDER BY id LIMIT $limit`,
  expiries: `SELECT id, until FROM (SELECT l.id, l.expires AS until,
      (SELECT max(coalesce(a.token_exp, a.last_seen + $ttl)) FROM ${licenseActivations("l.id")} a) AS tokens
    FROM licenses l WHERE l.expires IS NOT NULL AND l.revoked IS NULL AND l.id > $after) WHERE tokens > until AND tokens > $now ORDER BY id LIMIT $limit`,
} as const;

function deviceFields(d: DeviceFields): DeviceFields {
  return { deviceHash: d.deviceHash, product: d.product, name: d.name, platform: d.platform, version: d.version };
}

/** The audit search's statement (exported so a test can read its query plan: each filter has an index). */
export function auditSearch(f: AuditFilter): { sql: string; params: Record<string, string | number> } {
  const where: string[] = [];
  const params: Record<string, string | number> = {};
  if (f.ref !== undefined) where.push("ref = $ref"), (params.ref = f.ref);
  if (f.licenseId !== undefined) {
    // Granted seats' lines through the licence's activations, every other line by the licence
    // (migration 25): the two parts of an OR that SQLite searches, each with its own index.
    where.push(`((license_id = $licenseId AND (activation_id IS NULL OR action <> 'activate' OR outcome <> 'ok'))
      OR (license_id = $licenseId AND action = 'activate' AND outcome = 'ok'
        AND activation_id IN (SELECT id FROM ${licenseActivations("$licenseId")})))`);
    params.licenseId = f.licenseId;
  }
  if (f.activationId !== undefined) where.push("activation_id = $activationId"), (params.activationId = f.activationId);
  if (f.error !== undefined) where.push("error = $error"), (params.error = f.error);
  if (f.since !== undefined) where.push("time >= $since"), (params.since = f.since);
  if (f.until !== undefined) where.push("time < $until"), (params.until = f.until);
  if (f.after !== undefined) {
    where.push("(time < $afterTime OR (time = $afterTime AND ref > $afterRef))");
    params.afterTime = f.after.time;
    params.afterRef = f.after.ref;
  }
  params.limit = f.limit ?? 1000;
  const sql = `SELECT * FROM audit ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY time DESC, ref LIMIT $limit`;
  return { sql, params };
}

/**
 * Applies every migration the file has not seen, all in one `BEGIN IMMEDIATE` transaction: a failing
 * migration leaves the file as it was, and of two processes starting together on one file the
 * second waits for the write lock and then finds nothing left to apply. Answers the versions applied.
 */
export function migrateSqlite(db: Database): number[] {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)");
  return db
    .transaction(() => {
      const done = new Set((db.query("SELECT version FROM schema_migrations").all() as Row[]).map((r) => r.version));
      const applied: number[] = [];
      for (const m of MIGRATIONS) {
        if (done.has(m.version)) continue;
        db.exec(m.sqlite);
        db.query("INSERT INTO schema_migrations (version, applied) VALUES (?, ?)").run(m.version, Date.now());
        applied.push(m.version);
      }
      return applied;
    })
    .immediate();
}
