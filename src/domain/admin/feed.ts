import type { EventRecord, FeedPosition, ReleaseControlRecord } from "../../store/types";
import { isoTime } from "../clock";
import { KeyturnError } from "../errors";
import { FEED_TYPES } from "../events";
import { requireScope, type AdminCaller, type AdminDeps } from "./deps";
import { pageLimit, readObject } from "./input";

/**
 * The vendor feed (scope feed:read), what mirrors follow (design.md "Mirror mode", docs/admin-api.md).
 *
 * Every answer names the records' epoch (FeedPosition); a cursor is `<epoch>.<seq>`. Asked after a
 * cursor of these records, the feed answers the events after it (mode `events`). Asked with no
 * cursor, or one it cannot continue (another epoch: the records were copied or restored; a seq
 * beyond the newest: an older backup; a seq retention has since pruned past), it answers a
 * snapshot (mode `snapshot`): the state a mirror needs, paged with `snapshot=<next>`, whose last
 * page gives the cursor the events go on from. Items hold ids, times and controls only.
 */
export type FeedAnswer = EventsAnswer | SnapshotAnswer;

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
  /** Activations deactivated and licenses revoked whose tokens have not all expired. */
  readonly revocations: { kind: "activation" | "license"; id: string; tokensValidUntil: string }[];
  /** Licenses whose expiry comes before the exp of tokens issued to them. */
  readonly expiries: { license: string; expires: string }[];
  /** Releases halted or withdrawn, or once halted (their ramp runs late by haltedMs). */
  readonly releases: { lane: string; version: string; halted: string | null; haltedMs: number; withdrawn: string | null }[];
  /** Pass as `snapshot` for the next page; null on the last. */
  readonly next: string | null;
  /** Where the events go on once the last page is applied. */
  readonly cursor: string;
}

export interface FeedItem {
  readonly id: string;
  readonly seq: string;
  readonly type: string;
  readonly timestamp: string;
  readonly data: unknown;
}

const SEQ = /^(0|[1-9]\d{0,18})$/;
/** `<epoch>.<seq>`, or a bare seq (a cursor from before epochs: answered with a snapshot). */
const CURSOR = /^(?:([0-9a-z]{1,64})\.)?(0|[1-9]\d{0,18})$/;
const SECTIONS = ["activations", "licenses", "expiries", "releases"] as const;
type Section = (typeof SECTIONS)[number];

export async function readFeed(d: AdminDeps, caller: AdminCaller, input: unknown): Promise<FeedAnswer> {
  requireScope(caller.principal, "feed:read");
  const o = readObject(input ?? {}, ["after", "snapshot", "limit"], "query");
  const limit = pageLimit(o.limit, 500, 1000);
  if (o.after !== undefined && o.snapshot !== undefined) throw new KeyturnError("invalid_request", "give after or snapshot, not both");
  const position = await d.store.feedPosition();
  if (o.snapshot !== undefined) {
    const place = readSnapshotPlace(o.snapshot);
    // A snapshot begun on other records starts again on these.
    if (place.epoch !== position.epoch) return snapshotPage(d, position, "epoch", { section: "activations", key: null, seq: position.newest }, limit);
    return snapshotPage(d, position, place.reason, place, limit);
  }
  if (o.after === undefined) return snapshotPage(d, position, "start", { section: "activations", key: null, seq: position.newest }, limit);
  const m = typeof o.after === "string" ? CURSOR.exec(o.after) : null;
  if (!m || BigInt(m[2]!) > 2n ** 63n - 1n) throw new KeyturnError("invalid_request", "after must be a cursor this feed answered (epoch.seq)");
  const seq = BigInt(m[2]!);
  const reason: SnapshotReason | null =
    m[1] !== position.epoch ? "epoch" : seq > position.newest ? "ahead" : seq < position.prunedThrough ? "gap" : null;
  if (reason) return snapshotPage(d, position, reason, { section: "activations", key: null, seq: position.newest }, limit);
  const events = await d.store.listEvents({ after: seq, limit, types: FEED_TYPES });
  const last = events.length ? BigInt(events.at(-1)!.seq) : seq;
  // A page short of the limit holds every feed event up to the newest seq read before it (seq order
  // is commit order): the cursor moves there, past events the feed does not carry, so a mirror that
  // keeps up never falls behind retention's watermark.
  const through = events.length < limit && position.newest > last ? position.newest : last;
  return { mode: "events", epoch: position.epoch, events: events.map(feedItem), cursor: `${position.epoch}.${through}` };
}

interface SnapshotPlace {
  readonly section: Section;
  /** The last id (releases: lane and version) answered in the section; null at its start. */
  readonly key: string | null;
  /** The newest seq when the snapshot began: the events after it replay what changed since. */
  readonly seq: bigint;
}

async function snapshotPage(d: AdminDeps, position: FeedPosition, reason: SnapshotReason, from: SnapshotPlace, limit: number): Promise<SnapshotAnswer> {
  const now = d.clock();
  const answer: SnapshotAnswer = {
    mode: "snapshot",
    epoch: position.epoch,
    reason,
    revocations: [],
    expiries: [],
    releases: [],
    next: null,
    cursor: `${position.epoch}.${from.seq}`,
  };
  let left = limit;
  let section: Section | null = from.section;
  let key = from.key;
  while (section !== null && left > 0) {
    const rows = section === "releases" ? releaseRows(await d.store.listReleaseControls(), key, left) : await stateRows(d, section, now, key, left);
    for (const row of rows.items) {
      if (section === "activations" || section === "licenses")
        answer.revocations.push({ kind: section === "activations" ? "activation" : "license", id: row.id, tokensValidUntil: isoTime(row.until!) });
      else if (section === "expiries") answer.expiries.push({ license: row.id, expires: isoTime(row.until!) });
      else answer.releases.push(row.release!);
    }
    left -= rows.items.length;
    if (rows.items.length > 0) key = rows.items.at(-1)!.id;
    if (rows.more) break;
    const i = SECTIONS.indexOf(section);
    section = i + 1 < SECTIONS.length ? SECTIONS[i + 1]! : null;
    key = null;
  }
  if (section !== null) return { ...answer, next: writeSnapshotPlace(position.epoch, reason, { section, key, seq: from.seq }) };
  return answer;
}

interface Row {
  readonly id: string;
  readonly until?: number;
  readonly release?: SnapshotAnswer["releases"][number];
}

async function stateRows(d: AdminDeps, section: Exclude<Section, "releases">, now: number, after: string | null, limit: number) {
  const rows = await d.store.listFeedState({ section, now, after, limit: limit + 1, fallbackTtlMs: d.tokenTtlSeconds * 1000 });
  return { items: rows.slice(0, limit) as Row[], more: rows.length > limit };
}

/** Releases with a control that still matters, by lane then version (their key: "lane\nversion"). */
function releaseRows(controls: readonly ReleaseControlRecord[], after: string | null, limit: number) {
  const rows = controls
    .filter((c) => c.halted !== null || c.withdrawn !== null || c.haltedMs > 0)
    .map((c) => ({
      id: `${c.lane}\n${c.version}`,
      release: {
        lane: c.lane,
        version: c.version,
        halted: c.halted === null ? null : isoTime(c.halted),
        haltedMs: c.haltedMs,
        withdrawn: c.withdrawn === null ? null : isoTime(c.withdrawn),
      },
    }))
    .filter((r) => after === null || r.id > after)
    .sort((a, b) => (a.id < b.id ? -1 : 1));
  return { items: rows.slice(0, limit) as Row[], more: rows.length > limit };
}

/** The `snapshot` token: where the next page starts, opaque to mirrors (base64url of JSON). */
function writeSnapshotPlace(epoch: string, reason: SnapshotReason, p: SnapshotPlace): string {
  return Buffer.from(JSON.stringify({ e: epoch, r: reason, s: p.section, k: p.key, q: String(p.seq) })).toString("base64url");
}

function readSnapshotPlace(value: unknown): SnapshotPlace & { epoch: string; reason: SnapshotReason } {
  const bad = () => new KeyturnError("invalid_request", "snapshot must be the next a snapshot page answered");
  if (typeof value !== "string" || value.length > 2000 || !/^[A-Za-z0-9_-]+$/.test(value)) throw bad();
  let p: { e?: unknown; r?: unknown; s?: unknown; k?: unknown; q?: unknown };
  try {
    p = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
  } catch {
    throw bad();
  }
  if (
    typeof p !== "object" || p === null ||
    typeof p.e !== "string" ||
    !["start", "epoch", "ahead", "gap"].includes(p.r as string) ||
    !SECTIONS.includes(p.s as Section) ||
    !(p.k === null || (typeof p.k === "string" && p.k.length <= 700)) ||
    typeof p.q !== "string" || !SEQ.test(p.q)
  )
    throw bad();
  return { epoch: p.e, reason: p.r as SnapshotReason, section: p.s as Section, key: p.k as string | null, seq: BigInt(p.q) };
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
