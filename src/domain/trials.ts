import { Type } from "@sinclair/typebox";
import type { TrialConfig } from "../config/trial";
import type { Variant } from "../config/variants";
import { ConfigError } from "../config/parse";
import type { MeterDefinition } from "../store/meter-types";
import type { TrialRecord } from "../store/trial-types";
import type { LicenseRecord, Store } from "../store/types";
import type { Audit, RequestContext } from "./audit";
import { isoTime, type Clock } from "./clock";
import { checkDevice, DeviceModel, type Device } from "./device";
import { KeyturnError } from "./errors";
import { activationView, licenseView, newEvent, revocationTtl, tokensValidUntil } from "./events";
import { newId } from "./ids";
import { generateLicenseKey, hashLicenseKey } from "./license-key";
import type { ActivationAnswer, Licensing } from "./licensing";
import { planFields } from "./plans";
import { Email } from "./admin/model";
import { decode } from "./decode";
import { meterDefinitions, MetersInput, parseMeterOption } from "./meters";
import { parseSeatLease } from "./seat-lease";
import { TRIAL_MARK } from "./trial-mark";

/**
 * Trials without a key (docs/trials-and-meters.md, "How to run a trial"): a device that asks gets a
 * licence the site makes for it from the trial plan (--trial-plan), lasting --trial-length, once
 * per device hash. Its token is a spec token (kind license). Activating a bought key on the same
 * device ends the trial's seat and counts a conversion (TrialConversion).
 */

/**
 * POST /trials/start's body. `email`, when the program asks the person for it, is where the trial's
 * end is announced (the trial-ending mail, docs/mail.md); a trial is never reached by it otherwise.
 */
export const TrialStartModel = Type.Object({ device: DeviceModel, email: Type.Optional(Email) }, { additionalProperties: false });

/** The licensee a trial licence shows in the admin API and console (its key is never shown to anyone). */
const TRIAL_LICENSEE = "Trial";
const NAME_MAX = 200;

export interface TrialView {
  readonly license: string;
  readonly started: string;
  /** When the trial ends (its licence's expiry). */
  readonly ends: string | null;
  readonly converted: string | null;
  /** The bought licence activated on the device. */
  readonly convertedTo: string | null;
}

export function trialView(t: TrialRecord, license: Pick<LicenseRecord, "expires"> | null): TrialView {
  return {
    license: t.licenseId,
    started: isoTime(t.started),
    ends: license?.expires == null ? null : isoTime(license.expires),
    converted: t.converted === null ? null : isoTime(t.converted),
    convertedTo: t.convertedTo,
  };
}

export interface TrialsDeps {
  readonly variant: Variant;
  readonly store: Store;
  readonly clock: Clock;
  readonly audit: Audit;
  readonly licensing: Licensing;
  /** null: trials are off. */
  readonly trial: TrialConfig | null;
}

export class Trials {
  /** --trial-meters, as every trial licence gets them. */
  private readonly meters: readonly MeterDefinition[];

  constructor(private readonly deps: TrialsDeps) {
    this.meters = trialMeters(deps.trial);
  }

  get enabled(): boolean {
    return this.deps.trial !== null;
  }

  /** Refuses when this site gives no trials (not configured, or a mirror: the vendor's site gives them). */
  requireEnabled(): TrialConfig {
    this.deps.licensing.requireRecords();
    if (!this.deps.trial) throw new KeyturnError("not_found", "This site offers no trials: activate a licence key.");
    return this.deps.trial;
  }

  /**
   * The device's trial, answered like an activation: made on the first start, found on every later
   * one (never a second trial for the same device hash). A trial that ended (its length ran out, or
   * a bought key was activated on the device) is refused license_expired.
   */
  async start(input: { device: Parameters<typeof checkDevice>[1]; email?: string }, ctx: RequestContext): Promise<ActivationAnswer> {
    const trial = this.requireEnabled();
    const device = checkDevice(this.deps.variant, input.device);
    const now = this.deps.clock();
    const made = this.trialLicense(trial, device, now, input.email ?? null);
    const result = await this.deps.store.startTrial({ deviceHash: device.hash, licenseId: made.id, started: now, converted: null, convertedTo: null }, made, {
      audit: { ...this.deps.audit.okLine("trial-start", ctx, made.id), activationId: null },
      ...(this.meters.length > 0 ? { meters: { licenseId: made.id, meters: this.meters, now } } : {}),
      event: newEvent("trial.started", { license: licenseView(made, 0), trial: trialView(blankTrial(device.hash, made.id, now), made) }, now),
    });
    const license = result.outcome === "started" ? made : await this.deps.store.getLicense(result.trial.licenseId);
    if (!license) throw new KeyturnError("internal_error", "The trial's licence is missing from the records.");
    const ids = { licenseId: license.id };
    if (result.trial.converted !== null)
      throw new KeyturnError(
        "license_expired",
        `The trial on this device ended on ${isoTime(result.trial.converted)}, when a licence was activated on it.`,
        ids,
      );
    if (license.expires !== null && license.expires <= now)
      throw new KeyturnError("license_expired", `The trial on this device ended on ${isoTime(license.expires)}.`, ids);
    return this.deps.licensing.grantSeat(license, device, ctx, "activate");
  }

  /** The licence a trial gets: the trial plan's fields but its seats, one device's worth of seats, ending after the trial's length. */
  private trialLicense(trial: TrialConfig, device: Device, now: number, email: string | null): LicenseRecord {
    const fields = planFields(trial.plan, now);
    const updatesUntil = fields.updatesUntil ? Date.parse(fields.updatesUntil) : null;
    return {
      id: newId("lic", now),
      kind: "license",
      // A key no one is ever told: the trial is reached through its device, never by a key.
      keyHash: hashLicenseKey(generateLicenseKey(this.deps.variant)),
      licensee: `${TRIAL_LICENSEE} on ${device.name}`.slice(0, NAME_MAX),
      organization: "",
      plan: trial.plan.name,
      planTitle: fields.planTitle ?? trial.plan.name,
      channels: fields.channels ?? [this.deps.variant.channels[0]!],
      // One device's installations (one per product it runs): a trial is never shared by devices.
      seats: Math.max(1, this.deps.variant.products.length),
      issued: now,
      expires: now + trial.lengthSeconds * 1000,
      revoked: null,
      email,
      metadata: { [TRIAL_MARK]: "true" },
      tokenTtl: fields.tokenTtl ?? null,
      seatLease: fields.seatLease === undefined ? null : parseSeatLease(fields.seatLease),
      ...(updatesUntil !== null ? { updatesUntil } : {}),
      ...(fields.features && fields.features.length > 0 ? { features: fields.features } : {}),
    };
  }
}

/** --trial-meters read once, at start: a malformed one stops the site from starting, naming the setting. */
function trialMeters(trial: TrialConfig | null): MeterDefinition[] {
  if (!trial?.meters) return [];
  try {
    return meterDefinitions(decode(MetersInput, parseMeterOption([trial.meters])));
  } catch (e) {
    if (e instanceof KeyturnError) throw new ConfigError("trial-meters", e.message.replace("--meter takes", "takes"));
    throw e;
  }
}

const blankTrial = (deviceHash: string, licenseId: string, started: number): TrialRecord => ({
  deviceHash,
  licenseId,
  started,
  converted: null,
  convertedTo: null,
});

export interface TrialConversionDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly audit: Audit;
  readonly tokenTtlSeconds: number;
}

/**
 * A bought key activated on a device that has an open trial: the trial's licence ends now, its
 * installations lose their seats (mirrors refuse their tokens from the feed's events), and the
 * conversion is recorded and counted.
 */
export class TrialConversion {
  constructor(private readonly deps: TrialConversionDeps) {}

  async activated(bought: LicenseRecord, deviceHash: string, ctx: RequestContext): Promise<void> {
    // A read first: most activations are of devices that never had a trial, and a read costs no write transaction.
    const open = await this.deps.store.findTrial(deviceHash);
    if (!open || open.converted !== null || open.licenseId === bought.id) return;
    const now = this.deps.clock();
    await this.deps.store.convertTrial(deviceHash, bought.id, now, (trial, license, ended) => {
      const ttl = revocationTtl(this.deps.tokenTtlSeconds, license);
      return {
        audit: { ...this.deps.audit.okLine("trial-convert", ctx, trial.licenseId), activationId: null, actor: bought.id },
        events: [
          ...ended.map((a) =>
            newEvent("activation.deactivated", { activation: activationView(a), tokensValidUntil: tokensValidUntil(now, ttl, null, a.tokenExp) }, now),
          ),
          newEvent("license.updated", { license: licenseView(license), changed: ["expires"] }, now),
          newEvent("trial.converted", { trial: trialView(trial, license), license: { id: bought.id } }, now),
        ],
      };
    });
  }
}
