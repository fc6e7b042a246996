import type { EventRecord } from "../../store/types";
import { isoTime } from "../clock";

export interface FeedItem {
  readonly id: string;
  readonly seq: string;
  readonly type: string;
  readonly timestamp: string;
  readonly data: unknown;
}

/**
 * A feed item: the event's envelope with only what a mirror acts on (ids, times, controls). The
 * records' events carry more (licensee, e-mail, metadata, device names: webhooks get those); a
 * feed:read token never sees them.
 */
export function feedItem(e: EventRecord): FeedItem {
  return { id: e.id, seq: String(e.seq), type: e.type, timestamp: isoTime(e.time), data: feedData(e.type, JSON.parse(e.data)) };
}

type Data = Record<string, any>;

function feedData(type: string, data: Data): Data {
  switch (type) {
    case "activation.deactivated":
      return { activation: { id: data.activation?.id, license: data.activation?.license }, tokensValidUntil: data.tokensValidUntil };
    case "license.revoked":
      return { license: { id: data.license?.id, expires: data.license?.expires ?? null }, tokensValidUntil: data.tokensValidUntil };
    case "license.reinstated":
      return { license: { id: data.license?.id } };
    case "license.updated":
      return { license: { id: data.license?.id, expires: data.license?.expires ?? null }, changed: data.changed };
    default:
      return { release: { lane: data.release?.lane, version: data.release?.version }, share: data.share ?? null };
  }
}
