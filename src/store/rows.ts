import type {
  ActivationRecord,
  AdminTokenRecord,
  ConsoleSessionRecord,
  AttemptRecord,
  AuditRecord,
  ChallengeRecord,
  DeliveryRecord,
  EventRecord,
  LicensePatch,
  LicenseRecord,
  ReleaseControlRecord,
  WebhookEndpointRecord,
} from "./types";

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
  email: r.email ?? null,
  metadata: r.metadata ? JSON.parse(r.metadata) : {},
  tokenTtl: numOrNull(r.token_ttl),
  // Absent without a lease, so such a record reads back exactly as before migration 9.
  ...(r.seat_lease === null || r.seat_lease === undefined ? {} : { seatLease: num(r.seat_lease) }),
  // Absent when unused, as seatLease: a licence without them reads back exactly as before migration 15.
  ...(r.updates_until === null || r.updates_until === undefined ? {} : { updatesUntil: num(r.updates_until) }),
  ...(r.features === null || r.features === undefined ? {} : { features: JSON.parse(r.features) }),
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
  tokenExp: numOrNull(r.token_exp),
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
  actor: r.actor ?? null,
});

export const eventFromRow = (r: Row): EventRecord => ({ seq: num(r.seq), id: r.id, type: r.type, time: num(r.time), data: r.data });

export const adminTokenFromRow = (r: Row): AdminTokenRecord => ({
  id: r.id,
  name: r.name,
  secretHash: r.secret_hash,
  scopes: JSON.parse(r.scopes),
  created: num(r.created),
  expires: numOrNull(r.expires),
  revoked: numOrNull(r.revoked),
  lastUsed: numOrNull(r.last_used),
});

export const consoleSessionFromRow = (r: Row): ConsoleSessionRecord => ({
  idHash: r.id_hash,
  kind: r.kind,
  tokenId: r.token_id ?? null,
  subject: r.subject ?? null,
  licenseId: r.license_id ?? null,
  name: r.name,
  scopes: JSON.parse(r.scopes),
  staffGroups: r.staff_groups ? JSON.parse(r.staff_groups) : null,
  detail: r.detail ?? null,
  created: num(r.created),
  expires: num(r.expires),
  revoked: numOrNull(r.revoked),
});

/** The staff_groups column's text: JSON of a staff session's groups, null for other kinds. */
export const staffGroupsText = (c: ConsoleSessionRecord): string | null => (c.staffGroups ? JSON.stringify(c.staffGroups) : null);

export const endpointFromRow = (r: Row): WebhookEndpointRecord => ({
  id: r.id,
  url: r.url,
  types: JSON.parse(r.types),
  secret: r.secret,
  enabled: Boolean(r.enabled),
  disabledReason: r.disabled_reason ?? null,
  created: num(r.created),
  afterSeq: num(r.after_seq),
});

export const deliveryFromRow = (r: Row): DeliveryRecord => ({
  id: r.id,
  endpointId: r.endpoint_id,
  eventSeq: num(r.event_seq),
  eventId: r.event_id,
  status: r.status,
  attempts: num(r.attempts),
  nextAttempt: num(r.next_attempt),
  created: num(r.created),
  lastAttempt: numOrNull(r.last_attempt),
});

export const attemptFromRow = (r: Row): AttemptRecord => ({
  deliveryId: r.delivery_id,
  attempt: num(r.attempt),
  time: num(r.time),
  durationMs: num(r.duration_ms),
  statusCode: numOrNull(r.status_code),
  error: r.error ?? null,
});

/** The SQL LIKE pattern of a substring search, with `\\` as the escape character. */
export function containsPattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => "\\" + c)}%`;
}

/** What fan-out reads of an event (its data is read only when a delivery is attempted). */
export type EventHead = Pick<EventRecord, "seq" | "id" | "type">;

/** Which endpoints an event goes to: enabled, subscribed to its type, added before it. */
export function subscribers(endpoints: readonly WebhookEndpointRecord[], event: EventHead): WebhookEndpointRecord[] {
  return endpoints.filter((e) => e.enabled && e.afterSeq < event.seq && e.types.includes(event.type));
}

/** A licence's features as kept: JSON, or NULL for none (the column of a licence from before migration 15). */
export const featuresColumn = (features: readonly string[] | undefined): string | null =>
  features === undefined || features.length === 0 ? null : JSON.stringify(features);

/** The columns a license patch sets, with their values as both stores bind them. */
export function patchColumns(patch: LicensePatch): { sets: string[]; params: Record<string, string | number | null> } {
  const params: Record<string, string | number | null> = {};
  if (patch.keyHash !== undefined) params.key_hash = patch.keyHash;
  if (patch.licensee !== undefined) params.licensee = patch.licensee;
  if (patch.organization !== undefined) params.organization = patch.organization;
  if (patch.plan !== undefined) params.plan = patch.plan;
  if (patch.planTitle !== undefined) params.plan_title = patch.planTitle;
  if (patch.channels !== undefined) params.channels = JSON.stringify(patch.channels);
  if (patch.seats !== undefined) params.seats = patch.seats;
  if (patch.expires !== undefined) params.expires = patch.expires;
  if (patch.email !== undefined) params.email = patch.email;
  if (patch.metadata !== undefined) params.metadata = JSON.stringify(patch.metadata);
  if (patch.tokenTtl !== undefined) params.token_ttl = patch.tokenTtl;
  if (patch.seatLease !== undefined) params.seat_lease = patch.seatLease;
  if (patch.updatesUntil !== undefined) params.updates_until = patch.updatesUntil;
  if (patch.features !== undefined) params.features = featuresColumn(patch.features);
  return { sets: Object.keys(params), params };
}
export const releaseControlFromRow = (r: Row): ReleaseControlRecord => ({
  lane: r.lane,
  version: r.version,
  halted: numOrNull(r.halted),
  haltedMs: num(r.halted_ms),
  withdrawn: numOrNull(r.withdrawn),
  updated: num(r.updated),
  haltRule: r.halt_rule ?? null,
});

/** The UTC day (start, ms) a count's `day` column (whole days since the epoch) names. */
export const DAY_MS = 86_400_000;
/**
 * A rollout bucket (0 to 2^64 - 1) as the signed 64-bit integer both databases store: shifted down
 * by 2^63, so that comparing stored values compares buckets.
 */
export const storedBucket = (bucket: bigint): bigint => bucket - (1n << 63n);
