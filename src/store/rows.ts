import type { ActivationRecord, ActivationWithLicense, AuditRecord, ChallengeRecord, LicenseRecord } from "./types";

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

/** Both stores' one query for an activation with its license: the license's columns prefixed `l_`. */
export const ACTIVATION_WITH_LICENSE_COLUMNS = `a.*, l.kind AS l_kind, l.key_hash AS l_key_hash, l.licensee AS l_licensee,
  l.organization AS l_organization, l.plan AS l_plan, l.plan_title AS l_plan_title, l.channels AS l_channels,
  l.seats AS l_seats, l.issued AS l_issued, l.expires AS l_expires, l.revoked AS l_revoked, l.active_seats AS l_active_seats`;

export const activationWithLicenseFromRow = (r: Row): ActivationWithLicense => ({
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
