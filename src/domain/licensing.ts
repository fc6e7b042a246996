import type { Variant } from "../config/variants";
import type { ActivationRecord, LicenseRecord, Store } from "../store/types";
import type { AdoptionRecorder } from "./adoption";
import { type Audit, type RequestContext } from "./audit";
import { isoTime, type Clock } from "./clock";
import { type Static, Type } from "@sinclair/typebox";
import { checkDevice, DeviceModel, installationOf, type Device, type DeviceInput } from "./device";
import type { EntitlementStatusSource } from "./entitlement-status";
import { KeyturnError } from "./errors";
import { featureMap, type FeatureMap } from "./features";
import { activationEvent, activationView, newEvent, reclaimEvents, revocationTtl, tokensValidUntil } from "./events";
import { newId } from "./ids";
import { findLicenseByTypedKey } from "./license-key";
import { capTokenTtlToLease, seatLeaseView, type SeatLeaseView } from "./seat-lease";
import type { EntitlementClaims, TokenSigner, TokenVerifier } from "./tokens";

/** A licence key as typed: its shape only; whether this site knows it is activation's question. */
export const LicenseKeyText = Type.String({ minLength: 1, maxLength: 200 });
/** POST /licenses/activate's body (the spec's ActivateRequest). */
export const ActivateModel = Type.Object({ key: LicenseKeyText, device: DeviceModel });
/** POST /entitlements/refresh's body. */
export const RefreshModel = Type.Object({ device: DeviceModel });

/**
 * Whether a licence can be used now: license_revoked or license_expired otherwise. The one rule for
 * activation, refresh, current, staff sign-in and the portal's downloads.
 */
export function requireLive(license: Pick<LicenseRecord, "revoked" | "expires">, now: number, ids?: { licenseId: string; activationId?: string }): void {
  if (license.revoked !== null) throw new KeyturnError("license_revoked", "The licence is revoked.", ids);
  if (license.expires !== null && license.expires <= now) throw new KeyturnError("license_expired", "The licence is expired.", ids);
}

/** The spec's Entitlement object. */
export interface Entitlement {
  readonly id: string;
  readonly kind: LicenseRecord["kind"];
  readonly licensee: string;
  readonly organization: string;
  readonly plan: string;
  readonly planTitle: string;
  readonly channels: readonly string[];
  readonly issued: string;
  /** The token's expiry (the spec's field): at most the token lifetime from `issued`. */
  readonly expires: string;
  /** The license's own expiry, null when it has none (keyturn's addition; the end of the term). */
  readonly licenseExpires: string | null;
  readonly seats: { readonly used: number; readonly total: number };
  /** Only on a license with a seat lease: the lease and when this seat lapses unless seen again. */
  readonly seatLease?: SeatLeaseView;
  /** Only on a licence with a maintenance window: releases released after it are not offered. */
  readonly updatesUntil?: string;
  /** Only on a licence with features: name → value, or true for a name alone. */
  readonly features?: FeatureMap;
}

export interface ActivationAnswer {
  readonly token: string;
  readonly entitlement: Entitlement;
}

export interface CurrentAnswer {
  readonly entitlement: Entitlement;
  readonly activation: {
    readonly id: string;
    readonly product?: string;
    readonly name: string;
    readonly platform: string;
    readonly version: string;
    readonly created: string;
    readonly lastSeen: string;
  };
}

/**
 * Where a token goes: to a program that refreshes it (online), or as an offline activation's answer
 * code to a computer that cannot reach the site, which lasts --offline-token-ttl instead.
 */
export type TokenUse = "online" | "offline";

/** A bearer request's proven identity: the verified claims of a token whose activation is active. */
export interface Principal {
  readonly claims: EntitlementClaims;
}

export interface LicensingDeps {
  readonly variant: Variant;
  readonly store: Store;
  readonly clock: Clock;
  readonly audit: Audit;
  /** null when no license key is configured: licensing_unavailable. */
  readonly signer: TokenSigner | null;
  readonly verifier: TokenVerifier;
  /** Whether a verified token's installation may be served (the records, or a mirror's knowledge). */
  readonly status: EntitlementStatusSource;
  readonly tokenTtlSeconds: number;
  /** The lifetime of an offline activation's token (--offline-token-ttl): that computer cannot refresh. */
  readonly offlineTokenTtlSeconds: number;
  /** The vendor's address when this site is a mirror: it holds no records to license from. */
  readonly mirrorOf?: string | null;
  /** Records every bearer request (entitlements/current, update files, feeds, …) as a sighting of the installation (adoption.ts). */
  readonly adoption?: AdoptionRecorder;
  /** After a key's seat was granted (a trial on the device converts: src/domain/trials.ts); absent when trials are off. */
  readonly afterActivation?: (license: LicenseRecord, deviceHash: string, ctx: RequestContext) => Promise<void>;
}

/** The license half of the spec: activate, refresh, deactivate, current, and the bearer check. */
export class Licensing {
  constructor(private readonly deps: LicensingDeps) {}

  get available(): boolean {
    return this.deps.signer !== null && !this.deps.mirrorOf;
  }

  /** Throws licensing_unavailable on a mirror: licenses, activations and sign-in live at the vendor. */
  requireRecords(): void {
    if (this.deps.mirrorOf)
      throw new KeyturnError("licensing_unavailable", `This site is a mirror of ${this.deps.mirrorOf}: activate, refresh, deactivate and sign in there.`);
  }

  async activate(input: Static<typeof ActivateModel>, ctx: RequestContext, use: TokenUse = "online"): Promise<ActivationAnswer> {
    this.requireRecords();
    const device = checkDevice(this.deps.variant, input.device);
    this.requireSigner();
    const license = await findLicenseByTypedKey(this.deps.store, this.deps.variant, input.key);
    if (!license || license.kind !== "license") throw new KeyturnError("license_unknown", "The key is not known, or is mistyped.");
    const answer = await this.grantSeat(license, device, ctx, "activate", use);
    await this.deps.afterActivation?.(license, device.hash, ctx);
    return answer;
  }

  /**
   * Takes (or reuses) the installation's seat of `license` and issues a token. Shared by license
   * activation (online or offline) and staff sign-in.
   */
  async grantSeat(
    license: LicenseRecord,
    device: Device,
    ctx: RequestContext,
    action: "activate" | "sign-in",
    use: TokenUse = "online",
  ): Promise<ActivationAnswer> {
    const signer = this.requireSigner();
    const now = this.deps.clock();
    const ids = { licenseId: license.id };
    requireLive(license, now, ids);
    const result = await this.deps.store.activate({
      licenseId: license.id,
      kind: license.kind,
      installation: installationOf(this.deps.variant, device),
      deviceHash: device.hash,
      product: device.product,
      name: device.name,
      platform: device.platform,
      version: device.version,
      newId: newId("act", now),
      now,
      tokenExp: this.tokenExpiry(license, now, use),
      audit: this.deps.audit.okLine(action, ctx, license.id),
      event: activationEvent(action, license.id, device, now),
      reclaim: (reclaimed, by) => ({
        audit: { ...this.deps.audit.okLine("reclaim", ctx, license.id), activationId: reclaimed.id, actor: by.id },
        // As for any revocation: with no recorded token expiry (before migration 6) a token may predate the lease.
        events: reclaimEvents(reclaimed, by, now, revocationTtl(this.deps.tokenTtlSeconds, license)),
      }),
    });
    if (result.outcome === "seat_limit") throw new KeyturnError("seat_limit", this.seatLimitMessage(license, result.holders), ids);
    return this.issue(signer, license, result.activation, result.seatsUsed, now, use);
  }

  async refresh(principal: Principal, input: DeviceInput, ctx: RequestContext): Promise<ActivationAnswer> {
    this.requireRecords();
    const device = checkDevice(this.deps.variant, input);
    const signer = this.requireSigner();
    const { claims } = principal;
    const ids = { licenseId: claims.lic, activationId: claims.sub };
    const found = await this.deps.store.getActivationWithLicense(claims.sub);
    if (!found) throw new KeyturnError("entitlement_invalid", "Not a token this site signed, or not for this site.", ids);
    const { activation, license, seatsUsed } = found;
    if (device.hash !== claims.dev || installationOf(this.deps.variant, device) !== activation.installation)
      throw new KeyturnError("device_mismatch", "The device is not the one this entitlement was issued to.", ids);
    requireLive(license, this.deps.clock(), ids);
    const now = this.deps.clock();
    await this.deps.store.touchActivation(activation.id, { deviceHash: device.hash, ...device }, now, this.tokenExpiry(license, now));
    const answer = this.issue(signer, license, activation, seatsUsed, now);
    await this.deps.audit.ok("refresh", ctx, ids);
    return answer;
  }

  async deactivate(principal: Principal, ctx: RequestContext): Promise<void> {
    this.requireRecords();
    const { sub, lic } = principal.claims;
    const ttl = revocationTtl(this.deps.tokenTtlSeconds, await this.deps.store.getLicense(lic));
    const now = this.deps.clock();
    const event = (a: ActivationRecord) =>
      newEvent("activation.deactivated", { activation: activationView(a), tokensValidUntil: tokensValidUntil(now, ttl, null, a.tokenExp) }, now);
    if (!(await this.deps.store.deactivate(sub, now, { event })))
      throw new KeyturnError("entitlement_revoked", "The installation was deactivated.", { licenseId: lic, activationId: sub });
    await this.deps.audit.ok("deactivate", ctx, { licenseId: lic, activationId: sub });
  }

  async current(principal: Principal): Promise<CurrentAnswer> {
    this.requireRecords();
    const { claims } = principal;
    const ids = { licenseId: claims.lic, activationId: claims.sub };
    const found = await this.deps.store.getActivationWithLicense(claims.sub);
    if (!found) throw new KeyturnError("entitlement_invalid", "Not a token this site signed, or not for this site.", ids);
    const { activation, license, seatsUsed } = found;
    requireLive(license, this.deps.clock(), ids);
    return {
      entitlement: entitlementOf(license, activation.id, claims.iat, claims.exp, seatsUsed, this.deps.clock()),
      activation: {
        id: activation.id,
        ...(activation.product !== null ? { product: activation.product } : {}),
        name: activation.name,
        platform: activation.platform,
        version: activation.version,
        created: isoTime(activation.created),
        lastSeen: isoTime(activation.lastSeen),
      },
    };
  }

  /**
   * The bearer check: a token signed for this site (a mirror: for its vendor), unexpired, whose
   * installation the status source still serves, asked on every request. `leaving`: the
   * installation gives its seat back (EntitlementStatusSource.check).
   */
  async authenticate(token: string, leaving = false): Promise<Principal> {
    const claims = await this.deps.verifier.verify(token);
    await this.deps.status.check(claims, leaving);
    return { claims };
  }

  /**
   * The one sighting of a bearer request, recorded as it ends: every one keeps a leased seat, and
   * one that read a lane's manifest or feed names it (adoption). A mirror holds no activations to
   * record an unnamed sighting on.
   */
  sighted(principal: Principal, lane: string | null): void {
    if (lane === null && this.deps.mirrorOf) return;
    this.deps.adoption?.seen(principal.claims.sub, lane);
  }

  /**
   * The `exp` of a token issued now: the license's own lifetime (an offline licence issued for its
   * term), else the site's for that use (online or offline), capped to its seat lease, never past the license's expiry. Recorded with the activation (the
   * feed's tokensValidUntil) before it is signed.
   */
  private tokenExpiry(license: LicenseRecord, now: number, use: TokenUse = "online"): number {
    const siteTtl = use === "offline" ? this.deps.offlineTokenTtlSeconds : this.deps.tokenTtlSeconds;
    const ttlEnd = now + capTokenTtlToLease(license.tokenTtl ?? siteTtl, license) * 1000;
    return license.expires !== null ? Math.min(ttlEnd, license.expires) : ttlEnd;
  }

  /** Drops every verified token kept (the keys changed): each is checked against the keys held now. */
  forgetVerifiedTokens(): void {
    this.deps.verifier.clear();
  }

  private issue(
    signer: TokenSigner,
    license: LicenseRecord,
    activation: ActivationRecord,
    seatsUsed: number,
    now: number,
    use: TokenUse = "online",
  ): ActivationAnswer {
    const exp = this.tokenExpiry(license, now, use);
    const { token, claims } = signer.sign(
      {
        sub: activation.id,
        kind: license.kind,
        lic: license.id,
        name: license.licensee,
        org: license.organization,
        plan: license.plan,
        chn: license.channels,
        dev: activation.deviceHash,
        ...(license.expires !== null ? { lex: Math.floor(license.expires / 1000) } : {}),
        ...licenceTermClaims(license),
      },
      now,
      exp,
    );
    return { token, entitlement: entitlementOf(license, activation.id, claims.iat, claims.exp, seatsUsed, now) };
  }

  private requireSigner(): TokenSigner {
    if (!this.deps.signer) throw new KeyturnError("licensing_unavailable", "The site has no signing key configured.");
    return this.deps.signer;
  }

  private seatLimitMessage(license: LicenseRecord, holders: readonly ActivationRecord[]): string {
    const computers = this.deps.variant.seatHolders === "computers";
    const names = holders.map((h) => (computers || h.product === null ? `"${h.name}"` : `"${h.name}" (${h.product})`));
    return (
      `Every seat is in use: all ${license.seats} seat${license.seats === 1 ? " is" : "s are"} taken by ` +
      `these ${computers ? "computers" : "installations"}: ${names.join(", ")}. Deactivate one of them to free a seat.`
    );
  }
}

/** `seenAt`: the sighting this answer is (the seat lapses a lease after it). */
function entitlementOf(license: LicenseRecord, activationId: string, iat: number, exp: number, seatsUsed: number, seenAt: number): Entitlement {
  const lease = seatLeaseView(license, seenAt);
  return {
    id: activationId,
    kind: license.kind,
    licensee: license.licensee,
    organization: license.organization,
    plan: license.plan,
    planTitle: license.planTitle,
    channels: license.channels,
    issued: isoTime(iat * 1000),
    expires: isoTime(exp * 1000),
    licenseExpires: license.expires === null ? null : isoTime(license.expires),
    seats: { used: seatsUsed, total: license.seats },
    ...(lease ? { seatLease: lease } : {}),
    // Absent when unused, so the spec's answers are unchanged for licences without them.
    ...(license.updatesUntil != null ? { updatesUntil: isoTime(license.updatesUntil) } : {}),
    ...(license.features?.length ? { features: featureMap(license.features) } : {}),
  };
}

/** The claims `upd` (NumericDate) and `ent` of a licence that has a maintenance window or features. */
function licenceTermClaims(license: LicenseRecord): { upd?: number; ent?: FeatureMap } {
  return {
    ...(license.updatesUntil != null ? { upd: Math.floor(license.updatesUntil / 1000) } : {}),
    ...(license.features?.length ? { ent: featureMap(license.features) } : {}),
  };
}
