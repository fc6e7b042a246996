import type { MirrorChange, MirrorLookup, MirrorReleaseControl, MirrorSnapshot } from "../../store/mirror-state";
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
  /** Revocations, expiries and release controls kept (the bound counts them). */
  readonly entries: number;
  /** What the mirror cannot do for its vendor's installations (keys it lacks, lanes it skips); empty when nothing. */
  readonly degraded: readonly string[];
  /** Why every bearer request is refused (the bound was hit); null when they are served. */
  readonly refusing: string | null;
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

/** What the vendor's feed says of the vendor's site: its lanes (its keys go to the key holder). */
export interface VendorSite {
  readonly channels: readonly string[];
  readonly platforms: readonly string[];
}

/** Unknown key ids remembered at most (a client can send any kid; each costs a few bytes). */
const UNKNOWN_KIDS_MAX = 16;
/** A kid not seen again for this long is no longer reported. */
const UNKNOWN_KID_REPORTED_MS = 24 * 3_600_000;

/**
 * A mirror's knowledge of its vendor and the mirror's bearer check made from it: a token is served
 * unless its activation was deactivated or its license revoked or expired since it was issued
 * (looked up on disk, MirrorLookup, so a vendor's many revocations cost no memory), unless the
 * vendor has been out of reach too long (with a staleness limit), and unless the mirror had to
 * refuse part of what its vendor revoked (its bound): then it cannot tell, and says so with 503.
 */
export class MirrorKnowledge implements EntitlementStatusSource {
  private readonly releases = new Map<string, MirrorReleaseControl>();
  private cursor: string | null = null;
  private lastSync: number | null = null;
  private problem: string | null = null;
  /** Why the mirror refuses every bearer request (its bound was hit); null while it holds all it must. */
  private overflow: string | null = null;
  private vendorSite: VendorSite | null = null;
  /** Key ids of tokens this mirror could not verify, with when each was last seen. */
  private readonly unknownKids = new Map<string, number>();
  private started: number;

  constructor(
    private readonly of: string,
    private readonly clock: Clock,
    private readonly maxStalenessSeconds: number | null,
    private readonly lookup: MirrorLookup,
    /** This mirror's own channels and platforms (--channels, --platforms). */
    private readonly lanes: VendorSite,
    /** Whether a key is held now (from --keys, or learnt from the feed since). */
    private readonly isKnownKey: (kid: string) => boolean,
  ) {
    this.started = clock();
  }

  /** Replaces what is held in memory with what was persisted. */
  load(snapshot: MirrorSnapshot): void {
    this.releases.clear();
    for (const c of snapshot.releaseControls) this.releases.set(`${c.lane}\n${c.version}`, c);
    this.cursor = snapshot.sync.cursor;
    this.lastSync = snapshot.sync.lastSync;
    this.started = snapshot.sync.started;
  }

  /** Applies one committed page: its release controls, its cursor, and the time the feed answered. */
  applyPage(changes: readonly MirrorChange[], cursor: string | null, syncedAt: number): void {
    for (const c of changes) if (c.op === "release") this.releases.set(`${c.lane}\n${c.version}`, c);
    this.cursor = cursor;
    this.lastSync = syncedAt;
  }

  /** Set when the bound was hit (every bearer request 503 until it is not); null once a page fits again. */
  noteOverflow(why: string | null): void {
    this.overflow = why;
  }

  /** The vendor's lanes, as its feed last said (a feed from before they were sent says nothing). */
  noteVendorSite(site: VendorSite | null): void {
    if (site) this.vendorSite = site;
  }

  /** A token signed by a key of this variant the mirror does not hold. */
  noteUnknownKey(kid: string): void {
    if (!this.unknownKids.has(kid) && this.unknownKids.size >= UNKNOWN_KIDS_MAX) {
      const oldest = [...this.unknownKids].sort((a, b) => a[1] - b[1])[0]!;
      this.unknownKids.delete(oldest[0]);
    }
    this.unknownKids.set(kid, this.clock());
  }

  /** What the mirror cannot do for its vendor's installations, each in a sentence; empty when nothing. */
  degraded(): string[] {
    const reasons: string[] = [];
    const now = this.clock();
    for (const kid of [...this.unknownKids.keys()]) if (this.isKnownKey(kid)) this.unknownKids.delete(kid);
    const unknown = [...this.unknownKids]
      .filter(([, seen]) => now - seen < UNKNOWN_KID_REPORTED_MS)
      .map(([kid]) => kid)
      .sort();
    if (unknown.length > 0)
      reasons.push(
        `Tokens signed by ${unknown.join(", ")} cannot be verified: this mirror does not have that public key (the vendor's feed has not published it, or --keys lacks it).`,
      );
    if (this.vendorSite) {
      const channels = this.vendorSite.channels.filter((c) => !this.lanes.channels.includes(c));
      const platforms = this.vendorSite.platforms.filter((p) => !this.lanes.platforms.includes(p));
      if (channels.length > 0) reasons.push(`The vendor's channels ${channels.join(", ")} are skipped here: add them to --channels.`);
      if (platforms.length > 0) reasons.push(`The vendor's platforms ${platforms.join(", ")} are skipped here: add them to --platforms.`);
    }
    return reasons;
  }

  /** Why every bearer request is refused (the bound was hit); null when they are checked as usual. */
  get refusing(): string | null {
    return this.overflow;
  }

  /** What /health says went wrong with the feed; null once it answers well again. */
  noteProblem(problem: string | null): void {
    this.problem = problem;
  }

  check(claims: EntitlementClaims, leaving = false): void {
    const now = this.clock();
    const ids = { licenseId: claims.lic, activationId: claims.sub };
    if (this.overflow !== null)
      throw new KeyturnError("unavailable", `The mirror cannot tell whether the entitlement still holds: ${this.overflow}. Try again later.`, ids);
    if (this.maxStalenessSeconds !== null && this.staleMs(now) > this.maxStalenessSeconds * 1000)
      throw new KeyturnError(
        "unavailable",
        `The mirror is stale: it has had no news of ${this.of} since ${isoTime(this.lastSync ?? this.started)}, so it cannot tell whether the entitlement still holds. Try again later.`,
        ids,
      );
    const deactivated = this.lookup.revocation("activation", claims.sub);
    if (deactivated !== null && now < deactivated.validUntil) throw new KeyturnError("entitlement_revoked", "The installation was deactivated.", ids);
    const revoked = this.lookup.revocation("license", claims.lic);
    if (revoked !== null && now < revoked.validUntil) {
      if (revoked.issuedBefore === null) throw new KeyturnError("license_revoked", "The licence is revoked.", ids);
      if (claims.iat * 1000 < revoked.issuedBefore)
        throw new KeyturnError("license_revoked", "The token was issued before the licence was reinstated. Refresh it at the vendor.", ids);
    }
    const expires = this.lookup.expiry(claims.lic);
    if (!leaving && expires !== null && expires <= now) throw new KeyturnError("license_expired", "The licence is expired.", ids);
  }

  /** Whether check() refuses these claims now. */
  refuses(claims: EntitlementClaims): boolean {
    try {
      this.check(claims);
      return false;
    } catch {
      return true;
    }
  }

  status(): MirrorStatus {
    const now = this.clock();
    return {
      of: this.of,
      lastSync: this.lastSync === null ? null : isoTime(this.lastSync),
      staleSeconds: Math.max(0, Math.floor(this.staleMs(now) / 1000)),
      cursor: this.cursor,
      problem: this.overflow ?? this.problem,
      entries: this.lookup.entries(),
      degraded: this.degraded(),
      refusing: this.overflow,
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
