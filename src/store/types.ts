/**
 * The records behind one interface. Every method is async so the SQLite store (default) and the
 * PostgreSQL store are interchangeable; callers never see SQL. Times are milliseconds since the epoch.
 */
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
  /** The audit line of a granted seat, written in the same transaction with the seat's activation id. */
  readonly audit?: Omit<AuditRecord, "activationId">;
}

export type ActivateResult =
  | { readonly outcome: "created" | "reused"; readonly activation: ActivationRecord; readonly seatsUsed: number }
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
}

export interface AuditFilter {
  readonly licenseId?: string;
  readonly activationId?: string;
  readonly error?: string;
  readonly since?: number;
  readonly until?: number;
  readonly limit?: number;
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
}

export type ReleaseControlOp = "halt" | "resume" | "withdraw" | "restore";

export interface ReleaseKey {
  readonly lane: string;
  readonly version: string;
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

export interface Store {
  readonly kind: "sqlite" | "postgres";

  createLicense(license: LicenseRecord): Promise<void>;
  /** Creates the staff member's license row or updates its names; returns it as stored. */
  upsertStaffLicense(license: LicenseRecord): Promise<LicenseRecord>;
  getLicense(id: string): Promise<LicenseRecord | null>;
  findLicenseByKeyHash(keyHash: string): Promise<LicenseRecord | null>;
  listLicenses(): Promise<LicenseRecord[]>;
  /** Marks the license revoked; false when there is no such license. */
  revokeLicense(id: string, now: number): Promise<boolean>;

  /**
   * Takes a seat atomically: reuses the installation's active activation (updating its device
   * fields), or creates one when a seat is free, or reports seat_limit with the current holders.
   */
  activate(input: ActivateInput): Promise<ActivateResult>;
  getActivation(id: string): Promise<ActivationRecord | null>;
  /** The activation, its license and that license's active seat count, in one read. */
  getActivationWithLicense(id: string): Promise<ActivationWithLicense | null>;
  activationStatus(id: string): Promise<ActivationStatus | null>;
  /** Records the device fields and last-seen time of a refresh. */
  touchActivation(id: string, device: DeviceFields, now: number): Promise<void>;
  listActivations(licenseId: string): Promise<ActivationRecord[]>;
  countActiveSeats(licenseId: string): Promise<number>;
  /** Gives the seat back; false when the activation is unknown or already deactivated. */
  deactivate(id: string, now: number): Promise<boolean>;

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

  /** Applies one control atomically (and moves the generation when it changed anything). */
  applyReleaseControl(key: ReleaseKey, op: ReleaseControlOp, now: number): Promise<{ changed: boolean; control: ReleaseControlRecord }>;
  listReleaseControls(): Promise<ReleaseControlRecord[]>;
  /**
   * A number that moves whenever any process changes a control. Cheap enough for every update
   * request: SQLite reads the row only after its WAL index shows a commit (looked at once a
   * millisecond at most: another process's change is seen within a millisecond); PostgreSQL reads
   * it at most once every `controlsPollMs` (openPostgresStore), the bound on how late a process learns.
   */
  releaseControlsGeneration(): Promise<number>;
  /** Records the releases as known; returns those no process had recorded before (newly published). */
  recordKnownReleases(releases: readonly ReleaseKey[], now: number): Promise<ReleaseKey[]>;
  /** Writes sightings in one transaction: last_seen moves forward only; lane set when given. */
  recordSightings(sightings: readonly Sighting[]): Promise<void>;
  /** Active installations seen at or after `since`, by product, lane and version. */
  installationsSeen(since: number): Promise<InstallationCount[]>;
  /** Device hashes and kinds of active installations on `lane` seen at or after `since` (at most `limit`). */
  devicesOnLane(lane: string, since: number, limit: number): Promise<{ deviceHash: string; kind: EntitlementKind }[]>;
  /** Granted activations (activate, sign-in) and seat_limit refusals per UTC day, from the audit trail. */
  activationsPerDay(since: number): Promise<DayCount[]>;
  /** Licenses (not staff, not revoked) whose expiry falls in [from, to), soonest first. */
  licensesExpiring(from: number, to: number, limit: number): Promise<LicenseRecord[]>;

  /** Throws when the records cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
