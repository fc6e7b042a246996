import { Type, type Static } from "@sinclair/typebox";
import type { BridgeEventRecord } from "../../store/types";
import { decodeCursor, encodeCursor } from "../admin/cursor";
import { requireScope, type AdminCaller, type AdminDeps } from "../admin/deps";
import { closed, Cursor, Limit, pageSize } from "../admin/model";
import { auditRead } from "../admin/read-audit";
import { isoTime } from "../clock";

/** A bridge event as the admin API and the console show it. */
export interface BridgeEventView {
  readonly provider: string;
  readonly event: string;
  readonly type: string;
  readonly received: string;
  readonly outcome: "applied" | "ignored";
  readonly detail: string;
  readonly license: string | null;
  /** How many times the provider sent it again after it was handled. */
  readonly replays: number;
}

export const BridgeEventQuery = closed({ cursor: Type.Optional(Cursor), limit: Type.Optional(Limit(200, 50)) });
export type BridgeEventQuery = Static<typeof BridgeEventQuery>;

const view = (e: BridgeEventRecord): BridgeEventView => ({
  provider: e.provider,
  event: e.eventId,
  type: e.type,
  received: isoTime(e.received),
  outcome: e.outcome,
  detail: e.detail,
  license: e.licenseId,
  replays: e.replays ?? 0,
});

type Position = { received: number; provider: string; eventId: string };
const isPosition = (p: unknown): p is Position =>
  typeof p === "object" &&
  p !== null &&
  Number.isSafeInteger((p as Position).received) &&
  typeof (p as Position).provider === "string" &&
  typeof (p as Position).eventId === "string";

/** The events the commerce bridges received, newest first, with what came of each (scope licenses:read). */
export async function listBridgeEvents(
  d: AdminDeps,
  caller: AdminCaller,
  input: BridgeEventQuery,
): Promise<{ events: BridgeEventView[]; next: string | null }> {
  requireScope(caller.principal, "licenses:read");
  const limit = pageSize(input.limit, 50, 200);
  const before = decodeCursor(input.cursor, {}, isPosition);
  const rows = await d.store.listBridgeEvents({ before, limit: limit + 1 });
  await auditRead(d, caller, "bridge-event-list");
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    events: page.map(view),
    next: rows.length > limit && last ? encodeCursor({}, { received: last.received, provider: last.provider, eventId: last.eventId }) : null,
  };
}
