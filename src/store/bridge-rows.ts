import { num, numOrNull, type Row } from "./rows";
import type { BridgeEventRecord } from "./types";

/** A bridge_events row (migration 18) as a record, in either dialect. */
export function bridgeEventFromRow(r: Row): BridgeEventRecord {
  return {
    provider: r.provider,
    eventId: r.event_id,
    type: r.type,
    received: num(r.received),
    outcome: r.outcome === "applied" ? "applied" : "ignored",
    detail: r.detail,
    licenseId: r.license_id ?? null,
    replays: numOrNull(r.replays) ?? 0,
  };
}

/** The columns of a new bridge_events row. */
export function bridgeEventParams(e: BridgeEventRecord) {
  return {
    provider: e.provider,
    event_id: e.eventId,
    type: e.type,
    received: e.received,
    outcome: e.outcome,
    detail: e.detail,
    license_id: e.licenseId,
  };
}
