import { Type, type Static } from "@sinclair/typebox";
import type { AuditRecord } from "../../store/types";
import { isoTime } from "../clock";
import { decodeCursor, encodeCursor } from "./cursor";
import { requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { auditRead } from "./read-audit";
import { closed, Cursor, IdText, Limit, pageSize, timeOf, TimeInput } from "./model";

export interface AuditLineView {
  readonly ref: string;
  readonly time: string;
  readonly action: string;
  readonly outcome: "ok" | "refused";
  readonly error: string | null;
  readonly license: string | null;
  readonly activation: string | null;
  readonly address: string | null;
  readonly actor: string | null;
}

export function auditLineView(a: AuditRecord): AuditLineView {
  return {
    ref: a.ref,
    time: isoTime(a.time),
    action: a.action,
    outcome: a.outcome,
    error: a.error,
    license: a.licenseId,
    activation: a.activationId,
    address: a.address,
    actor: a.actor ?? null,
  };
}

/** A filter of the audit trail, as a query string carries it. */
export const AuditQuery = closed({
  ref: Type.Optional(IdText(100, "The ref an answer gave (ref_…): its one audit line")),
  license: Type.Optional(IdText(100)),
  activation: Type.Optional(IdText(100)),
  error: Type.Optional(IdText(64)),
  since: Type.Optional(TimeInput),
  cursor: Type.Optional(Cursor),
  limit: Type.Optional(Limit(500, 100)),
});
export type AuditQuery = Static<typeof AuditQuery>;

const isPosition = (p: unknown): p is { time: number; ref: string } =>
  typeof p === "object" && p !== null && Number.isSafeInteger((p as { time: unknown }).time) && typeof (p as { ref: unknown }).ref === "string";

/**
 * Audit lines, newest first (scope audit:read). Query: { ref?, license?, activation?, error?, since?
 * (ISO), cursor?, limit? (1-500, 100) }. `ref` finds the one line an answer's `ref` names.
 */
export async function queryAudit(d: AdminDeps, caller: AdminCaller, input: AuditQuery): Promise<{ lines: AuditLineView[]; next: string | null }> {
  requireScope(caller.principal, "audit:read");
  const ref = input.ref?.trim();
  const licenseId = input.license?.trim();
  const activationId = input.activation?.trim();
  const error = input.error?.trim();
  const since = input.since === undefined ? undefined : timeOf(input.since)!;
  const limit = pageSize(input.limit, 100, 500);
  const bound = { ref, license: licenseId, activation: activationId, error, since };
  const after = decodeCursor(input.cursor, bound, isPosition);
  const rows = await d.store.listAudit({ ref, licenseId, activationId, error, since, after, limit: limit + 1 });
  await auditRead(d, caller, "audit-read");
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { lines: page.map(auditLineView), next: rows.length > limit && last ? encodeCursor(bound, { time: last.time, ref: last.ref }) : null };
}
