import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { TypeCheck } from "@sinclair/typebox/compiler";
import { checkOf } from "../decode";

/**
 * The vendor's feed answer (docs/admin-api.md "The vendor feed") as TypeBox schemas, and the checks
 * a page must pass before a mirror applies any of it: the shape, sizes, the epoch, seqs ascending
 * past `after`, a cursor that never goes backwards, and times a vendor could mean. A page that fails
 * is refused whole.
 */
// Ids are matched against token claims, never parsed: any short text (staff licenses are `staff:<sub>`).
const id = Type.String({ minLength: 1, maxLength: 300 });
const seq = Type.String({ pattern: "^(0|[1-9][0-9]{0,18})$" });
const epoch = Type.String({ pattern: "^[0-9a-z]{1,64}$" });
const cursor = Type.String({ pattern: "^[0-9a-z]{1,64}[.](0|[1-9][0-9]{0,18})$" });
const time = Type.String({ maxLength: 40 });
const maybeTime = Type.Union([time, Type.Null()]);

/** Items one page may hold (the feed's own maximum). */
export const MAX_PAGE_ITEMS = 1000;

const LicenseRef = Type.Object({ id: id, expires: Type.Optional(maybeTime) });
const ActivationRef = Type.Object({ id: id, license: Type.Optional(id) });
const Lane = Type.String({ minLength: 1, maxLength: 300 });
const Version = Type.String({ minLength: 1, maxLength: 100 });
const Release = Type.Object({ lane: Lane, version: Version });

const LaneWord = Type.String({ minLength: 1, maxLength: 32, pattern: "^[a-z0-9]+(-[a-z0-9]+)*$" });
/** The vendor's site as its feed describes it: its lanes and its license public keys (a feed from before them sends none). */
const Site = Type.Object({
  channels: Type.Array(LaneWord, { maxItems: 16 }),
  platforms: Type.Array(LaneWord, { maxItems: 16 }),
  keys: Type.Array(
    Type.Object({
      kid: Type.String({ minLength: 1, maxLength: 64, pattern: "^[a-z0-9-]+$" }),
      spki: Type.String({ minLength: 1, maxLength: 400, pattern: "^[A-Za-z0-9+/]+={0,2}$" }),
    }),
    { maxItems: 32 },
  ),
});
export type FeedSite = Static<typeof Site>;

/** A halt's rule as the vendor words it (rollout autoHalt and its figures): one line of text. */
const HaltRule = Type.String({ minLength: 1, maxLength: 400, pattern: "^[^\\x00-\\x1f\\x7f]+$" });

const item = <T extends string, D extends TSchema>(type: T, data: D) =>
  Type.Object({ id: Type.String({ maxLength: 100 }), seq, type: Type.Literal(type), timestamp: time, data });

export const RELEASE_VERBS = ["published", "halted", "resumed", "withdrawn", "restored"] as const;
const KNOWN_TYPES = new Set<string>([
  "activation.deactivated",
  "license.revoked",
  "license.reinstated",
  "license.updated",
  ...RELEASE_VERBS.map((v) => `release.${v}`),
]);

const KnownItem = Type.Union([
  item("activation.deactivated", Type.Object({ activation: ActivationRef, tokensValidUntil: time })),
  item("license.revoked", Type.Object({ license: LicenseRef, tokensValidUntil: time })),
  item("license.reinstated", Type.Object({ license: LicenseRef })),
  item("license.updated", Type.Object({ license: LicenseRef, changed: Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 }) })),
  ...RELEASE_VERBS.map((verb) =>
    item(
      `release.${verb}`,
      Type.Object({
        release: Release,
        share: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 100 }), Type.Null()])),
        // A halt by the release's own rule (rollout autoHalt): the mirror keeps it, and serves the release as the vendor does.
        rule: Type.Optional(HaltRule),
      }),
    ),
  ),
]);
/** Any event: a type this mirror does not know is passed over (its seq still counts). */
const AnyItem = Type.Object({ id: Type.String({ maxLength: 100 }), seq, type: Type.String({ maxLength: 100 }), timestamp: time, data: Type.Unknown() });

const EventsAnswer = Type.Object({
  ok: Type.Literal(true),
  mode: Type.Literal("events"),
  epoch,
  events: Type.Array(AnyItem, { maxItems: MAX_PAGE_ITEMS }),
  cursor,
  site: Type.Optional(Site),
});
const SnapshotAnswer = Type.Object({
  ok: Type.Literal(true),
  mode: Type.Literal("snapshot"),
  epoch,
  reason: Type.String({ maxLength: 20 }),
  revocations: Type.Array(
    Type.Object({ kind: Type.Union([Type.Literal("activation"), Type.Literal("license")]), id, tokensValidUntil: time, license: Type.Optional(id) }),
    {
      maxItems: MAX_PAGE_ITEMS,
    },
  ),
  expiries: Type.Array(Type.Object({ license: id, expires: time }), { maxItems: MAX_PAGE_ITEMS }),
  releases: Type.Array(
    Type.Object({
      lane: Lane,
      version: Version,
      halted: maybeTime,
      haltedMs: Type.Integer({ minimum: 0, maximum: 100 * 365 * 86_400_000 }),
      withdrawn: maybeTime,
      rule: Type.Optional(HaltRule),
    }),
    { maxItems: MAX_PAGE_ITEMS },
  ),
  next: Type.Union([Type.String({ minLength: 1, maxLength: 2000, pattern: "^[A-Za-z0-9_-]+$" }), Type.Null()]),
  cursor,
  site: Type.Optional(Site),
});

export type FeedEvent = Static<typeof KnownItem>;

export interface EventsPage {
  readonly mode: "events";
  readonly epoch: string;
  /** Known events, seq ascending. */
  readonly events: readonly FeedEvent[];
  /** How many events the page held (known or not). */
  readonly received: number;
  /** Where the next page starts: `epoch.seq`. */
  readonly cursor: string;
  readonly site: FeedSite | null;
}

export interface SnapshotPage {
  readonly mode: "snapshot";
  readonly epoch: string;
  readonly reason: string;
  readonly revocations: readonly {
    readonly kind: "activation" | "license";
    readonly id: string;
    readonly validUntil: number;
    readonly licenseId: string | null;
  }[];
  /** null: an expiry beyond any token's life, which refuses nothing (licenseExpiry). */
  readonly expiries: readonly { readonly licenseId: string; readonly expires: number | null }[];
  readonly releases: readonly {
    readonly lane: string;
    readonly version: string;
    readonly halted: number | null;
    readonly haltedMs: number;
    readonly withdrawn: number | null;
    readonly haltRule?: string | null;
  }[];
  readonly received: number;
  /** Ask for it with `snapshot`; null on the last page. */
  readonly next: string | null;
  /** Where the events go on after the last page. */
  readonly cursor: string;
  readonly site: FeedSite | null;
}

export type FeedPage = EventsPage | SnapshotPage;

/** A feed answer refused before anything of it was applied. */
export class FeedProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FeedProblem";
  }
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const DAY = 86_400_000;
/** No vendor time before this is meant (keyturn did not exist). */
const EARLIEST = Date.parse("2020-01-01T00:00:00Z");
/** Tokens live at most 366 days (--token-ttl); a day more for clocks apart. */
export const MAX_TOKEN_LIFETIME_MS = 367 * DAY;

/**
 * A vendor's time, checked to be one it could mean: a token lifetime at most the longest TTL from
 * now; another time (of an event, a halt, an expiry) no later than that either, nor before 2020.
 */
export function vendorTime(text: string, what: string, now: number): number {
  const ms = ISO.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) throw new FeedProblem(`${what} is not an ISO 8601 time`);
  if (ms < EARLIEST || ms > now + MAX_TOKEN_LIFETIME_MS)
    throw new FeedProblem(`${what} (${text.slice(0, 40)}) is implausible: not between 2020 and ${MAX_TOKEN_LIFETIME_MS / DAY} days from now`);
  return ms;
}

/**
 * A license's expiry from the feed, bounded like the vendor's other times: not before 2020 (refused
 * as implausible). A license may run for years, so a later expiry is no refusal: it lies beyond the
 * `exp` of every token the vendor has issued or could issue within the longest lifetime from now,
 * and it is kept as none (null), which refuses nothing and takes no entry. When the vendor moves it
 * closer later, that change comes through the feed as well.
 */
export function licenseExpiry(text: string, what: string, now: number): number | null {
  const ms = ISO.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) throw new FeedProblem(`${what} is not an ISO 8601 time`);
  if (ms > now + MAX_TOKEN_LIFETIME_MS) return null;
  return vendorTime(text, what, now);
}

/**
 * The end of a revocation that came with an event at `eventTime`: no token the vendor issued before
 * the event lives past the longest token lifetime after it, so a later `tokensValidUntil` is cut there.
 */
export function revocationEnd(validUntil: number, eventTime: number): number {
  return Math.min(validUntil, eventTime + MAX_TOKEN_LIFETIME_MS);
}

/** `epoch.seq` split; a cursor from before epochs (a bare seq) has none. */
export function splitCursor(c: string | null): { epoch: string | null; seq: bigint } | null {
  if (c === null) return null;
  const dot = c.lastIndexOf(".");
  return { epoch: dot < 0 ? null : c.slice(0, dot), seq: BigInt(c.slice(dot + 1)) };
}

// The checks are compiled on first use (checkOf), not when the module loads: only a mirror reads a
// feed, and compiling them at load cost every process 2 MB (bench/README.md, "twelfth round").
const firstError = (check: TypeCheck<TSchema>, body: unknown) => {
  const first = check.Errors(body).First();
  return first ? ` at ${first.path || "/"}: ${first.message}` : "";
};

/** A page asked for with `after` (null: none) or, during a snapshot, with `snapshot`. */
export function parseFeedAnswer(body: unknown, after: string | null, now: number): FeedPage {
  const mode = typeof body === "object" && body !== null ? (body as { mode?: unknown }).mode : undefined;
  if (mode === "snapshot") return parseSnapshot(body, now);
  const eventsCheck = checkOf(EventsAnswer);
  if (!eventsCheck.Check(body)) throw new FeedProblem(`malformed feed answer${firstError(eventsCheck, body)}`);
  const asked = splitCursor(after);
  if (asked === null || asked.epoch !== body.epoch)
    throw new FeedProblem(
      `the vendor answered events of records ${body.epoch} where a snapshot was due (the cursor was ${after === null ? "none" : after.slice(0, 80)})`,
    );
  const next = splitCursor(body.cursor)!;
  if (next.epoch !== body.epoch) throw new FeedProblem(`the cursor ${body.cursor.slice(0, 80)} is not of the answer's records ${body.epoch}`);
  let previous = asked.seq;
  const events: FeedEvent[] = [];
  const knownCheck = checkOf(KnownItem);
  for (const [i, e] of body.events.entries()) {
    const s = BigInt(e.seq);
    if (s <= previous) throw new FeedProblem(`event ${i} has seq ${e.seq}, not after ${previous}: the feed went backwards`);
    previous = s;
    if (!KNOWN_TYPES.has(e.type)) continue;
    if (!knownCheck.Check(e)) {
      const first = knownCheck.Errors(e).First();
      throw new FeedProblem(`malformed ${e.type} event (seq ${e.seq})${first ? ` at ${first.path}: ${first.message}` : ""}`);
    }
    events.push(e);
  }
  if (next.seq < asked.seq) throw new FeedProblem(`cursor ${body.cursor} is before ${after}: the feed went backwards`);
  if (next.seq < previous) throw new FeedProblem(`cursor ${body.cursor} is before the page's last event (${previous})`);
  return { mode: "events", epoch: body.epoch, events, received: body.events.length, cursor: body.cursor, site: body.site ?? null };
}

function parseSnapshot(body: unknown, now: number): SnapshotPage {
  const snapshotCheck = checkOf(SnapshotAnswer);
  if (!snapshotCheck.Check(body)) throw new FeedProblem(`malformed feed snapshot${firstError(snapshotCheck, body)}`);
  const received = body.revocations.length + body.expiries.length + body.releases.length;
  if (received > MAX_PAGE_ITEMS) throw new FeedProblem(`a snapshot page of ${received} items is implausible (the feed sends at most ${MAX_PAGE_ITEMS})`);
  if (splitCursor(body.cursor)!.epoch !== body.epoch)
    throw new FeedProblem(`the cursor ${body.cursor.slice(0, 80)} is not of the answer's records ${body.epoch}`);
  const at = (text: string | null, what: string) => (text === null ? null : vendorTime(text, what, now));
  return {
    mode: "snapshot",
    epoch: body.epoch,
    reason: body.reason,
    revocations: body.revocations.map((r) => ({
      kind: r.kind,
      id: r.id,
      validUntil: vendorTime(r.tokensValidUntil, `snapshot: ${r.kind} revocation's tokensValidUntil`, now),
      licenseId: r.kind === "activation" ? (r.license ?? null) : null,
    })),
    expiries: body.expiries.map((e) => ({ licenseId: e.license, expires: licenseExpiry(e.expires, "snapshot: license expires", now) })),
    releases: body.releases.map((r) => ({
      lane: r.lane,
      version: r.version,
      halted: at(r.halted, "snapshot: release halted"),
      haltedMs: r.haltedMs,
      withdrawn: at(r.withdrawn, "snapshot: release withdrawn"),
      haltRule: r.halted !== null ? (r.rule ?? null) : null,
    })),
    received,
    next: body.next,
    cursor: body.cursor,
    site: body.site ?? null,
  };
}
