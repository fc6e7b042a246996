import { KeyturnClientError } from "./errors.js";

/** What became of installing a release: installed; failed (the installer did not finish); rolled-back (installed, then undone). */
export type InstallOutcome = "installed" | "failed" | "rolled-back";

export interface InstallReport {
  /** The version the installation ran before. */
  readonly from: string;
  /** The version of the release it installed (or tried to). */
  readonly to: string;
  readonly outcome: InstallOutcome;
  /** A short code of the program's own (an exit code, an error name): 1–40 of A–Z a–z 0–9 _ . : - , starting with a letter or digit. */
  readonly code?: string;
}

const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/;
const CODE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,39}$/;
const OUTCOMES: readonly string[] = ["installed", "failed", "rolled-back"];

/**
 * The body of POST /updates/report for `report`, checked as the site checks it (the same limits),
 * so a report the site would refuse is refused here first (invalid_request, `reason` naming the
 * field); docs/clients/vectors/install-reports.json holds the cases.
 */
export function installReportBody(report: InstallReport): { from: string; to: string; outcome: InstallOutcome; code?: string } {
  const bad = (field: string, text: string) => new KeyturnClientError("invalid_request", `The report's ${field} ${text}.`, { reason: field });
  if (typeof report.from !== "string" || !VERSION.test(report.from)) throw bad("from", "must be a version like 1.4.2");
  if (typeof report.to !== "string" || !VERSION.test(report.to)) throw bad("to", "must be a version like 1.4.2");
  if (!OUTCOMES.includes(report.outcome)) throw bad("outcome", "must be installed, failed or rolled-back");
  if (report.code !== undefined && (typeof report.code !== "string" || !CODE.test(report.code)))
    throw bad("code", "must be 1 to 40 letters, digits or _ . : - (starting with a letter or digit)");
  return { from: report.from, to: report.to, outcome: report.outcome, ...(report.code !== undefined ? { code: report.code } : {}) };
}
