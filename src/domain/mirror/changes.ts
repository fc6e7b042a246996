import type { MirrorChange } from "../../store/mirror-state";
import { FeedProblem, licenseExpiry, revocationEnd, vendorTime, type FeedEvent } from "./feed-answer";

/**
 * What each event means to a mirror (its revocation semantics):
 * a deactivation refuses the activation's tokens and a revocation the license's, each until the
 * latest `exp` of those tokens (at most the longest token lifetime after the event); a
 * reinstatement lifts the license's; a changed expiry refuses the license's tokens after it;
 * release controls are applied at the vendor's time of the control (the event's timestamp), so a
 * halted ramp stands where it stands at the vendor.
 */
export function changesOf(events: readonly FeedEvent[], now: number): MirrorChange[] {
  const changes: MirrorChange[] = [];
  const time = (e: FeedEvent, field: string, text: string) => vendorTime(text, `${e.type} event (seq ${e.seq}): ${field}`, now);
  const until = (e: FeedEvent & { data: { tokensValidUntil: string } }) =>
    revocationEnd(time(e, "tokensValidUntil", e.data.tokensValidUntil), time(e, "timestamp", e.timestamp));
  for (const e of events) {
    switch (e.type) {
      case "activation.deactivated":
        changes.push({
          op: "revoke",
          kind: "activation",
          id: e.data.activation.id,
          validUntil: until(e),
          seq: e.seq,
          licenseId: e.data.activation.license ?? null,
        });
        break;
      case "license.revoked":
        changes.push({ op: "revoke", kind: "license", id: e.data.license.id, validUntil: until(e), seq: e.seq });
        break;
      case "license.reinstated":
        changes.push({ op: "lift", kind: "license", id: e.data.license.id, at: time(e, "timestamp", e.timestamp) });
        break;
      case "license.updated": {
        if (!e.data.changed.includes("expires")) break;
        const expires = e.data.license.expires;
        if (expires === undefined) throw new FeedProblem(`license.updated event (seq ${e.seq}) changed expires but does not say it`);
        changes.push({
          op: "expiry",
          licenseId: e.data.license.id,
          expires: expires === null ? null : licenseExpiry(expires, `license.updated event (seq ${e.seq}): license.expires`, now),
          seq: e.seq,
        });
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
          rule: e.data.rule ?? null,
        });
    }
  }
  return changes;
}
