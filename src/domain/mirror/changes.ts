import type { MirrorChange } from "../../store/mirror-state";
import { FeedProblem, vendorTime, type FeedEvent } from "./feed-answer";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** A license's expiry: any valid time (licenses may run for years), unlike the bounded vendor times. */
function expiryOf(e: FeedEvent, text: string): number {
  const ms = ISO.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) throw new FeedProblem(`${e.type} event (seq ${e.seq}): license.expires is not an ISO 8601 time`);
  return ms;
}

/**
 * What each event means to a mirror (its revocation semantics):
 * a deactivation refuses the activation's tokens and a revocation the license's, each until the
 * latest `exp` of those tokens; a reinstatement lifts the license's; a changed expiry refuses the
 * license's tokens after it; release controls are applied at the vendor's time of the control
 * (the event's timestamp), so a halted ramp stands where it stands at the vendor.
 */
export function changesOf(events: readonly FeedEvent[], now: number): MirrorChange[] {
  const changes: MirrorChange[] = [];
  const time = (e: FeedEvent, field: string, text: string) => vendorTime(text, `${e.type} event (seq ${e.seq}): ${field}`, now);
  for (const e of events) {
    switch (e.type) {
      case "activation.deactivated":
        changes.push({ op: "revoke", kind: "activation", id: e.data.activation.id, validUntil: time(e, "tokensValidUntil", e.data.tokensValidUntil), seq: e.seq });
        break;
      case "license.revoked":
        changes.push({ op: "revoke", kind: "license", id: e.data.license.id, validUntil: time(e, "tokensValidUntil", e.data.tokensValidUntil), seq: e.seq });
        break;
      case "license.reinstated":
        changes.push({ op: "lift", kind: "license", id: e.data.license.id });
        break;
      case "license.updated": {
        if (!e.data.changed.includes("expires")) break;
        const expires = e.data.license.expires;
        if (expires === undefined) throw new FeedProblem(`license.updated event (seq ${e.seq}) changed expires but does not say it`);
        changes.push({ op: "expiry", licenseId: e.data.license.id, expires: expires === null ? null : expiryOf(e, expires), seq: e.seq });
        break;
      }
      default:
        changes.push({
          op: "release",
          lane: e.data.release.lane,
          version: e.data.release.version,
          state: e.type.slice("release.".length),
          share: e.data.share ?? null,
          time: time(e, "timestamp", e.timestamp),
          seq: e.seq,
        });
    }
  }
  return changes;
}
