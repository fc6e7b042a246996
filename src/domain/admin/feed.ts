import { KeyturnError } from "../errors";
import { FEED_TYPES, feedItem } from "../events";
import { requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { auditRead } from "./read-audit";
import { pageLimit, readObject } from "./input";

/**
 * The vendor feed (scope feed:read): events after `after` (a seq as a decimal string; absent = from
 * the beginning), seq ascending, of FEED_TYPES only; `cursor` is the last seq answered, or `after`.
 */
export async function readFeed(d: AdminDeps, caller: AdminCaller, input: unknown): Promise<{ events: ReturnType<typeof feedItem>[]; cursor: string }> {
  requireScope(caller.principal, "feed:read");
  const o = readObject(input ?? {}, ["after", "limit"], "query");
  if (o.after !== undefined && (typeof o.after !== "string" || !/^(0|[1-9]\d{0,18})$/.test(o.after) || BigInt(o.after) > 2n ** 63n - 1n))
    throw new KeyturnError("invalid_request", "after must be a cursor this feed answered (a decimal number)");
  const after = o.after === undefined ? "0" : (o.after as string);
  const limit = pageLimit(o.limit, 500, 1000);
  const events = await d.store.listEvents({ after: BigInt(after), limit, types: FEED_TYPES });
  await auditRead(d, caller, "feed-read");
  return { events: events.map(feedItem), cursor: events.length ? String(events.at(-1)!.seq) : after };
}
