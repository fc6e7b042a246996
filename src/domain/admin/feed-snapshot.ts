import type { FeedPosition, ReleaseControlRecord } from "../../store/types";
import { isoTime } from "../clock";
import { KeyturnError } from "../errors";
import type { AdminDeps } from "./deps";
import type { SnapshotAnswer, SnapshotReason } from "./feed";

/*
 * The feed's snapshot (docs/admin-api.md "The vendor feed"): what a mirror must refuse now, by
 * section (deactivated activations, revoked licences, expiries, release controls), each by id,
 * `limit` items a page. The place of the next page travels in `next`, opaque to mirrors.
 */
const SEQ = /^(0|[1-9]\d{0,18})$/;
const SECTIONS = ["activations", "licenses", "expiries", "releases"] as const;
type Section = (typeof SECTIONS)[number];

export interface SnapshotPlace {
  readonly section: Section;
  /** The last id (releases: lane and version) answered in the section; null at its start. */
  readonly key: string | null;
  /** The newest seq when the snapshot began: the events after it replay what changed since. */
  readonly seq: bigint;
}

export async function snapshotPage(d: AdminDeps, position: FeedPosition, reason: SnapshotReason, from: SnapshotPlace, limit: number): Promise<SnapshotAnswer> {
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
        answer.revocations.push({
          kind: section === "activations" ? "activation" : "license",
          id: row.id,
          tokensValidUntil: isoTime(row.until!),
          ...(row.license ? { license: row.license } : {}),
        });
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
  readonly license?: string;
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
        ...(c.halted !== null && c.haltRule ? { rule: c.haltRule } : {}),
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

export function readSnapshotPlace(value: unknown): SnapshotPlace & { epoch: string; reason: SnapshotReason } {
  const bad = () => new KeyturnError("invalid_request", "snapshot must be the next a snapshot page answered.");
  if (typeof value !== "string" || value.length > 2000 || !/^[A-Za-z0-9_-]+$/.test(value)) throw bad();
  let p: { e?: unknown; r?: unknown; s?: unknown; k?: unknown; q?: unknown };
  try {
    p = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
  } catch {
    throw bad();
  }
  if (
    typeof p !== "object" ||
    p === null ||
    typeof p.e !== "string" ||
    !["start", "epoch", "ahead", "gap"].includes(p.r as string) ||
    !SECTIONS.includes(p.s as Section) ||
    !(p.k === null || (typeof p.k === "string" && p.k.length <= 700)) ||
    typeof p.q !== "string" ||
    !SEQ.test(p.q)
  )
    throw bad();
  return { epoch: p.e, reason: p.r as SnapshotReason, section: p.s as Section, key: p.k as string | null, seq: BigInt(p.q) };
}
