import type { ActivationRecord, AuditRecord, ChallengeRecord, LicenseRecord, ReleaseControlRecord } from "./types";

/** Rows as both drivers hand them back: snake_case columns, times as numbers or (int8) strings. */
export type Row = Record<string, any>;

// BIGINT columns arrive as strings (Bun keeps int8 exact); every time here fits a double.
export const num = (v: unknown): number => Number(v);
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export const licenseFromRow = (r: Row): LicenseRecord => ({
  id: r.id,
  kind: r.kind,
  keyHash: r.key_hash,
  licensee: r.licensee,
  organization: r.organization,
  plan: r.plan,
  planTitle: r.plan_title,
  channels: JSON.parse(r.channels),
  seats: num(r.seats),
  issued: num(r.issued),
  expires: numOrNull(r.expires),
  revoked: numOrNull(r.revoked),
});

export const activationFromRow = (r: Row): ActivationRecord => ({
  id: r.id,
  licenseId: r.license_id,
  kind: r.kind,
  installation: r.installation,
  deviceHash: r.device_hash,
  product: r.product,
  name: r.name,
  platform: r.platform,
  version: r.version,
  created: num(r.created),
  lastSeen: num(r.last_seen),
  deactivated: numOrNull(r.deactivated),
});

export const challengeFromRow = (r: Row): ChallengeRecord => ({
  nonceHash: r.nonce_hash,
  installation: r.installation,
  created: num(r.created),
  expires: num(r.expires),
  used: numOrNull(r.used),
});

export const auditFromRow = (r: Row): AuditRecord => ({
  ref: r.ref,
  time: num(r.time),
  address: r.address,
  action: r.action,
  activationId: r.activation_id,
  licenseId: r.license_id,
  outcome: r.outcome,
  error: r.error,
});

export const releaseControlFromRow = (r: Row): ReleaseControlRecord => ({
  lane: r.lane,
  version: r.version,
  halted: numOrNull(r.halted),
  haltedMs: num(r.halted_ms),
  withdrawn: numOrNull(r.withdrawn),
  updated: num(r.updated),
});

/** The UTC day (start, ms) a count's `day` column (whole days since the epoch) names. */
export const DAY_MS = 86_400_000;
