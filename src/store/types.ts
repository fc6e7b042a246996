import type { NewMail } from "./mail-types";

/**
 * The records behind one interface. Every method is async so the SQLite store (default) and the
 * PostgreSQL store are interchangeable; callers never see SQL. Times are milliseconds since the epoch.
 */
import type { MeterSet, MeterStore } from "./meter-types";
import type { TrialStore } from "./trial-types";

export type EntitlementKind = "license" | "staff";

export interface LicenseRecord {
  /** `lic_…` for licenses, `staff:<sub>` for a staff member's seats. */
  readonly id: string;
  readonly kind: EntitlementKind;
  /** Hex SHA-256 of the normalised key; null for staff. The key itself is never stored. */
  readonly keyHash: string | null;
  readonly licensee: string;
  readonly organization: string;
  readonly plan: string;
  readonly planTitle: string;
  readonly channels: readonly string[];
  readonly seats: number;
  readonly issued: number;
  readonly expires: number | null;
  readonly revoked: number | null;
  /** Absent on records made before migration 3 (read back as null and {}). */
  readonly email?: string | null;
  readonly metadata?: Readonly<Record<string, string>>;
  /** The lifetime of this license's tokens in seconds; null or absent: the site's --token-ttl. */
  readonly tokenTtl?: number | null;
  /**
   * How long (ms) an installation keeps its seat without being seen; null or absent: seats never
   * lapse. A full license's activation reclaims the seat seen longest ago whose lease ran out.
   */
  readonly seatLease?: number | null;
  /** The end of the maintenance window (ms): releases released after it are not offered. Absent or null: none. */
  readonly updatesUntil?: number | null;
  /** `name` or `name=value` (src/domain/features.ts). Absent: none. */
  readonly features?: readonly string[];
}

export interface ActivationRecord {
  /** `act_…` */
  readonly id: string;
  readonly licenseId: string;
  readonly kind: EntitlementKind;
  /** What identifies the installation in this variant (device hash, or hash and product). */
  readonly installation: string;
  readonly deviceHash: string;
  readonly product: string | null;
  readonly name: string;
  readonly platform: string;
  readonly version: string;
  readonly created: number;
  readonly lastSeen: number;
  readonly deactivated: number | null;
  /** The latest `exp` (milliseconds) of a token issued to it; null for activations older than migration 6. */
  readonly tokenExp?: number | null;
}

export interface DeviceFields {
  readonly deviceHash: string;
  readonly product: string | null;
  readonly name: string;
  readonly platform: string;
  readonly version: string;
}

export interface ActivateInput extends DeviceFields {
  readonly licenseId: string;
  readonly kind: EntitlementKind;
  readonly installation: string;
  /** The id to use if a new activation is created. */
  readonly newId: string;
  readonly now: number;
  /** The `exp` of the token about to be issued: kept as the activation's latest (ActivationRecord.tokenExp). */
  readonly tokenExp?: number;
  /** The audit line of a granted seat, written in the same transaction with the seat's activation id. */
  readonly audit?: Omit<AuditRecord, "activationId">;
  /** The outbox event of the outcome, if any, written in the same transaction. */
  readonly event?: (result: ActivateResult) => NewEvent | null;
  /** What a reclaim writes besides the new seat, in the same transaction (the lapsed seat's audit line and events). */
  readonly reclaim?: (reclaimed: ActivationRecord, by: ActivationRecord) => { readonly audit: AuditRecord; readonly events: readonly NewEvent[] };
}

export type ActivateResult =
  | {
      readonly outcome: "created" | "reused";
      readonly activation: ActivationRecord;
      readonly seatsUsed: number;
      /** The activation whose lapsed seat this one took (deactivated in the same transaction). */
      readonly reclaimed?: ActivationRecord;
    }
  | { readonly outcome: "seat_limit"; readonly holders: readonly ActivationRecord[] };

/** An activation with its license and the license's active seats, read together. */
export interface ActivationWithLicense {
  readonly activation: ActivationRecord;
  readonly license: LicenseRecord;
  readonly seatsUsed: number;
}

/** What a bearer request needs to know about its token's activation, read in one query. */
export interface ActivationStatus {
  readonly deactivated: number | null;
  readonly licenseRevoked: number | null;
  readonly licenseExpires: number | null;
}

export interface ChallengeRecord {
  /** Hex SHA-256 of the nonce; the nonce itself is not stored. */
  readonly nonceHash: string;
  readonly installation: string;
  readonly created: number;
  readonly expires: number;
  readonly used: number | null;
}

export type ConsumeResult =
  | { readonly outcome: "consumed"; readonly challenge: ChallengeRecord }
  | { readonly outcome: "used" }
  | { readonly outcome: "unknown" };

export interface AuditRecord {
  readonly ref: string;
  readonly time: number;
  readonly address: string | null;
  readonly action: string;
  readonly activationId: string | null;
  readonly licenseId: string | null;
  readonly outcome: "ok" | "refused";
  readonly error: string | null;
  /** Who made an admin change: "tok_… (name)" or "cli"; null for a program's own requests. */
  readonly actor?: string | null;
}

export interface AuditFilter {
  /** The one line a refusal's `ref` names. */
  readonly ref?: string;
  /**
   * The licence's lines. A granted seat's line (activate, ok) is found through the activation it
   * names, which the store holds from the same transaction (SQLite: migration 25).
   */
  readonly licenseId?: string;
  readonly activationId?: string;
  readonly error?: string;
  readonly since?: number;
  readonly until?: number;
  readonly limit?: number;
  /** Keyset pagination: only lines after this one in the order (time descending, ref). */
  readonly after?: { readonly time: number; readonly ref: string };
}

/** An outbox event as a change writes it (the store gives it its seq). */
export interface NewEvent {
  readonly id: string;
  readonly type: string;
  readonly time: number;
  /** The event's data, already as JSON text. */
  readonly data: string;
  /**
   * Whether the vendor feed carries it (mirrors read every such event). Another event is written
   * only while an enabled webhook endpoint subscribes to its type: no one else would ever read it
   * (an endpoint added later starts after the newest event).
   */
  readonly feed?: boolean;
}

export interface EventRecord extends Omit<NewEvent, "feed"> {
  readonly seq: number;
}

/** A license as its revocation leaves it, with the latest `exp` of any token issued to its activations. */
export interface RevokedLicenseRecord extends LicenseRecord {
  /** Null when none of its activations recorded one (all older than migration 6). */
  readonly tokensExpire: number | null;
}

/** Where the feed stands: its records' identity and what retention removed. */
export interface FeedPosition {
  /** Random, made with the records; another one in a copy (keyturn copy) and in a backup. */
  readonly epoch: string;
  /** The newest seq in the records (0 when none): a cursor beyond it is from records since replaced. */
  readonly newest: bigint;
  /** The newest seq deleted by retention (0 when none): a cursor before it misses events. */
  readonly prunedThrough: bigint;
}

/** What a mirror must refuse, as a snapshot's rows: one section at a time, by id after `after`. */
export interface FeedStateQuery {
  readonly section: "activations" | "licenses" | "expiries";
  readonly now: number;
  readonly after: string | null;
  readonly limit: number;
  /** For activations older than migration 6 (no token_exp): the token lifetime to assume from their revocation. */
  readonly fallbackTtlMs: number;
}

/** A snapshot row: activations and licenses refused until `until`; expiries: the license's `expires` in `until`. */
export interface FeedStateRow {
  readonly id: string;
  readonly until: number;
  /** Deactivations: the activation's licence. */
  readonly license?: string;
}

export interface EventFilter {
  readonly after: bigint | number;
  readonly limit: number;
  readonly types?: readonly string[];
}

/** What an admin change writes with it, in its own transaction. */
export interface Journal<T> {
  readonly audit?: AuditRecord;
  readonly event?: (after: T) => NewEvent | null;
  /**
   * When set (a time), the license's portal sessions are revoked at that time in the same
   * transaction (revokeLicense, updateLicense): a rekey or a revocation ends what the old key opened.
   */
  readonly endsPortalSessions?: number;
  /** The licence's meters, replaced whole in the same transaction (MeterSet). */
  readonly meters?: MeterSet;
  /**
   * A commerce bridge's event and the provider ids that lead to the licence, written in the same
   * transaction: an event already recorded fails the write (nothing of it is applied twice).
   */
  readonly bridge?: (after: T) => BridgeWrite;
  /** Mails the change sends (a licence's key to its holder), written to the outbox in its transaction. */
  readonly mail?: readonly NewMail[];
}

/** One provider event a commerce bridge received (src/domain/commerce/), and what came of it. */
export interface BridgeEventRecord {
  readonly provider: string;
  readonly eventId: string;
  readonly type: string;
  readonly received: number;
  /** "applied" (a licence changed), "ignored" (nothing to do: unknown product, a state already reached). */
  readonly outcome: "applied" | "ignored";
  readonly detail: string;
  readonly licenseId: string | null;
  /** How many times the same event came again after it was recorded. */
  readonly replays?: number;
}

/**
 * A provider id (subscription, order, payment) that leads to the licence it bought, or, when the
 * licence is not known yet, to another id of the provider's that will (`alias`: a payment to its invoice).
 */
export interface BridgeLink {
  readonly provider: string;
  readonly reference: string;
  readonly licenseId: string | null;
  readonly alias?: string;
}

export interface BridgeWrite {
  readonly event: BridgeEventRecord;
  readonly links: readonly BridgeLink[];
}

export interface IdempotencyRecord {
  readonly scope: string;
  readonly key: string;
  readonly requestHash: string;
  /** The first answer, as JSON text. */
  readonly answer: string;
  readonly created: number;
}

export type IdempotentCreate = { readonly outcome: "created" } | { readonly outcome: "replayed"; readonly record: IdempotencyRecord };

export interface LicensePatch {
  /** A new key's hash (rekey): the old key stops matching in the same write. */
  readonly keyHash?: string;
  readonly licensee?: string;
  readonly organization?: string;
  readonly plan?: string;
  readonly planTitle?: string;
  readonly channels?: readonly string[];
  readonly seats?: number;
  readonly expires?: number | null;
  readonly email?: string | null;
  readonly metadata?: Readonly<Record<string, string>>;
  /** null: back to the site's token lifetime. */
  readonly tokenTtl?: number | null;
  readonly seatLease?: number | null;
  /** null: no maintenance window. */
  readonly updatesUntil?: number | null;
  /** [] : none. */
  readonly features?: readonly string[];
}

export type UpdateLicenseResult =
  | { readonly outcome: "updated"; readonly license: LicenseRecord; readonly seatsUsed: number }
  | { readonly outcome: "seats_in_use"; readonly seatsUsed: number }
  | { readonly outcome: "unknown" };

export type LicenseStatus = "active" | "revoked" | "expired";

export interface LicenseQuery {
  /** Case-insensitive substring of licensee, organization, email or id. */
  readonly text?: string;
  readonly status?: LicenseStatus;
  /** The time against which "expired" is decided. */
  readonly now: number;
  /** Keyset pagination: only licenses after this one in the order (issued, id). */
  readonly after?: { readonly issued: number; readonly id: string };
  readonly limit: number;
}

export interface AdminTokenRecord {
  /** `tok_…` */
  readonly id: string;
  readonly name: string;
  /** Hex SHA-256 of the secret; the secret itself is never stored. */
  readonly secretHash: string;
  readonly scopes: readonly string[];
  readonly created: number;
  readonly expires: number | null;
  readonly revoked: number | null;
  readonly lastUsed: number | null;
}

/**
 * A console or portal session, or an OpenID sign-in under way ("pending"). Only the hash of the
 * cookie's secret (or of the sign-in's state) is stored.
 */
export interface ConsoleSessionRecord {
  readonly idHash: string;
  readonly kind: "console" | "portal" | "pending";
  /** The admin token a console session was opened with (revoking it ends the session). */
  readonly tokenId: string | null;
  /** The OpenID subject of a staff session. */
  readonly subject: string | null;
  /** The license of a portal session. */
  readonly licenseId: string | null;
  readonly name: string;
  /** An admin token session's scopes (a staff session's are derived from its groups at each use). */
  readonly scopes: readonly string[];
  /** A staff session's groups as the issuer asserted them at sign-in; null for other kinds. */
  readonly staffGroups?: readonly string[] | null;
  /** A pending sign-in's PKCE verifier, nonce and return state (JSON). */
  readonly detail: string | null;
  readonly created: number;
  readonly expires: number;
  readonly revoked: number | null;
}

export interface WebhookEndpointRecord {
  /** `whe_…` */
  readonly id: string;
  readonly url: string;
  readonly types: readonly string[];
  /** `whsec_…`: kept as is, since signing needs it (HMAC), and never shown after creation. */
  readonly secret: string;
  readonly enabled: boolean;
  readonly disabledReason: string | null;
  readonly created: number;
  /** The last event seq when the endpoint was added: it receives only later events. */
  readonly afterSeq: number;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface DeliveryRecord {
  /** `dlv_…` */
  readonly id: string;
  readonly endpointId: string;
  readonly eventSeq: number;
  readonly eventId: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly nextAttempt: number;
  readonly created: number;
  readonly lastAttempt: number | null;
}

/** A delivery claimed by one worker, with what it needs to send it. */
export interface ClaimedDelivery {
  readonly delivery: DeliveryRecord;
  readonly endpoint: WebhookEndpointRecord;
  readonly event: EventRecord;
  /** Proves the lease when the attempt is recorded. */
  readonly leaseOwner: string;
}

export interface AttemptRecord {
  readonly deliveryId: string;
  readonly attempt: number;
  readonly time: number;
  readonly durationMs: number;
  readonly statusCode: number | null;
  readonly error: string | null;
}

/** What became of a delivery after an attempt. */
export type AttemptOutcome =
  | { readonly status: "delivered" }
  | { readonly status: "pending"; readonly nextAttempt: number }
  | { readonly status: "failed"; readonly disableEndpoint?: string };

export interface DeliveryFilter {
  readonly endpointId?: string;
  readonly status?: DeliveryStatus;
  readonly after?: string;
  readonly limit: number;
}

/**
 * A release's controls, kept in the records (not in the tree), keyed by lane
 * (`product/channel/platform`, gamma `channel/platform`) and version.
 */
export interface ReleaseControlRecord {
  readonly lane: string;
  readonly version: string;
  /** When it was halted (the ramp stands still from then), null when running. */
  readonly halted: number | null;
  /** Time spent halted in halts since resumed: a resumed ramp goes on from where it stood. */
  readonly haltedMs: number;
  /** When it was withdrawn (never served), null when not. */
  readonly withdrawn: number | null;
  readonly updated: number;
  /** The rule that halted it by itself (rollout autoHalt), while halted so; null or absent: a person halted it, or it runs. */
  readonly haltRule?: string | null;
}

export type ReleaseControlOp = "halt" | "resume" | "withdraw" | "restore";

export interface ReleaseKey {
  readonly lane: string;
  readonly version: string;
}

/** What an installation reported of installing a release (POST /updates/report). */
export type InstallOutcome = "installed" | "failed" | "rolled-back";

/** An installation's latest install report for one release (coalesced in memory, written in batches). */
export interface InstallReport {
  readonly activationId: string;
  readonly deviceHash: string;
  /** The release reported on: its lane and version (`to`). */
  readonly lane: string;
  readonly version: string;
  readonly from: string;
  readonly outcome: InstallOutcome;
  readonly code: string | null;
  readonly reported: number;
}

/** Installations whose latest report on a release gave `outcome`, by the UTC day of that report. */
export interface InstallReportCount {
  readonly lane: string;
  readonly version: string;
  /** Start of the UTC day, ms. */
  readonly day: number;
  readonly outcome: InstallOutcome;
  readonly installations: number;
}

/** An installation seen (manifest request, current): coalesced in memory, written in batches. */
export interface Sighting {
  readonly activationId: string;
  readonly lastSeen: number;
  /** The lane whose manifest it read; null when the sighting does not say (current). */
  readonly lane: string | null;
}

export interface InstallationCount {
  readonly product: string | null;
  /** null for installations that have not read an update manifest since lanes were recorded. */
  readonly lane: string | null;
  readonly version: string;
  readonly installations: number;
}

export interface DayCount {
  /** Start of the UTC day, ms. */
  readonly day: number;
  readonly activations: number;
  readonly seatLimitRefusals: number;
}

/** A value sealed with the records key (src/domain/record-seal.ts), by the row that holds it. */
export type SealedValue =
  | { readonly kind: "webhook-secret"; readonly endpointId: string; readonly value: string }
  | { readonly kind: "idempotency-answer"; readonly scope: string; readonly key: string; readonly value: string }
  | { readonly kind: "mail-body"; readonly mailId: string; readonly value: string };

export type SealedChange = SealedValue & { readonly after: string };

/** Ids from `from` (inclusive) to `to` (exclusive), in the store's id order; null: unbounded. */
export interface IdRange {
  readonly from: string | null;
  readonly to: string | null;
}

export interface RolloutReach {
  readonly seen: number;
  readonly admitted: number;
  readonly unbucketed: readonly { readonly activationId: string; readonly deviceHash: string }[];
}

/** A release whose rollout is counted from stored buckets (`no` from Store.rolloutReleaseNumbers). */
export interface RolloutCountQuery {
  readonly no: number;
  readonly lane: string;
  /** Buckets below it are admitted (0 < threshold < 2^64). */
  readonly threshold: bigint;
}

/** Licences a reminder may go to: with an address, and without the metadata key `without` unless they also have `unless` (marks of the domain's). */
export interface MailableLicences {
  readonly without: string;
  readonly unless: string;
}

export interface Store extends MeterStore, TrialStore {
  readonly kind: "sqlite" | "postgres";
  /** The migrations (versions) this process applied when it opened the records; none when they were up to date. */
  readonly migrationsApplied: readonly number[];

  createLicense(license: LicenseRecord, journal?: Journal<LicenseRecord>): Promise<void>;
  /**
   * Creates the license unless `idempotency` names a (scope, key) already used within its window:
   * then nothing is written and the stored record is answered. Racing callers with one key: one
   * creates, the others are answered its record (a primary key decides, not a read first).
   */
  createLicenseIdempotent(
    license: LicenseRecord,
    idempotency: IdempotencyRecord,
    journal: Journal<LicenseRecord>,
    /** Records older than this are deleted first and do not count. */
    expiredBefore: number,
  ): Promise<IdempotentCreate>;
  pruneIdempotency(before: number): Promise<number>;
  /** Applies the patch; a seats below the active seats is refused in the same transaction. */
  updateLicense(id: string, patch: LicensePatch, journal: Journal<LicenseRecord>): Promise<UpdateLicenseResult>;
  reinstateLicense(id: string, journal: Journal<LicenseRecord>): Promise<LicenseRecord | null>;
  searchLicenses(query: LicenseQuery): Promise<Array<{ license: LicenseRecord; seatsUsed: number }>>;
  /** Creates the staff member's license row or updates its names; returns it as stored. */
  upsertStaffLicense(license: LicenseRecord): Promise<LicenseRecord>;
  getLicense(id: string): Promise<LicenseRecord | null>;
  findLicenseByKeyHash(keyHash: string): Promise<LicenseRecord | null>;
  listLicenses(): Promise<LicenseRecord[]>;
  /** Marks the license revoked; false when there is no such license. */
  revokeLicense(id: string, now: number, journal?: Journal<RevokedLicenseRecord>): Promise<boolean>;

  /**
   * Takes a seat atomically: reuses the installation's active activation (updating its device
   * fields), or creates one when a seat is free, or (license with a seat lease, every seat taken)
   * deactivates the active installation seen longest ago whose last sighting is older than
   * `now - seatLease` and creates one in its seat, or reports seat_limit with the current holders.
   */
  activate(input: ActivateInput): Promise<ActivateResult>;
  getActivation(id: string): Promise<ActivationRecord | null>;
  /** The activation, its license and that license's active seat count, in one read. */
  getActivationWithLicense(id: string): Promise<ActivationWithLicense | null>;
  activationStatus(id: string): Promise<ActivationStatus | null>;
  /** Records the device fields and last-seen time of a refresh. */
  touchActivation(id: string, device: DeviceFields, now: number, tokenExp?: number): Promise<void>;
  listActivations(licenseId: string): Promise<ActivationRecord[]>;
  countActiveSeats(licenseId: string): Promise<number>;
  /** Gives the seat back; false when the activation is unknown or already deactivated. */
  deactivate(id: string, now: number, journal?: Journal<ActivationRecord>): Promise<boolean>;

  createChallenge(challenge: ChallengeRecord): Promise<void>;
  /** The challenge as it stands, read without using it; null when unknown. */
  findChallenge(nonceHash: string): Promise<ChallengeRecord | null>;
  /** Marks the challenge used, atomically: of several racing callers exactly one gets "consumed". */
  consumeChallenge(nonceHash: string, now: number): Promise<ConsumeResult>;
  /** Deletes challenges that expired before `before`; returns how many. */
  pruneChallenges(before: number): Promise<number>;

  writeAudit(line: AuditRecord): Promise<void>;
  listAudit(filter: AuditFilter): Promise<AuditRecord[]>;
  pruneAudit(before: number): Promise<number>;

  /** Writes a change's event alone (a change with no row of its own, e.g. a release halted). */
  appendEvent(event: NewEvent, audit?: AuditRecord): Promise<void>;
  /**
   * Deletes events older than `before` that were fanned out and have no deliveries left (the newest
   * event always stays, so seqs never restart), and finished deliveries older than `before`.
   */
  pruneEvents(before: number): Promise<{ events: number; deliveries: number }>;
  /** Events after the seq `after`, in seq order (commit order: a reader never misses one). */
  listEvents(filter: EventFilter): Promise<EventRecord[]>;
  /** The feed's epoch, newest seq and retention's watermark, read together. */
  feedPosition(): Promise<FeedPosition>;
  /** One page of a feed snapshot's section, by id (FeedStateQuery). */
  listFeedState(q: FeedStateQuery): Promise<FeedStateRow[]>;

  createAdminToken(token: AdminTokenRecord, audit?: AuditRecord): Promise<void>;
  findAdminTokenBySecretHash(secretHash: string): Promise<AdminTokenRecord | null>;
  listAdminTokens(): Promise<AdminTokenRecord[]>;
  revokeAdminToken(id: string, now: number, audit?: AuditRecord): Promise<boolean>;
  /** Records a use, writing only when the last recorded one is older than `staleBefore`. */
  touchAdminToken(id: string, now: number, staleBefore: number): Promise<void>;

  createConsoleSession(session: ConsoleSessionRecord, audit?: AuditRecord): Promise<void>;
  findConsoleSession(idHash: string): Promise<ConsoleSessionRecord | null>;
  /** Revokes an unrevoked session; false when there was none (so of racing callers one wins). */
  revokeConsoleSession(idHash: string, now: number, audit?: AuditRecord): Promise<boolean>;
  /** Console sessions neither revoked nor expired at `now`, newest first, at most `limit`. */
  listConsoleSessions(now: number, limit: number): Promise<ConsoleSessionRecord[]>;
  /** Deletes sessions and pending sign-ins that expired before `before`; returns how many. */
  pruneConsoleSessions(before: number): Promise<number>;

  createWebhookEndpoint(endpoint: Omit<WebhookEndpointRecord, "afterSeq">, audit?: AuditRecord): Promise<WebhookEndpointRecord>;
  listWebhookEndpoints(): Promise<WebhookEndpointRecord[]>;
  getWebhookEndpoint(id: string): Promise<WebhookEndpointRecord | null>;
  setWebhookEndpointEnabled(id: string, enabled: boolean, reason: string | null, audit?: AuditRecord): Promise<boolean>;
  /** Replaces the endpoint's signing secret (as given: sealed or not); false when there is no such endpoint. */
  setWebhookEndpointSecret(id: string, secret: string, audit?: AuditRecord): Promise<boolean>;
  /** Removes the endpoint and its deliveries. */
  removeWebhookEndpoint(id: string, audit?: AuditRecord): Promise<boolean>;
  /**
   * Turns up to `limit` events past the fan-out cursor into one pending delivery per enabled
   * endpoint subscribed to each, and moves the cursor, in one transaction; returns the events read.
   */
  fanOutEvents(now: number, limit: number, newDeliveryId: () => string): Promise<number>;
  /**
   * Leases up to `limit` due deliveries of enabled endpoints to `owner` until `leaseUntil`: the
   * oldest due one of each endpoint that has none leased, so one endpoint's slow receiver holds one
   * lease, never the others' turn. With several processes a delivery is leased by one at a time
   * (a row leased meanwhile by another is passed over when its lease is checked again under lock).
   */
  claimDeliveries(now: number, leaseUntil: number, owner: string, limit: number): Promise<ClaimedDelivery[]>;
  /** Records an attempt and its outcome, if `owner` still holds the lease; false otherwise. */
  recordAttempt(attempt: AttemptRecord, owner: string, outcome: AttemptOutcome): Promise<boolean>;
  listDeliveries(filter: DeliveryFilter): Promise<DeliveryRecord[]>;
  getDelivery(id: string): Promise<DeliveryRecord | null>;
  listAttempts(deliveryId: string): Promise<AttemptRecord[]>;
  /** Makes a failed (or pending) delivery due now; false when unknown or already delivered. */
  retryDelivery(id: string, now: number, audit?: AuditRecord): Promise<boolean>;
  /** Applies one control atomically (and moves the generation when it changed anything). */
  applyReleaseControl(
    key: ReleaseKey,
    op: ReleaseControlOp,
    now: number,
    journal?: Journal<ReleaseControlRecord>,
    /** A halt's rule when no person halts it (rollout autoHalt); kept until resumed. */
    haltRule?: string,
  ): Promise<{ changed: boolean; control: ReleaseControlRecord }>;
  listReleaseControls(): Promise<ReleaseControlRecord[]>;
  /**
   * A number that moves whenever any process changes a control. Cheap enough for every update
   * request: SQLite reads the row only after its WAL index shows a commit (looked at once a
   * millisecond at most: another process's change is seen within a millisecond); PostgreSQL reads
   * it at most once every `controlsPollMs` (openPostgresStore), the bound on how late a process learns.
   */
  releaseControlsGeneration(): Promise<number>;
  /**
   * The check value of the key that seals secrets in the records (src/domain/record-seal.ts): the
   * first caller's `candidate` is kept; every call answers the value kept.
   */
  recordKeyCheck(candidate: string): Promise<string>;
  /** The check value recordKeyCheck kept; null while nothing was ever sealed. */
  readRecordKeyCheck(): Promise<string | null>;
  /** The values starting with `prefix` (sealed ones) in the columns that hold sealed secrets, at most `limit` of each column. */
  listSealed(prefix: string, limit?: number): Promise<SealedValue[]>;
  /**
   * In one transaction: each value replaced where it still holds its `value`, and the check value
   * replaced where it still holds `check.before` (null: none kept). False, with nothing written,
   * when any of them changed meanwhile, or when `values` are not every value starting with
   * `prefix` (one sealed meanwhile).
   */
  replaceSealed(prefix: string, values: readonly SealedChange[], check: { readonly before: string | null; readonly after: string }): Promise<boolean>;
  /**
   * The variant these records serve: the first caller's `variant` is noted, at `now`; every call
   * answers the note.
   */
  noteVariant(variant: string, now: number): Promise<{ readonly variant: string; readonly noted: number }>;
  /**
   * Records the releases as known; returns those no process had recorded before (newly published).
   * The first call that records anything on these records takes the baseline: it records and
   * returns none (what a first scan finds was published before: at a first start, or the first
   * start after the upgrade that brought release events).
   */
  recordKnownReleases(releases: readonly ReleaseKey[], now: number, eventOf?: (release: ReleaseKey) => NewEvent): Promise<ReleaseKey[]>;
  /** Every release ever recorded as known (live at some scan), by lane and version. */
  listKnownReleases(): Promise<ReleaseKey[]>;
  /**
   * Writes install reports in one transaction: each replaces the installation's report on that
   * release; an installed (rolled-back) one also sets the activation's version to `to` (`from`).
   */
  recordInstallReports(reports: readonly InstallReport[]): Promise<void>;
  /** Install reports made at or after `since`, by release, UTC day and outcome. */
  installReportsPerDay(since: number): Promise<InstallReportCount[]>;
  /**
   * Of the installations whose latest report on `release` was made at or after `since`: how many,
   * and how many failed or rolled back. An installation is its device, counted once however often it
   * was deactivated and activated again, and only while an activation that reported is still active
   * (a seat freed and taken again does not vote twice). With `without`, none of a licence whose
   * metadata has that key set to "true" (a mark of the domain's).
   */
  releaseHealth(release: ReleaseKey, since: number, without?: string): Promise<{ readonly reports: number; readonly failed: number }>;
  /**
   * Device hashes of the active installations running `release` (at most `limit`): their latest
   * report on it says installed, or their activation (activate, refresh, sightings) is at that
   * version on its lane (or on none read yet).
   */
  releaseRunners(release: ReleaseKey, limit: number): Promise<string[]>;
  /** Writes sightings in one transaction: last_seen moves forward only; lane set when given. */
  recordSightings(sightings: readonly Sighting[]): Promise<void>;
  /** Active installations seen at or after `since`, by product, lane and version. */
  installationsSeen(since: number): Promise<InstallationCount[]>;
  /** Device hashes and kinds of active installations on `lane` seen at or after `since` (at most `limit`). */
  devicesOnLane(lane: string, since: number, limit: number): Promise<{ deviceHash: string; kind: EntitlementKind }[]>;
  /** Granted activations (activate, sign-in) and seat_limit refusals per UTC day, from the audit trail. */
  activationsPerDay(since: number): Promise<DayCount[]>;
  /** Seats held on licenses (not staff, not revoked): in use, and lapsed at `now` (a leased seat not seen within its lease: the next activation may reclaim it). */
  seatCounts(now: number): Promise<{ inUse: number; lapsed: number }>;
  /**
   * Licenses (not staff, not revoked) whose expiry falls in [from, to), soonest first; for reminders
   * (`mailable`), only those with an address and without the metadata key `without`.
   */
  licensesExpiring(from: number, to: number, limit: number, mailable?: MailableLicences): Promise<LicenseRecord[]>;
  /**
   * Stats counted a slice at a time, so that no statement holds the thread (SQLite) for long: the
   * end of the slice of `table` that starts after `after` and holds about `step` rows (its first id
   * not included), or null when the rest fits in it. PostgreSQL counts in its own process and
   * answers null: one slice.
   */
  sliceEnd(table: "activations" | "licenses", after: string | null, step: number): Promise<string | null>;
  /** installationsSeen over activations whose id is in `range`. */
  installationsSeenIn(range: IdRange, since: number): Promise<InstallationCount[]>;
  /** seatCounts over licenses whose id is in `range`. */
  seatCountsIn(range: IdRange, now: number): Promise<{ inUse: number; lapsed: number }>;
  /** activationsPerDay over one UTC day only (`day` its start), for the day counts read one day at a time. */
  activationsOnDay(day: number): Promise<DayCount | null>;
  /**
   * Numbers releases for stored rollout buckets (the same number for the same lane and version in
   * every call) and drops, at most `dropLimit` at a time, the stored buckets of releases not given;
   * `dropped` says how many went (call again while it is `dropLimit`).
   */
  rolloutReleaseNumbers(releases: readonly ReleaseKey[], dropLimit: number): Promise<{ numbers: number[]; dropped: number }>;
  /**
   * Rollouts' reach over active installations seen at or after `since`, ids in `range`, for each
   * release given (answers in the same order): seen on its lane, admitted (staff, or a stored
   * bucket below its threshold), and the installations (not staff) with no stored bucket for it yet,
   * not counted as admitted.
   */
  rolloutReachIn(range: IdRange, releases: readonly RolloutCountQuery[], since: number): Promise<RolloutReach[]>;
  /** Stores installations' buckets for release `no` (kept as they are when already there). */
  storeRolloutBuckets(no: number, buckets: readonly { activationId: string; bucket: bigint }[]): Promise<void>;

  /** Throws when the records cannot be reached. */
  /** A bridge event as recorded, or null. */
  getBridgeEvent(provider: string, eventId: string): Promise<BridgeEventRecord | null>;
  /** Records an event that changed no licence, with its links; false (and a replay counted) when it was recorded already. */
  recordBridgeEvent(write: BridgeWrite): Promise<boolean>;
  /** Counts one more replay of a recorded event. */
  countBridgeReplay(provider: string, eventId: string): Promise<void>;
  /** The licence the first of `references` that has one leads to (directly, or through its alias). */
  findBridgeLink(provider: string, references: readonly string[]): Promise<string | null>;
  /** Keeps a provider customer's e-mail (the newest `updated` wins), for purchases that name the customer only. */
  rememberBridgeCustomer(provider: string, customer: string, email: string, updated: number): Promise<void>;
  bridgeCustomerEmail(provider: string, customer: string): Promise<string | null>;
  /** Bridge events, newest first; `before` is the position of the last one of the previous page. */
  listBridgeEvents(q: {
    readonly before?: { readonly received: number; readonly provider: string; readonly eventId: string };
    readonly limit: number;
  }): Promise<BridgeEventRecord[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}
