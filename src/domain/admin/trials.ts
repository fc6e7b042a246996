import { type Static, Type } from "@sinclair/typebox";
import type { TrialCounts } from "../../store/trial-types";
import { trialView, type TrialView } from "../trials";
import { decodeCursor, encodeCursor } from "./cursor";
import { requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { auditRead } from "./read-audit";
import { closed, Cursor, Limit, pageSize } from "./model";

/** A page of trials, as a query string carries it. */
export const TrialQuery = closed({ cursor: Type.Optional(Cursor), limit: Type.Optional(Limit(200, 50)) });
export type TrialQuery = Static<typeof TrialQuery>;

const isTrialPosition = (p: unknown): p is { started: number; deviceHash: string } =>
  typeof p === "object" &&
  p !== null &&
  Number.isSafeInteger((p as { started: unknown }).started) &&
  typeof (p as { deviceHash: unknown }).deviceHash === "string";

/**
 * Trials, newest first, with how many were started and converted (scope licenses:read). The
 * device hash keys them in the records but is not shown: the trial's licence names it.
 */
export async function listTrials(
  d: AdminDeps,
  caller: AdminCaller,
  input: TrialQuery,
): Promise<{ trials: TrialView[]; counts: TrialCounts; next: string | null }> {
  requireScope(caller.principal, "licenses:read");
  const limit = pageSize(input.limit, 50, 200);
  const after = decodeCursor(input.cursor, {}, isTrialPosition);
  const rows = await d.store.listTrials({ after, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const licenses = await Promise.all(page.map((t) => d.store.getLicense(t.licenseId)));
  await auditRead(d, caller, "trial-list");
  const last = page.at(-1);
  return {
    trials: page.map((t, i) => trialView(t, licenses[i] ?? null)),
    counts: await d.store.trialCounts(),
    next: rows.length > limit && last ? encodeCursor({}, { started: last.started, deviceHash: last.deviceHash }) : null,
  };
}
