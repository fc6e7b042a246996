/**
 * The records of trials without a key (migration 16), as the Store interface (types.ts) offers
 * them. What a trial licence is, and when it converts, is the domain's (src/domain/trials.ts).
 */
import type { MeterSet } from "./meter-types";
import type { ActivationRecord, AuditRecord, LicenseRecord, NewEvent } from "./types";

/** A device's trial: the licence the site made for it, and whether a bought key replaced it. */
export interface TrialRecord {
  readonly deviceHash: string;
  readonly licenseId: string;
  readonly started: number;
  readonly converted: number | null;
  /** The bought licence activated on the device. */
  readonly convertedTo: string | null;
}

/** What a new trial writes with its licence. */
export interface TrialJournal {
  readonly audit?: AuditRecord;
  readonly event?: NewEvent;
  readonly meters?: MeterSet;
}

export type StartTrialResult = { readonly outcome: "started" | "existing"; readonly trial: TrialRecord };

/** What a conversion writes with it, given the trial, its licence as ended, and the installations whose trial seat ended. */
export type ConversionJournal = (
  trial: TrialRecord,
  license: LicenseRecord,
  ended: readonly ActivationRecord[],
) => {
  readonly audit?: AuditRecord;
  readonly events: readonly NewEvent[];
};

export interface TrialQuery {
  /** Keyset pagination: only trials after this one in the order (started descending, device hash). */
  readonly after?: { readonly started: number; readonly deviceHash: string };
  readonly limit: number;
}

export interface TrialCounts {
  readonly started: number;
  readonly converted: number;
}

export interface TrialStore {
  /**
   * The device's trial: the one recorded, or `trial` with `license` created (and the journal
   * written) in one transaction. Racing starts for one device: one creates, the others find it.
   */
  startTrial(trial: TrialRecord, license: LicenseRecord, journal: TrialJournal): Promise<StartTrialResult>;
  /**
   * Marks the device's unconverted trial converted to `toLicenseId`, ends its licence at `now`
   * (expires no later than now) and deactivates its active installations, in one transaction;
   * null when the device has no unconverted trial.
   */
  convertTrial(deviceHash: string, toLicenseId: string, now: number, journal: ConversionJournal): Promise<TrialRecord | null>;
  getTrialOfLicense(licenseId: string): Promise<TrialRecord | null>;
  /** The device's trial, converted or not; null when it never had one. */
  findTrial(deviceHash: string): Promise<TrialRecord | null>;
  listTrials(query: TrialQuery): Promise<TrialRecord[]>;
  trialCounts(): Promise<TrialCounts>;
}
