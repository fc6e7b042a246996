import { Type, type Static } from "@sinclair/typebox";
import type { ActivationRecord, LicensePatch, LicenseRecord, LicenseStatus } from "../../store/types";
import { KeyturnError } from "../errors";
import { activationView, licenseView, newEvent, revocationTtl, tokensValidUntil, type ActivationView, type LicenseView } from "../events";
import { newId, sha256Hex } from "../ids";
import { parseSeatLease } from "../seat-lease";
import { findLicenseByTypedKey, generateLicenseKey, hashLicenseKey } from "../license-key";
import { idempotencyAnswerContext } from "../record-seal";
import { decodeCursor, encodeCursor } from "./cursor";
import { auditRead } from "./read-audit";
import { adminAudit, requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { canonicalJson, idParam } from "./input";
import {
  amongAllowed,
  Channels,
  closed,
  Cursor,
  Email,
  Features,
  futureTime,
  Limit,
  Metadata,
  Nullable,
  pageSize,
  SeatLease,
  Text,
  TimeInput,
  TokenTtl,
  trimmed,
  timeOf,
  UpdatesUntil,
} from "./model";
import { checkFeatures } from "../features";
import { withPlan } from "../plans";

const NAME_MAX = 200;
const PLAN_MAX = 64;
/** Below PostgreSQL's INTEGER limit; sites with one license for every seat use millions. */
export const SEATS_MAX = 1_000_000_000;
/** How long an Idempotency-Key's first answer (which holds the license key) is kept. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

const Seats = Type.Integer({ minimum: 1, maximum: SEATS_MAX });

/** A new license, as the admin API, the console and `keyturn license create` give it. */
export const LicenseCreateInput = closed(
  {
    licensee: Text(NAME_MAX),
    organization: Type.Optional(Text(NAME_MAX, { description: 'Absent: none (""), as for a licence sold to a person' })),
    plan: Text(PLAN_MAX, { description: "A plan of the configuration ([plans.NAME]) fills in the fields left out; any other name is only a label" }),
    planTitle: Type.Optional(Text(NAME_MAX, { description: "Absent: the plan's title, else the plan" })),
    seats: Type.Optional(Seats),
    channels: Type.Optional(Channels),
    expires: Type.Optional(Nullable(TimeInput)),
    email: Type.Optional(Nullable(Email)),
    metadata: Type.Optional(Metadata),
    tokenTtl: Type.Optional(TokenTtl),
    seatLease: Type.Optional(SeatLease),
    updatesUntil: Type.Optional(UpdatesUntil),
    features: Type.Optional(Features),
  },
  "seats and channels are required unless the plan gives them",
);
export type LicenseCreateInput = Static<typeof LicenseCreateInput>;

/** The fields of a license to change. */
export const LicenseUpdateInput = closed(
  {
    licensee: Type.Optional(Text(NAME_MAX)),
    organization: Type.Optional(Text(NAME_MAX)),
    plan: Type.Optional(Text(PLAN_MAX)),
    planTitle: Type.Optional(Text(NAME_MAX)),
    seats: Type.Optional(Seats),
    channels: Type.Optional(Channels),
    expires: Type.Optional(Nullable(TimeInput)),
    email: Type.Optional(Nullable(Email)),
    metadata: Type.Optional(Metadata),
    tokenTtl: Type.Optional(TokenTtl),
    seatLease: Type.Optional(SeatLease),
    updatesUntil: Type.Optional(UpdatesUntil),
    features: Type.Optional(Features),
  },
  "Only the fields to change; metadata is replaced whole. Seats below those in use: 409 seats_in_use",
);
export type LicenseUpdateInput = Static<typeof LicenseUpdateInput>;

/** A search of licenses, as a query string carries it. */
export const LicenseQuery = closed({
  query: Type.Optional(Type.String({ maxLength: NAME_MAX, description: "Part of licensee, organization, email or id; case-insensitive" })),
  status: Type.Optional(Type.Union([Type.Literal("active"), Type.Literal("revoked"), Type.Literal("expired")])),
  cursor: Type.Optional(Cursor),
  limit: Type.Optional(Limit(200, 50)),
});
export type LicenseQuery = Static<typeof LicenseQuery>;

const UPDATE_FIELDS = Object.keys(LicenseUpdateInput.properties) as (keyof LicenseUpdateInput)[];

/** `seatLease`: a duration (`10m`, `30d`) or null for none; undefined when absent. */
const seatLease = (text: string | null | undefined): number | null | undefined => (text === undefined ? undefined : parseSeatLease(text));

export interface CreatedLicense {
  readonly license: LicenseView;
  /** The license key, answered here (and to a replay of the same Idempotency-Key within 24 h) only. */
  readonly key: string;
}

/**
 * Creates a license (scope licenses:write; audit license-create; event license.created).
 * With an Idempotency-Key: the same key and body within 24 h answer the first answer again, key
 * included; another body is idempotency_conflict. The first answer is kept only for those 24 h
 * (the retention schedule deletes it after) since it holds the license key.
 */
export async function createLicense(d: AdminDeps, caller: AdminCaller, input: LicenseCreateInput, idempotencyKey?: unknown): Promise<CreatedLicense> {
  requireScope(caller.principal, "licenses:write");
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== "string" || !IDEMPOTENCY_KEY.test(idempotencyKey)))
    throw new KeyturnError("invalid_request", "Idempotency-Key must be 1 to 255 visible ASCII characters.");
  const now = d.clock();
  const key = generateLicenseKey(d.variant);
  const plan = trimmed(input.plan);
  const fields = withPlan(d.plans, input, now);
  const features = fields.features === undefined ? [] : checkFeatures(fields.features);
  const updatesUntil = timeOf(fields.updatesUntil ?? null);
  const license: LicenseRecord = {
    id: newId("lic", now),
    kind: "license",
    keyHash: hashLicenseKey(key),
    licensee: trimmed(input.licensee),
    // A licence sold to a person has no organisation (""), and a plan may need no title of its own.
    organization: trimmed(input.organization) ?? "",
    plan,
    planTitle: trimmed(fields.planTitle) ?? plan,
    channels: amongAllowed(fields.channels, d.variant.channels, "channels"),
    seats: fields.seats,
    issued: now,
    expires: futureTime(fields.expires, "expires", now),
    revoked: null,
    email: input.email ?? null,
    metadata: input.metadata ?? {},
    tokenTtl: fields.tokenTtl ?? null,
    seatLease: seatLease(fields.seatLease) ?? null,
    // Kept absent when unused, as the records read them back.
    ...(updatesUntil !== null ? { updatesUntil } : {}),
    ...(features.length > 0 ? { features } : {}),
  };
  const answer: CreatedLicense = { license: licenseView(license, 0), key };
  const journal = {
    audit: adminAudit(d, caller, "license-create", { licenseId: license.id }),
    event: (l: LicenseRecord) => newEvent("license.created", { license: licenseView(l, 0) }, now),
  };
  if (idempotencyKey === undefined) {
    await d.store.createLicense(license, journal);
    return answer;
  }
  const requestHash = sha256Hex(canonicalJson(input));
  const scope = caller.principal.tokenId ?? "cli";
  // The answer holds the licence key: sealed, bound to its scope and Idempotency-Key.
  const context = idempotencyAnswerContext(scope, idempotencyKey);
  const stored = d.seal ? await d.seal.seal(JSON.stringify(answer), context) : JSON.stringify(answer);
  const result = await d.store.createLicenseIdempotent(
    license,
    { scope, key: idempotencyKey, requestHash, answer: stored, created: now },
    journal,
    now - IDEMPOTENCY_WINDOW_MS,
  );
  if (result.outcome === "created") return answer;
  if (result.record.requestHash !== requestHash)
    throw new KeyturnError("idempotency_conflict", "This Idempotency-Key was used with another body in the last 24 hours.");
  return JSON.parse(d.seal ? await d.seal.open(result.record.answer, context) : result.record.answer) as CreatedLicense;
}

/** A license by its `lic_`/`staff:` id or by its key as typed; not_found otherwise (the admin token is not at fault). */
export async function findLicense(d: AdminDeps, keyOrId: unknown): Promise<LicenseRecord> {
  const t = idParam(keyOrId, "license", 200);
  let license: LicenseRecord | null = null;
  if (t.startsWith("lic_") || t.startsWith("staff:")) license = await d.store.getLicense(t);
  else license = await findLicenseByTypedKey(d.store, d.variant, t);
  if (!license) throw new KeyturnError("not_found", `No licence matches ${JSON.stringify(t.slice(0, 60))}.`);
  return license;
}

const isLicensePosition = (p: unknown): p is { issued: number; id: string } =>
  typeof p === "object" && p !== null && Number.isSafeInteger((p as { issued: unknown }).issued) && typeof (p as { id: unknown }).id === "string";

/** One page of licenses, oldest first (scope licenses:read). Query: { query?, status?, cursor?, limit? (1-200, 50) }. */
export async function searchLicenses(d: AdminDeps, caller: AdminCaller, input: LicenseQuery): Promise<{ licenses: LicenseView[]; next: string | null }> {
  requireScope(caller.principal, "licenses:read");
  const textQuery = input.query?.trim() || undefined;
  const status: LicenseStatus | undefined = input.status;
  const limit = pageSize(input.limit, 50, 200);
  const bound = { query: textQuery, status };
  const after = decodeCursor(input.cursor, bound, isLicensePosition);
  const rows = await d.store.searchLicenses({ text: textQuery, status, now: d.clock(), after, limit: limit + 1 });
  await auditRead(d, caller, "license-list");
  const page = rows.slice(0, limit);
  const last = page.at(-1)?.license;
  return {
    licenses: page.map((r) => licenseView(r.license, r.seatsUsed)),
    next: rows.length > limit && last ? encodeCursor(bound, { issued: last.issued, id: last.id }) : null,
  };
}

/** A license with its seats used and its installations (scope licenses:read). */
export async function showLicense(d: AdminDeps, caller: AdminCaller, keyOrId: unknown): Promise<{ license: LicenseView; activations: ActivationView[] }> {
  requireScope(caller.principal, "licenses:read");
  const license = await findLicense(d, keyOrId);
  const [seatsUsed, activations] = await Promise.all([d.store.countActiveSeats(license.id), d.store.listActivations(license.id)]);
  await auditRead(d, caller, "license-show", license.id);
  return { license: licenseView(license, seatsUsed), activations: activations.map(activationView) };
}

/**
 * Changes a license (scope licenses:write; audit license-update; event license.updated with the
 * changed fields). Seats below those in use: seats_in_use, decided in the store's transaction.
 * Installations see the change at their next refresh.
 */
export async function updateLicense(
  d: AdminDeps,
  caller: AdminCaller,
  keyOrId: unknown,
  input: LicenseUpdateInput,
): Promise<{ license: LicenseView; changed: string[] }> {
  requireScope(caller.principal, "licenses:write");
  const now = d.clock();
  const patch: LicensePatch = {
    licensee: trimmed(input.licensee),
    organization: trimmed(input.organization),
    plan: trimmed(input.plan),
    planTitle: trimmed(input.planTitle),
    channels: input.channels === undefined ? undefined : amongAllowed(input.channels, d.variant.channels, "channels"),
    seats: input.seats,
    expires: input.expires === undefined ? undefined : futureTime(input.expires, "expires", now),
    email: input.email,
    metadata: input.metadata,
    tokenTtl: input.tokenTtl,
    seatLease: seatLease(input.seatLease),
    updatesUntil: input.updatesUntil === undefined ? undefined : timeOf(input.updatesUntil),
    features: input.features === undefined ? undefined : checkFeatures(input.features),
  };
  const current = await findLicense(d, keyOrId);
  if (current.kind !== "license") throw new KeyturnError("invalid_request", "Staff entitlements follow the identity provider and are not edited.");
  const before = {
    ...current,
    email: current.email ?? null,
    metadata: current.metadata ?? {},
    tokenTtl: current.tokenTtl ?? null,
    seatLease: current.seatLease ?? null,
    updatesUntil: current.updatesUntil ?? null,
    features: current.features ?? [],
  };
  const changed = UPDATE_FIELDS.filter((f) => patch[f] !== undefined && canonicalJson(patch[f]) !== canonicalJson(before[f]));
  const effective = Object.fromEntries(changed.map((f) => [f, patch[f]])) as LicensePatch;
  if (changed.length === 0) return { license: licenseView(current, await d.store.countActiveSeats(current.id)), changed: [] };
  const result = await d.store.updateLicense(current.id, effective, {
    audit: adminAudit(d, caller, "license-update", { licenseId: current.id }),
    event: (l) => newEvent("license.updated", { license: licenseView(l), changed }, now),
  });
  if (result.outcome === "unknown") throw new KeyturnError("not_found", `No licence ${current.id}.`);
  if (result.outcome === "seats_in_use")
    throw new KeyturnError("seats_in_use", `${result.seatsUsed} seats are in use: deactivate installations before lowering seats to ${effective.seats}.`);
  return { license: licenseView(result.license, result.seatsUsed), changed };
}

/** Scope licenses:write; audit license-revoke; event license.revoked. Already revoked: license_revoked. */
export async function revokeLicense(d: AdminDeps, caller: AdminCaller, keyOrId: unknown): Promise<LicenseView> {
  requireScope(caller.principal, "licenses:write");
  const license = await findLicense(d, keyOrId);
  const now = d.clock();
  const revoked = await d.store.revokeLicense(license.id, now, {
    audit: adminAudit(d, caller, "license-revoke", { licenseId: license.id }),
    endsPortalSessions: now,
    event: (l) =>
      newEvent(
        "license.revoked",
        { license: licenseView(l), tokensValidUntil: tokensValidUntil(now, revocationTtl(d.tokenTtlSeconds, l), l.expires, l.tokensExpire) },
        now,
      ),
  });
  if (!revoked) throw new KeyturnError("license_revoked", `Licence ${license.id} was already revoked.`);
  return licenseView((await d.store.getLicense(license.id))!, await d.store.countActiveSeats(license.id));
}

/** Scope licenses:write; audit license-reinstate; event license.reinstated. Not revoked: invalid_request. */
export async function reinstateLicense(d: AdminDeps, caller: AdminCaller, keyOrId: unknown): Promise<LicenseView> {
  requireScope(caller.principal, "licenses:write");
  const license = await findLicense(d, keyOrId);
  const now = d.clock();
  const reinstated = await d.store.reinstateLicense(license.id, {
    audit: adminAudit(d, caller, "license-reinstate", { licenseId: license.id }),
    event: (l) => newEvent("license.reinstated", { license: licenseView(l) }, now),
  });
  if (!reinstated) throw new KeyturnError("invalid_request", `Licence ${license.id} is not revoked.`);
  return licenseView(reinstated, await d.store.countActiveSeats(license.id));
}

/**
 * Gives a license a new key, for one lost or leaked (scope licenses:write; audit license-rekey;
 * event license.updated with changed ["key"]). Only the key's hash is kept, so the old key cannot be
 * shown again; from this write on, activating with it is license_unknown (the admin API: not_found).
 * Installations keep their seats and their tokens, which name the activation and the license, not
 * the key. Staff entitlements have no key.
 */
export async function rekeyLicense(d: AdminDeps, caller: AdminCaller, keyOrId: unknown): Promise<CreatedLicense> {
  requireScope(caller.principal, "licenses:write");
  const current = await findLicense(d, keyOrId);
  if (current.kind !== "license") throw new KeyturnError("invalid_request", "Staff entitlements have no licence key.");
  const now = d.clock();
  const key = generateLicenseKey(d.variant);
  const result = await d.store.updateLicense(
    current.id,
    { keyHash: hashLicenseKey(key) },
    {
      audit: adminAudit(d, caller, "license-rekey", { licenseId: current.id }),
      // A portal session opened with the old key (perhaps a leaked one) ends with it.
      endsPortalSessions: now,
      event: (l) => newEvent("license.updated", { license: licenseView(l), changed: ["key"] }, now),
    },
  );
  if (result.outcome !== "updated") throw new KeyturnError("not_found", `No licence ${current.id}.`);
  return { license: licenseView(result.license, result.seatsUsed), key };
}

/** Every installation of a license, active or not, oldest first (scope activations:read). */
export async function listActivations(d: AdminDeps, caller: AdminCaller, keyOrId: unknown): Promise<ActivationView[]> {
  requireScope(caller.principal, "activations:read");
  const license = await findLicense(d, keyOrId);
  const activations = await d.store.listActivations(license.id);
  await auditRead(d, caller, "activation-list", license.id);
  return activations.map(activationView);
}

/**
 * Gives an installation's seat back (scope activations:write; audit activation-deactivate; event
 * activation.deactivated). Unknown: not_found; already deactivated: already_deactivated (409).
 */
export async function deactivateActivation(d: AdminDeps, caller: AdminCaller, activationId: unknown): Promise<ActivationView> {
  requireScope(caller.principal, "activations:write");
  const id = idParam(activationId, "activation");
  const activation = await d.store.getActivation(id);
  if (!activation) throw new KeyturnError("not_found", `No activation ${id}.`);
  const ttl = revocationTtl(d.tokenTtlSeconds, await d.store.getLicense(activation.licenseId));
  const now = d.clock();
  let after: ActivationRecord | null = null;
  const done = await d.store.deactivate(activation.id, now, {
    audit: adminAudit(d, caller, "activation-deactivate", { licenseId: activation.licenseId, activationId: activation.id }),
    event: (a) => {
      after = a;
      return newEvent("activation.deactivated", { activation: activationView(a), tokensValidUntil: tokensValidUntil(now, ttl, null, a.tokenExp) }, now);
    },
  });
  if (!done || !after) throw new KeyturnError("already_deactivated", `Activation ${activation.id} was already deactivated.`);
  return activationView(after);
}
