import type { MirrorChange, MirrorReleaseControl, MirrorSnapshot } from "../../store/mirror-state";
import { isoTime, type Clock } from "../clock";
import type { EntitlementStatusSource } from "../entitlement-status";
import { KeyturnError } from "../errors";
import type { EntitlementClaims } from "../tokens";

/** What /health reports of a mirror. */
export interface MirrorStatus {
  /** The vendor's address. */
  readonly of: string;
  /** When the vendor's feed last answered well (ISO 8601), null before the first time. */
  readonly lastSync: string | null;
  /** Seconds since then (since this mirror first started, before the first sync). */
  readonly staleSeconds: number;
  /** The feed cursor (`epoch.seq`) applied up to; null before the first answer. */
  readonly cursor: string | null;
  /** Why the last read of the feed was refused (the vendor unreachable, a page implausible); null when it answered well. */
  readonly problem: string | null;
}

/** A release control as the vendor's feed last told it. */
export interface MirroredReleaseControl {
  readonly lane: string;
  readonly version: string;
  /** published, halted, resumed, withdrawn or restored: the verb of the latest release.* event. */
  readonly state: string;
  /** Percent frozen at halt, as the vendor sent it. */
  readonly share: number | null;
}

/**
 * A mirror's knowledge of its vendor, in memory, and the mirror's bearer check made from it: a
 * token is served unless its activation was deactivated or its license revoked or expired since it
 * was issued, and (with a staleness limit) unless the vendor has been out of reach too long.
 */
export class MirrorKnowledge implements EntitlementStatusSource {
  private readonly revokedActivations = new Map<string, number>();
  private readonly revokedLicenses = new Map<string, number>();
  private readonly expiries = new Map<string, number | null>();
  private readonly releases = new Map<string, MirrorReleaseControl>();
  private cursor: string | null = null;
  private lastSync: number | null = null;
  private problem: string | null = null;
  private started: number;

  constructor(
    private readonly of: string,
    private readonly clock: Clock,
    private readonly maxStalenessSeconds: number | null,
  ) {
    this.started = clock();
  }

  /** Replaces everything with what was persisted. */
  load(snapshot: MirrorSnapshot): void {
    this.revokedActivations.clear();
    this.revokedLicenses.clear();
    this.expiries.clear();
    this.releases.clear();
    for (const r of snapshot.revocations) (r.kind === "activation" ? this.revokedActivations : this.revokedLicenses).set(r.id, r.validUntil);
    for (const e of snapshot.expiries) this.expiries.set(e.licenseId, e.expires);
    for (const c of snapshot.releaseControls) this.releases.set(`${c.lane}\n${c.version}`, c);
    this.cursor = snapshot.sync.cursor;
    this.lastSync = snapshot.sync.lastSync;
    this.started = snapshot.sync.started;
  }

  /** Applies one committed page: its changes, its cursor, and the time the feed answered. */
  applyPage(changes: readonly MirrorChange[], cursor: string | null, syncedAt: number): void {
    for (const c of changes) {
      if (c.op === "revoke") {
        const map = c.kind === "activation" ? this.revokedActivations : this.revokedLicenses;
        map.set(c.id, Math.max(map.get(c.id) ?? 0, c.validUntil));
      } else if (c.op === "lift") (c.kind === "activation" ? this.revokedActivations : this.revokedLicenses).delete(c.id);
      else if (c.op === "expiry") this.expiries.set(c.licenseId, c.expires);
      else this.releases.set(`${c.lane}\n${c.version}`, c);
    }
    this.cursor = cursor;
    this.lastSync = syncedAt;
  }

  /** How many entries are kept (revocations, expiries, release controls): what the mirror's bounds count. */
  get entries(): number {
    return this.revokedActivations.size + this.revokedLicenses.size + this.expiries.size + this.releases.size;
  }

  /** How many entries there would be once `changes` are applied (an upper bound: lifts are not subtracted). */
  entriesWith(changes: readonly MirrorChange[]): number {
    const added = new Set<string>();
    for (const c of changes) {
      if (c.op === "revoke" && !(c.kind === "activation" ? this.revokedActivations : this.revokedLicenses).has(c.id)) added.add(`${c.kind}\n${c.id}`);
      else if (c.op === "expiry" && !this.expiries.has(c.licenseId)) added.add(`expiry\n${c.licenseId}`);
      else if (c.op === "release" && !this.releases.has(`${c.lane}\n${c.version}`)) added.add(`release\n${c.lane}\n${c.version}`);
    }
    return this.entries + added.size;
  }

  /** What /health says went wrong with the feed; null once it answers well again. */
  noteProblem(problem: string | null): void {
    this.problem = problem;
  }

  /** Forgets revocations whose tokens have all expired. */
  prune(now: number): void {
    for (const map of [this.revokedActivations, this.revokedLicenses]) for (const [id, until] of map) if (until <= now) map.delete(id);
  }

  check(claims: EntitlementClaims): void {
    const now = this.clock();
    const ids = { licenseId: claims.lic, activationId: claims.sub };
    if (this.maxStalenessSeconds !== null && this.staleMs(now) > this.maxStalenessSeconds * 1000)
      throw new KeyturnError(
        "unavailable",
        `The mirror is stale: it has had no news of ${this.of} since ${isoTime(this.lastSync ?? this.started)}, so it cannot tell whether the entitlement still holds. Try again later.`,
        ids,
      );
    const deactivatedUntil = this.revokedActivations.get(claims.sub);
    if (deactivatedUntil !== undefined && now < deactivatedUntil) throw new KeyturnError("entitlement_revoked", "The installation was deactivated.", ids);
    const revokedUntil = this.revokedLicenses.get(claims.lic);
    if (revokedUntil !== undefined && now < revokedUntil) throw new KeyturnError("license_revoked", "The licence is revoked.", ids);
    const expires = this.expiries.get(claims.lic);
    if (expires !== undefined && expires !== null && expires <= now) throw new KeyturnError("license_expired", "The licence is expired.", ids);
  }

  status(): MirrorStatus {
    const now = this.clock();
    return {
      of: this.of,
      lastSync: this.lastSync === null ? null : isoTime(this.lastSync),
      staleSeconds: Math.max(0, Math.floor(this.staleMs(now) / 1000)),
      cursor: this.cursor,
      problem: this.problem,
    };
  }

  get feedCursor(): string | null {
    return this.cursor;
  }

  /** The release controls the vendor's feed reported, by lane then version. */
  mirroredReleaseControls(): MirroredReleaseControl[] {
    return [...this.releases.values()]
      .sort((a, b) => (a.lane === b.lane ? (a.version < b.version ? -1 : 1) : a.lane < b.lane ? -1 : 1))
      .map(({ lane, version, state, share }) => ({ lane, version, state, share }));
  }

  private staleMs(now: number): number {
    return now - (this.lastSync ?? this.started);
  }
}
