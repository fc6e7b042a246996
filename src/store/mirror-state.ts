import type { Database } from "bun:sqlite";
import { applyControl, noControl } from "./release-controls";
import { releaseControlFromRow, type Row as RecordRow } from "./rows";
import type { ReleaseControlOp, ReleaseControlRecord } from "./types";

/**
 * What a mirror has learnt from its vendor's feed, kept in the mirror's own SQLite file (migration
 * 5) so a restart, even with the vendor away, still refuses what was revoked.
 */
export type RevocationKind = "activation" | "license";

export interface MirrorRevocation {
  readonly kind: RevocationKind;
  readonly id: string;
  /** Milliseconds: the latest `exp` any token it covers can have; forgotten after it. */
  readonly validUntil: number;
  readonly seq: string;
}

export interface MirrorLicenseExpiry {
  readonly licenseId: string;
  /** The license's expiry as last changed at the vendor (null: never expires). */
  readonly expires: number | null;
  readonly seq: string;
}

export interface MirrorReleaseControl {
  readonly lane: string;
  readonly version: string;
  /** The verb of the latest release.* event: published, halted, resumed, withdrawn or restored. */
  readonly state: string;
  readonly share: number | null;
  readonly time: number;
  readonly seq: string;
}

export interface MirrorSync {
  readonly vendor: string;
  /** The seq of the last event applied; null before the first. */
  readonly cursor: string | null;
  /** When the feed last answered well (milliseconds); null before the first time. */
  readonly lastSync: number | null;
  /** When this mirror first started following this vendor. */
  readonly started: number;
}

export interface MirrorSnapshot {
  readonly sync: MirrorSync;
  readonly revocations: readonly MirrorRevocation[];
  readonly expiries: readonly MirrorLicenseExpiry[];
  readonly releaseControls: readonly MirrorReleaseControl[];
}

/** What a vendor's snapshot says a mirror must know now: it replaces all that was known. */
export interface MirrorReplacement {
  readonly revocations: readonly Omit<MirrorRevocation, "seq">[];
  readonly expiries: readonly Omit<MirrorLicenseExpiry, "seq">[];
  /** The vendor's release controls as they stand (times the vendor's). */
  readonly releases: readonly Omit<ReleaseControlRecord, "updated">[];
}

export type MirrorChange =
  | ({ readonly op: "revoke" } & MirrorRevocation)
  | { readonly op: "lift"; readonly kind: RevocationKind; readonly id: string }
  | ({ readonly op: "expiry" } & MirrorLicenseExpiry)
  | ({ readonly op: "release" } & MirrorReleaseControl);

export interface MirrorStateStore {
  /** Everything known; a fresh state for `vendor` when there is none, or it was another vendor's. */
  load(vendor: string, now: number): MirrorSnapshot;
  /**
   * Applies one feed page's changes, release controls included (to the records the update path
   * reads), and moves the cursor and last sync, in one transaction: a failure changes nothing.
   */
  commit(changes: readonly MirrorChange[], cursor: string | null, now: number): void;
  /** Replaces everything known with a snapshot, release controls included, and sets the cursor, in one transaction. */
  replace(state: MirrorReplacement, cursor: string, now: number): void;
  /** Forgets revocations whose tokens have all expired by `now`; returns how many. */
  prune(now: number): number;
}

type Row = Record<string, string | number | null>;

/** The control a release event's verb stands for (release.published is no control). */
const CONTROL_OF: Readonly<Record<string, ReleaseControlOp>> = { halted: "halt", resumed: "resume", withdrawn: "withdraw", restored: "restore" };
const MIRROR_TABLES = ["mirror_revocations", "mirror_license_expiry", "mirror_release_controls"];

export class SqliteMirrorState implements MirrorStateStore {
  constructor(private readonly db: Database) {}

  load(vendor: string, now: number): MirrorSnapshot {
    const db = this.db;
    return db.transaction(() => {
      let sync = db.query("SELECT * FROM mirror_sync WHERE id = 1").get() as Row | null;
      if (!sync || sync.vendor !== vendor) {
        // Another vendor's cursor and revocations mean nothing here.
        for (const t of ["mirror_sync", "mirror_revocations", "mirror_license_expiry", "mirror_release_controls"]) db.exec(`DELETE FROM ${t}`);
        db.query("INSERT INTO mirror_sync (id, vendor, feed_cursor, last_sync, started) VALUES (1, ?, NULL, NULL, ?)").run(vendor, now);
        sync = { vendor, feed_cursor: null, last_sync: null, started: now };
      }
      return {
        sync: { vendor, cursor: sync.feed_cursor as string | null, lastSync: sync.last_sync as number | null, started: sync.started as number },
        revocations: (db.query("SELECT * FROM mirror_revocations").all() as Row[]).map((r) => ({
          kind: r.kind as RevocationKind,
          id: r.id as string,
          validUntil: r.valid_until as number,
          seq: r.seq as string,
        })),
        expiries: (db.query("SELECT * FROM mirror_license_expiry").all() as Row[]).map((r) => ({
          licenseId: r.license_id as string,
          expires: r.expires as number | null,
          seq: r.seq as string,
        })),
        releaseControls: (db.query("SELECT * FROM mirror_release_controls ORDER BY lane, version").all() as Row[]).map((r) => ({
          lane: r.lane as string,
          version: r.version as string,
          state: r.state as string,
          share: r.share as number | null,
          time: r.time as number,
          seq: r.seq as string,
        })),
      };
    }).immediate();
  }

  commit(changes: readonly MirrorChange[], cursor: string | null, now: number): void {
    const db = this.db;
    db.transaction(() => {
      for (const c of changes) {
        if (c.op === "revoke")
          db.query(`INSERT INTO mirror_revocations (kind, id, valid_until, seq) VALUES (?, ?, ?, ?)
            ON CONFLICT (kind, id) DO UPDATE SET valid_until = max(valid_until, excluded.valid_until), seq = excluded.seq`)
            .run(c.kind, c.id, c.validUntil, c.seq);
        else if (c.op === "lift") db.query("DELETE FROM mirror_revocations WHERE kind = ? AND id = ?").run(c.kind, c.id);
        else if (c.op === "expiry")
          db.query(`INSERT INTO mirror_license_expiry (license_id, expires, seq) VALUES (?, ?, ?)
            ON CONFLICT (license_id) DO UPDATE SET expires = excluded.expires, seq = excluded.seq`).run(c.licenseId, c.expires, c.seq);
        else {
          this.keepReleaseControl(c);
          const op = Object.hasOwn(CONTROL_OF, c.state) ? CONTROL_OF[c.state]! : null;
          if (op) this.applyReleaseControl(c.lane, c.version, op, c.time);
        }
      }
      db.query("UPDATE mirror_sync SET feed_cursor = ?, last_sync = ? WHERE id = 1").run(cursor, now);
    }).immediate();
  }

  replace(state: MirrorReplacement, cursor: string, now: number): void {
    const db = this.db;
    const seq = cursor.slice(cursor.lastIndexOf(".") + 1);
    db.transaction(() => {
      for (const t of MIRROR_TABLES) db.exec(`DELETE FROM ${t}`);
      const revoke = db.query("INSERT INTO mirror_revocations (kind, id, valid_until, seq) VALUES (?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET valid_until = excluded.valid_until");
      for (const r of state.revocations) revoke.run(r.kind, r.id, r.validUntil, seq);
      const expiry = db.query("INSERT INTO mirror_license_expiry (license_id, expires, seq) VALUES (?, ?, ?) ON CONFLICT (license_id) DO UPDATE SET expires = excluded.expires");
      for (const e of state.expiries) expiry.run(e.licenseId, e.expires, seq);
      // The vendor's controls replace this mirror's: a release the snapshot does not name runs.
      db.exec("DELETE FROM release_controls");
      for (const r of state.releases) {
        this.upsertControl({ ...r, updated: now });
        const verb = r.withdrawn !== null ? "withdrawn" : r.halted !== null ? "halted" : "resumed";
        this.keepReleaseControl({ lane: r.lane, version: r.version, state: verb, share: null, time: Math.max(r.withdrawn ?? 0, r.halted ?? 0) || now, seq });
      }
      db.exec("UPDATE release_controls_generation SET generation = generation + 1 WHERE id = 1");
      db.query("UPDATE mirror_sync SET feed_cursor = ?, last_sync = ? WHERE id = 1").run(cursor, now);
    }).immediate();
  }

  /** What the feed last said of a release (for mirroredReleaseControls). */
  private keepReleaseControl(c: MirrorReleaseControl): void {
    this.db
      .query(`INSERT INTO mirror_release_controls (lane, version, state, share, time, seq) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (lane, version) DO UPDATE SET state = excluded.state, share = excluded.share, time = excluded.time, seq = excluded.seq`)
      .run(c.lane, c.version, c.state, c.share, c.time, c.seq);
  }

  /** A control applied to the records the update path reads, at the vendor's time of it (ReleaseControls reads them again on the generation's move). */
  private applyReleaseControl(lane: string, version: string, op: ReleaseControlOp, at: number): void {
    const row = this.db.query("SELECT * FROM release_controls WHERE lane = ? AND version = ?").get(lane, version) as RecordRow | null;
    const before = row ? releaseControlFromRow(row) : noControl({ lane, version }, at);
    const after = applyControl(before, op, at);
    if (!after) return;
    this.upsertControl(after);
    this.db.exec("UPDATE release_controls_generation SET generation = generation + 1 WHERE id = 1");
  }

  private upsertControl(c: ReleaseControlRecord): void {
    this.db
      .query(`INSERT INTO release_controls (lane, version, halted, halted_ms, withdrawn, updated) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (lane, version) DO UPDATE SET halted = excluded.halted, halted_ms = excluded.halted_ms, withdrawn = excluded.withdrawn, updated = excluded.updated`)
      .run(c.lane, c.version, c.halted, c.haltedMs, c.withdrawn, c.updated);
  }

  prune(now: number): number {
    return this.db.query("DELETE FROM mirror_revocations WHERE valid_until <= ?").run(now).changes;
  }
}
