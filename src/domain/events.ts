import type { ActivateResult, ActivationRecord, EventRecord, LicenseRecord, NewEvent } from "../store/types";
import { isoTime } from "./clock";
import type { Device } from "./device";
import { newId } from "./ids";
import { formatSeatLease } from "./seat-lease";

/** Every event type (EVENTS-CONTRACT.md); webhook endpoints subscribe to a list of these. */
export const EVENT_TYPES = [
  "license.created",
  "license.updated",
  "license.revoked",
  "license.reinstated",
  "activation.created",
  "activation.deactivated",
  "activation.refused",
  "activation.reclaimed",
  "staff.signed_in",
  "release.published",
  "release.halted",
  "release.resumed",
  "release.withdrawn",
  "release.restored",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The types the vendor feed carries (what a mirror needs to act on). */
export const FEED_TYPES: readonly EventType[] = [
  "activation.deactivated",
  "license.revoked",
  "license.reinstated",
  "license.updated",
  "release.published",
  "release.halted",
  "release.resumed",
  "release.withdrawn",
  "release.restored",
];

export interface LicenseView {
  readonly id: string;
  readonly licensee: string;
  readonly organization: string;
  readonly plan: string;
  readonly planTitle: string;
  readonly channels: readonly string[];
  readonly seats: number;
  readonly seatsUsed?: number;
  readonly issued: string;
  readonly expires: string | null;
  readonly revoked: string | null;
  readonly email: string | null;
  readonly metadata: Readonly<Record<string, string>>;
  /** This license's token lifetime in seconds; null: the site's --token-ttl. */
  readonly tokenTtl: number | null;
  /** The seat lease (`30d`), null when seats never lapse. */
  readonly seatLease: string | null;
  /** The end of the maintenance window; null: every release is offered. */
  readonly updatesUntil: string | null;
  /** `name` or `name=value`; [] for none. */
  readonly features: readonly string[];
}

export interface ActivationView {
  readonly id: string;
  readonly license: string;
  readonly kind: ActivationRecord["kind"];
  readonly product: string | null;
  readonly name: string;
  readonly platform: string;
  readonly version: string;
  readonly created: string;
  readonly lastSeen: string;
  readonly deactivated: string | null;
}

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoTime(ms));

export function licenseView(l: LicenseRecord, seatsUsed?: number): LicenseView {
  return {
    id: l.id,
    licensee: l.licensee,
    organization: l.organization,
    plan: l.plan,
    planTitle: l.planTitle,
    channels: l.channels,
    seats: l.seats,
    ...(seatsUsed === undefined ? {} : { seatsUsed }),
    issued: isoTime(l.issued),
    expires: isoOrNull(l.expires),
    revoked: isoOrNull(l.revoked),
    email: l.email ?? null,
    metadata: l.metadata ?? {},
    tokenTtl: l.tokenTtl ?? null,
    seatLease: l.seatLease == null ? null : formatSeatLease(l.seatLease),
    updatesUntil: isoOrNull(l.updatesUntil ?? null),
    features: l.features ?? [],
  };
}

export function activationView(a: ActivationRecord): ActivationView {
  return {
    id: a.id,
    license: a.licenseId,
    kind: a.kind,
    product: a.product,
    name: a.name,
    platform: a.platform,
    version: a.version,
    created: isoTime(a.created),
    lastSeen: isoTime(a.lastSeen),
    deactivated: isoOrNull(a.deactivated),
  };
}

/**
 * An event to write with its change. Its id and JSON are made only when the store writes it: an
 * event outside the feed that no webhook endpoint subscribes to is never written (store/types.ts).
 */
export function newEvent(type: EventType, data: unknown, now: number): NewEvent {
  let id: string | undefined;
  let text: string | undefined;
  return {
    type,
    time: now,
    feed: FEED_SET.has(type),
    get id() {
      return (id ??= newId("evt", now));
    },
    get data() {
      return (text ??= JSON.stringify(data));
    },
  };
}

const FEED_SET = new Set<string>(FEED_TYPES);

/** The envelope of a webhook body and of a feed item: `{ type, timestamp, data }`. */
export function envelope(e: Pick<EventRecord, "type" | "time" | "data">): string {
  return `{"type":${JSON.stringify(e.type)},"timestamp":${JSON.stringify(isoTime(e.time))},"data":${e.data}}`;
}

/**
 * The token lifetime to assume when an entitlement of `license` is revoked: the longer of the site's
 * and the license's own. A token issued under a lifetime lowered since may outlive the time this
 * gives (docs/admin-api.md "Token lifetime" says so).
 */
export function revocationTtl(siteTtlSeconds: number, license: Pick<LicenseRecord, "tokenTtl"> | null): number {
  return Math.max(siteTtlSeconds, license?.tokenTtl ?? 0);
}

/**
 * The latest expiry any token of an entitlement can have once it is revoked now: the latest `exp`
 * issued to it, as recorded (`issuedExp`); for activations older than that record, the token TTL
 * (none outlives its license).
 */
export function tokensValidUntil(now: number, ttlSeconds: number, licenseExpires: number | null, issuedExp: number | null | undefined): string {
  if (issuedExp !== null && issuedExp !== undefined) return isoTime(issuedExp);
  const end = now + ttlSeconds * 1000;
  return isoTime(licenseExpires === null ? end : Math.min(end, Math.max(licenseExpires, now)));
}

/**
 * The event of an activation's outcome, written in its transaction: a new seat (or, for staff, any
 * sign-in), or a seat_limit refusal with the holders.
 */
export function activationEvent(action: "activate" | "sign-in", licenseId: string, device: Device, now: number) {
  return (result: ActivateResult): NewEvent | null => {
    if (result.outcome === "seat_limit")
      return newEvent(
        "activation.refused",
        {
          license: { id: licenseId },
          device: { product: device.product, name: device.name, platform: device.platform, version: device.version },
          holders: result.holders.map(activationView),
        },
        now,
      );
    if (action === "sign-in") return newEvent("staff.signed_in", { activation: activationView(result.activation) }, now);
    return result.outcome === "created" ? newEvent("activation.created", { activation: activationView(result.activation) }, now) : null;
  };
}

/**
 * What a reclaim writes: the lapsed seat's deactivation (a feed event: mirrors refuse its tokens)
 * and `activation.reclaimed`, naming the installation that lost its seat and the one that took it.
 */
export function reclaimEvents(reclaimed: ActivationRecord, by: ActivationRecord, now: number, ttlSeconds: number): NewEvent[] {
  const validUntil = tokensValidUntil(now, ttlSeconds, null, reclaimed.tokenExp);
  return [
    newEvent("activation.deactivated", { activation: activationView(reclaimed), tokensValidUntil: validUntil }, now),
    newEvent("activation.reclaimed", { activation: activationView(reclaimed), by: activationView(by), tokensValidUntil: validUntil }, now),
  ];
}
