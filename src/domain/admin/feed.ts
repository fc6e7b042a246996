import { Type, type Static } from "@sinclair/typebox";
import { KeyturnError } from "../errors";
import { licenseKeyRole, type LicenseKeyRole } from "../keys";
import { FEED_TYPES } from "../events";
import { requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { feedItem, type FeedItem } from "./feed-items";
import { readSnapshotPlace, snapshotPage } from "./feed-snapshot";
import { auditRead } from "./read-audit";
import { closed, Limit, pageSize } from "./model";

export type { FeedItem } from "./feed-items";

/**
 * The vendor feed (scope feed:read), what mirrors follow (docs/admin-api.md).
 *
 * Every answer names the records' epoch (FeedPosition); a cursor is `<epoch>.<seq>`. Asked after a
 * cursor of these records, the feed answers the events after it (mode `events`). Asked with no
 * cursor, or one it cannot continue (another epoch: the records were copied or restored; a seq
 * beyond the newest: an older backup; a seq retention has since pruned past), it answers a
 * snapshot (mode `snapshot`): the state a mirror needs, paged with `snapshot=<next>`, whose last
 * page gives the cursor the events go on from. Items hold ids, times and controls only.
 */
export type FeedAnswer = (EventsAnswer | SnapshotAnswer) & { readonly site: FeedSite };

/** The vendor's site as mirrors follow it: its lanes and its license public keys (docs/admin-api.md "The vendor feed"). */
export interface FeedSite {
  readonly channels: readonly string[];
  readonly platforms: readonly string[];
  /** `role` only when a key signs (a site with public keys only has none). */
  readonly keys: readonly { readonly kid: string; readonly spki: string; readonly role?: LicenseKeyRole }[];
}

function feedSite(d: AdminDeps): FeedSite {
  const signing = d.keys?.signing?.kid ?? null;
  const keys = [...(d.keys?.verify.values() ?? [])]
    .filter((k) => k.purpose === "license")
    .sort((a, b) => (a.kid < b.kid ? -1 : 1))
    .map((k) => ({ kid: k.kid, spki: k.spki, ...(signing !== null ? { role: licenseKeyRole(k.kid, signing) } : {}) }));
  return { channels: d.variant.channels, platforms: d.variant.platforms, keys };
}

export interface EventsAnswer {
  readonly mode: "events";
  readonly epoch: string;
  readonly events: FeedItem[];
  readonly cursor: string;
}

export type SnapshotReason = "start" | "epoch" | "ahead" | "gap";

export interface SnapshotAnswer {
  readonly mode: "snapshot";
  readonly epoch: string;
  readonly reason: SnapshotReason;
  /** Activations deactivated (with their license, unless a revocation of it stands for them) and licenses revoked whose tokens have not all expired. */
  readonly revocations: { kind: "activation" | "license"; id: string; tokensValidUntil: string; license?: string }[];
  /** Licenses whose expiry comes before the exp of tokens issued to them. */
  readonly expiries: { license: string; expires: string }[];
  /** Releases halted or withdrawn, or once halted (their ramp runs late by haltedMs). */
  readonly releases: { lane: string; version: string; halted: string | null; haltedMs: number; withdrawn: string | null; rule?: string }[];
  /** Pass as `snapshot` for the next page; null on the last. */
  readonly next: string | null;
  /** Where the events go on once the last page is applied. */
  readonly cursor: string;
}

/** `<epoch>.<seq>`, or a bare seq (a cursor from before epochs: answered with a snapshot). */
const CURSOR = /^(?:([0-9a-z]{1,64})\.)?(0|[1-9]\d{0,18})$/;

/** What a mirror asks the feed, as a query string carries it. */
export const FeedQuery = closed({
  after: Type.Optional(
    Type.String({
      maxLength: 100,
      pattern: "^([0-9a-z]{1,64}[.])?(0|[1-9][0-9]{0,18})$",
      description: "The cursor (epoch.seq) a previous answer gave; absent: a snapshot",
    }),
  ),
  snapshot: Type.Optional(Type.String({ maxLength: 2000, pattern: "^[A-Za-z0-9_-]+$", description: "The next of a snapshot page" })),
  limit: Type.Optional(Limit(1000, 500)),
});
export type FeedQuery = Static<typeof FeedQuery>;

export async function readFeed(d: AdminDeps, caller: AdminCaller, input: FeedQuery): Promise<FeedAnswer> {
  requireScope(caller.principal, "feed:read");
  const answer = await answerFeed(d, input);
  await auditRead(d, caller, "feed-read");
  return { ...answer, site: feedSite(d) };
}

async function answerFeed(d: AdminDeps, o: FeedQuery): Promise<EventsAnswer | SnapshotAnswer> {
  const limit = pageSize(o.limit, 500, 1000);
  if (o.after !== undefined && o.snapshot !== undefined) throw new KeyturnError("invalid_request", "Give after or snapshot, not both.");
  const position = await d.store.feedPosition();
  const fromStart = { section: "activations", key: null, seq: position.newest } as const;
  if (o.snapshot !== undefined) {
    const place = readSnapshotPlace(o.snapshot);
    // A snapshot begun on other records starts again on these.
    if (place.epoch !== position.epoch) return snapshotPage(d, position, "epoch", fromStart, limit);
    return snapshotPage(d, position, place.reason, place, limit);
  }
  if (o.after === undefined) return snapshotPage(d, position, "start", fromStart, limit);
  const m = CURSOR.exec(o.after);
  if (!m || BigInt(m[2]!) > 2n ** 63n - 1n) throw new KeyturnError("invalid_request", "after must be a cursor this feed answered (epoch.seq).");
  const seq = BigInt(m[2]!);
  const reason: SnapshotReason | null = m[1] !== position.epoch ? "epoch" : seq > position.newest ? "ahead" : seq < position.prunedThrough ? "gap" : null;
  if (reason) return snapshotPage(d, position, reason, fromStart, limit);
  const events = await d.store.listEvents({ after: seq, limit, types: FEED_TYPES });
  const last = events.length ? BigInt(events.at(-1)!.seq) : seq;
  // A page short of the limit holds every feed event up to the newest seq read before it (seq order
  // is commit order): the cursor moves there, past events the feed does not carry, so a mirror that
  // keeps up never falls behind retention's watermark.
  const through = events.length < limit && position.newest > last ? position.newest : last;
  return { mode: "events", epoch: position.epoch, events: events.map(feedItem), cursor: `${position.epoch}.${through}` };
}
