import type { IdentityConfig } from "../../config/config";
import type { Logger } from "../../config/log";
import type { Variant } from "../../config/variants";
import type { LicenseRecord, Store } from "../../store/types";
import type { RequestContext } from "../audit";
import type { Clock } from "../clock";
import { type Static, Type } from "@sinclair/typebox";
import { checkDevice, DeviceModel } from "../device";
import { KeyturnError } from "../errors";
import type { ActivationAnswer, Licensing } from "../licensing";
import { Challenges, type Challenge } from "./challenges";
import { ID_TOKEN_TOLERANCE_SECONDS, invalid, verifyIdToken, type IdTokenClaims } from "./id-token";
import { IssuerKeys } from "./issuer-keys";
import { requireAllowedGroup, requireRecentAuthentication, requireSecondFactor } from "./sign-in-rules";

/** POST /auth/identity/challenge's body. */
export const ChallengeModel = Type.Object({ device: DeviceModel });
/** POST /auth/identity/exchange's body: the issuer's ID token and the device it signs in. */
export const ExchangeModel = Type.Object({ id_token: Type.String({ maxLength: 16384 }), device: DeviceModel });

export interface StaffSignInDeps {
  readonly variant: Variant;
  /** null when staff sign-in is off. */
  readonly identity: IdentityConfig | null;
  readonly staffOrganization: string;
  readonly staffSeats: number;
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  readonly licensing: Licensing;
}

/** The spec's staff sign-in information (GET /auth/identity). */
export interface StaffSignInInfo {
  readonly enabled: boolean;
  readonly issuer: string | null;
  readonly clientId: string | null;
  readonly scopes: readonly string[];
  /** Seconds; the program sends it to the issuer as max_age. null when staff sign-in is off. */
  readonly maxAge: number | null;
}

const MAX_NAME = 200;

/** Staff sign-in: a challenge, then an ID token from the issuer exchanged for a staff entitlement. */
export class StaffSignIn {
  private readonly challenges: Challenges;
  private readonly keys: IssuerKeys | null;

  constructor(private readonly deps: StaffSignInDeps) {
    this.challenges = new Challenges(deps.variant, deps.store, deps.clock);
    this.keys = deps.identity ? new IssuerKeys(deps.identity.issuer, deps.clock, deps.log) : null;
  }

  info(): StaffSignInInfo {
    const id = this.deps.identity;
    return id
      ? { enabled: true, issuer: id.issuer, clientId: id.clientId, scopes: id.scopes, maxAge: id.maxAgeSeconds }
      : { enabled: false, issuer: null, clientId: null, scopes: [], maxAge: null };
  }

  /** Throws identity_disabled unless issuer, client id and groups are configured. */
  requireEnabled(): IdentityConfig {
    this.deps.licensing.requireRecords();
    if (!this.deps.identity) throw new KeyturnError("identity_disabled", "Staff sign-in is not switched on.");
    return this.deps.identity;
  }

  async challenge(input: Static<typeof ChallengeModel>): Promise<Challenge> {
    this.requireEnabled();
    return this.challenges.issue(checkDevice(this.deps.variant, input.device));
  }

  /**
   * Checks the ID token in docs/architecture.md's order, then takes a seat of the person's staff license.
   * The nonce is checked where that order puts it, but used up only once every check has passed,
   * so a refused token does not cost the installation its sign-in (a stale auth_time is the usual
   * case: the issuer kept an old session; the program signs in again with the same challenge).
   */
  async exchange(input: Static<typeof ExchangeModel>, ctx: RequestContext): Promise<ActivationAnswer> {
    const identity = this.requireEnabled();
    const idToken = input.id_token;
    const device = checkDevice(this.deps.variant, input.device);
    if (!this.deps.licensing.available) throw new KeyturnError("licensing_unavailable", "The site has no signing key configured.");

    const claims = await verifyIdToken(idToken, {
      issuer: identity.issuer,
      clientId: identity.clientId,
      keys: this.keys!,
      nowMs: this.deps.clock(),
    });
    const detail = { licenseId: staffLicenseId(claims.sub) };
    const challenge = await this.challenges.find(claims.nonce, device, detail);
    if (claims.iat < Math.floor(challenge.created / 1000) - ID_TOKEN_TOLERANCE_SECONDS) throw invalid("it was issued before its sign-in started", detail);
    requireRecentAuthentication(claims, identity.maxAgeSeconds, this.deps.clock(), detail);
    requireSecondFactor(claims, identity, detail);
    requireAllowedGroup(claims, identity, detail);
    // A second exchange of the same nonce may have passed the same checks meanwhile: only one uses it.
    await this.challenges.consume(claims.nonce, device, detail);

    const license = await this.deps.store.upsertStaffLicense(this.staffLicense(claims));
    // The audit line names the person as the console's do: `staff:<subject> (<name>)`.
    return this.deps.licensing.grantSeat(license, device, { ...ctx, actor: `${license.id} (${license.licensee})` }, "sign-in");
  }

  private staffLicense(claims: IdTokenClaims): LicenseRecord {
    return {
      id: staffLicenseId(claims.sub),
      kind: "staff",
      keyHash: null,
      licensee: ([claims.name, claims.email].find(isName) ?? claims.sub).slice(0, MAX_NAME),
      organization: this.deps.staffOrganization,
      plan: "staff",
      planTitle: "Staff",
      channels: [...this.deps.variant.channels],
      seats: this.deps.staffSeats,
      issued: this.deps.clock(),
      expires: null,
      revoked: null,
    };
  }
}

/** A staff member's seats are held by one license row per person at the issuer. */
export function staffLicenseId(sub: string): string {
  return `staff:${sub}`;
}

function isName(v: unknown): v is string {
  return typeof v === "string" && v.trim().length > 0;
}
