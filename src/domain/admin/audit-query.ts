import type { AuditRecord } from "../../store/types";
import { isoTime } from "../clock";
import { decodeCursor, encodeCursor } from "./cursor";
import { requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { auditRead } from "./read-audit";
import { idParam, isoDate, pageLimit, readObject } from "./input";

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

const isPosition = (p: unknown): p is { time: number; ref: string } =>
  typeof p === "object" && p !== null && Number.isSafeInteger((p as { time: unknown }).time) && typeof (p as { ref: unknown }).ref === "string";

/**
 * Audit lines, newest first (scope audit:read). Query: { ref?, license?, activation?, error?, since?
 * (ISO), cursor?, limit? (1-500, 100) }. `ref` finds the one line an answer's `ref` names.
 */
export async function queryAudit(d: AdminDeps, caller: AdminCaller, input: unknown): Promise<{ lines: AuditLineView[]; next: string | null }> {
  requireScope(caller.principal, "audit:read");
  const o = readObject(input ?? {}, ["ref", "license", "activation", "error", "since", "cursor", "limit"], "query");
  const ref = o.ref === undefined ? undefined : idParam(o.ref, "ref");
  const licenseId = o.license === undefined ? undefined : idParam(o.license, "license");
  const activationId = o.activation === undefined ? undefined : idParam(o.activation, "activation");
  const error = o.error === undefined ? undefined : idParam(o.error, "error", 64);
  const since = o.since === undefined ? undefined : isoDate(o.since, "since");
  const limit = pageLimit(o.limit, 100, 500);
  const bound = { ref, license: licenseId, activation: activationId, error, since };
  const after = decodeCursor(o.cursor, bound, isPosition);
  const rows = await d.store.listAudit({ ref, licenseId, activationId, error, since, after, limit: limit + 1 });
  await auditRead(d, caller, "audit-read");
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { lines: page.map(auditLineView), next: rows.length > limit && last ? encodeCursor(bound, { time: last.time, ref: last.ref }) : null };
}
