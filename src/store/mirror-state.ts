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
  /** An activation's license, when the feed names it: a revocation of that license then stands for it. */
  readonly licenseId?: string | null;
}

/** What a mirror looks up for each bearer request. */
export interface MirrorLookup {
  /** An activation's or license's revocation; `issuedBefore` (ms): only tokens issued before it are refused. */
  revocation(kind: RevocationKind, id: string): { readonly validUntil: number; readonly issuedBefore: number | null } | null;
  /** A license's expiry as last changed at the vendor; null when none is kept. */
  expiry(licenseId: string): number | null;
  /** Revocations, expiries and release controls kept: what the bound counts. */
  entries(): number;
}

export interface MirrorLicenseExpiry {
  readonly licenseId: string;
  /** The license's expiry as last changed at the vendor (null: none within any token's life, so nothing is kept). */
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
  /** A halt's rule when the vendor's release halted by itself (rollout autoHalt): kept on the control, so the mirror serves it as the vendor does. */
  readonly rule?: string | null;
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

/** A public key the vendor's feed published (SubjectPublicKeyInfo, DER, base64). */
export interface VendorKey {
  readonly kid: string;
  readonly spki: string;
}

/** What is held in memory: revocations and expiries stay on disk and are looked up (MirrorLookup). */
export interface MirrorSnapshot {
  readonly sync: MirrorSync;
  readonly releaseControls: readonly MirrorReleaseControl[];
  readonly vendorKeys: readonly VendorKey[];
}

/** A page of a vendor's snapshot, staged on disk until the last page comes. */
export interface MirrorSnapshotPage {
  readonly revocations: readonly Omit<MirrorRevocation, "seq">[];
  readonly expiries: readonly { readonly licenseId: string; readonly expires: number | null }[];
}

export type MirrorChange =
  | ({ readonly op: "revoke" } & MirrorRevocation)
  /** A license reinstated at the vendor's time `at`. */
  | { readonly op: "lift"; readonly kind: RevocationKind; readonly id: string; readonly at: number }
  | ({ readonly op: "expiry" } & MirrorLicenseExpiry)
  | ({ readonly op: "release" } & MirrorReleaseControl);

/** A change or snapshot that would keep more entries than the mirror's bound: nothing of it was applied. */
export class MirrorBoundError extends Error {
  constructor(
    readonly entries: number,
    readonly bound: number,
  ) {
    super(`it would keep ${entries} entries, more than this mirror's bound of ${bound}`);
    this.name = "MirrorBoundError";
  }
}

export interface MirrorStateStore extends MirrorLookup {
  /** Everything held in memory; a fresh state for `vendor` when there is none, or it was another vendor's. */
  load(vendor: string, now: number): MirrorSnapshot;
  /**
   * Applies one feed page's changes, release controls included (to the records the update path
   * reads), and moves the cursor and last sync, in one transaction: a failure, or more entries
   * than `maxEntries` afterwards (MirrorBoundError), changes nothing.
   */
  commit(changes: readonly MirrorChange[], cursor: string | null, now: number, maxEntries: number): void;
  /** Stages one page of a vendor's snapshot (`first`: forget what was staged before); MirrorBoundError past `maxEntries` staged. */
  stage(page: MirrorSnapshotPage, first: boolean, maxEntries: number): void;
  /** Replaces everything known with the staged snapshot and these release controls, and sets the cursor, in one transaction. */
  replace(releases: readonly Omit<ReleaseControlRecord, "updated">[], cursor: string, now: number): void;
  /** Forgets revocations whose tokens have all expired by `now`; returns how many. */
  prune(now: number): number;
  /** The vendor's public keys as its feed last published them, replacing those kept before. */
  setVendorKeys(keys: readonly VendorKey[], now: number): void;
}

type Row = Record<string, string | number | null>;

/** The control a release event's verb stands for (release.published is no control). */
const CONTROL_OF: Readonly<Record<string, ReleaseControlOp>> = { halted: "halt", resumed: "resume", withdrawn: "withdraw", restored: "restore" };
const MIRROR_TABLES = ["mirror_revocations", "mirror_license_expiry", "mirror_release_controls"];
const STAGING_TABLES = ["mirror_snapshot_revocations", "mirror_snapshot_expiries"];

export class SqliteMirrorState implements MirrorStateStore {
  /** Entries kept: counted at load, then an upper bound (each change adds at most one) until counted again. */
  private count = 0;
  /** Whether `count` is exact. */
  private counted = false;
  private stagedCount = 0;

  constructor(private readonly db: Database) {}

  load(vendor: string, now: number): MirrorSnapshot {
    const db = this.db;
    return db
      .transaction(() => {
        let sync = db.query("SELECT * FROM mirror_sync WHERE id = 1").get() as Row | null;
        if (!sync || sync.vendor !== vendor) {
          // Another vendor's cursor, revocations and keys mean nothing here.
          for (const t of ["mirror_sync", ...MIRROR_TABLES, ...STAGING_TABLES, "mirror_vendor_keys"]) db.exec(`DELETE FROM ${t}`);
          db.query("INSERT INTO mirror_sync (id, vendor, feed_cursor, last_sync, started) VALUES (1, ?, NULL, NULL, ?)").run(vendor, now);
          sync = { vendor, feed_cursor: null, last_sync: null, started: now };
        }
        this.count = this.recount();
        this.counted = true;
        return {
          sync: { vendor, cursor: sync.feed_cursor as string | null, lastSync: sync.last_sync as number | null, started: sync.started as number },
          releaseControls: (db.query("SELECT * FROM mirror_release_controls ORDER BY lane, version").all() as Row[]).map((r) => ({
            lane: r.lane as string,
            version: r.version as string,
            state: r.state as string,
            share: r.share as number | null,
            time: r.time as number,
            seq: r.seq as string,
          })),
          vendorKeys: (db.query("SELECT kid, spki FROM mirror_vendor_keys ORDER BY kid").all() as Row[]).map((r) => ({
            kid: r.kid as string,
            spki: r.spki as string,
          })),
        };
      })
      .immediate();
  }

  revocation(kind: RevocationKind, id: string): { validUntil: number; issuedBefore: number | null } | null {
    const r = this.db.query("SELECT valid_until, issued_before FROM mirror_revocations WHERE kind = ? AND id = ?").get(kind, id) as Row | null;
    return r ? { validUntil: r.valid_until as number, issuedBefore: r.issued_before as number | null } : null;
  }

  expiry(licenseId: string): number | null {
    const r = this.db.query("SELECT expires FROM mirror_license_expiry WHERE license_id = ?").get(licenseId) as Row | null;
    return (r?.expires as number | null | undefined) ?? null;
  }

  entries(): number {
    if (!this.counted) {
      this.count = this.recount();
      this.counted = true;
    }
    return this.count;
  }

  commit(changes: readonly MirrorChange[], cursor: string | null, now: number, maxEntries: number): void {
    const db = this.db;
    db.transaction(() => {
      for (const c of changes) {
        // A revocation whose tokens have all expired refuses nothing: it takes no entry.
        if (c.op === "revoke") {
          if (c.validUntil > now) this.revoke(c);
        } else if (c.op === "lift") {
          // A license revocation that stood for deactivated installations keeps refusing the tokens
          // issued before the reinstatement: which of them were deactivated is no longer known here.
          db.query("UPDATE mirror_revocations SET issued_before = ? WHERE kind = ? AND id = ? AND covered > 0").run(c.at, c.kind, c.id);
          db.query("DELETE FROM mirror_revocations WHERE kind = ? AND id = ? AND covered = 0").run(c.kind, c.id);
        } else if (c.op === "expiry") {
          if (c.expires === null) db.query("DELETE FROM mirror_license_expiry WHERE license_id = ?").run(c.licenseId);
          else
            db.query(`INSERT INTO mirror_license_expiry (license_id, expires, seq) VALUES (?, ?, ?)
              ON CONFLICT (license_id) DO UPDATE SET expires = excluded.expires, seq = excluded.seq`).run(c.licenseId, c.expires, c.seq);
        } else {
          this.keepReleaseControl(c);
          const op = Object.hasOwn(CONTROL_OF, c.state) ? CONTROL_OF[c.state]! : null;
          if (op) this.applyReleaseControl(c.lane, c.version, op, c.time, c.rule ?? undefined);
        }
      }
      // Each change adds at most one entry: count again only when the bound may have been passed.
      const exact = this.count + changes.length > maxEntries;
      const count = exact ? this.recount() : this.count + changes.length;
      if (count > maxEntries) throw new MirrorBoundError(count, maxEntries);
      db.query("UPDATE mirror_sync SET feed_cursor = ?, last_sync = ? WHERE id = 1").run(cursor, now);
      this.count = count;
      this.counted = exact || (changes.length === 0 && this.counted);
    }).immediate();
  }

  /**
   * A revocation, kept compact: an installation's is left out when a revocation of its license
   * already refuses its tokens as long, and a license's replaces those of its installations it
   * outlasts (`covered` counts them).
   */
  private revoke(c: MirrorRevocation): void {
    const db = this.db;
    if (c.kind === "activation" && c.licenseId) {
      const covering = db
        .query("UPDATE mirror_revocations SET covered = covered + 1 WHERE kind = 'license' AND id = ? AND valid_until >= ? AND issued_before IS NULL")
        .run(c.licenseId, c.validUntil);
      if (covering.changes > 0) return;
    }
    db.query(`INSERT INTO mirror_revocations (kind, id, valid_until, seq, license_id) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (kind, id) DO UPDATE SET valid_until = max(valid_until, excluded.valid_until), seq = excluded.seq, issued_before = NULL`).run(
      c.kind,
      c.id,
      c.validUntil,
      c.seq,
      c.kind === "activation" ? (c.licenseId ?? null) : null,
    );
    if (c.kind === "license") {
      const absorbed = db
        .query(`DELETE FROM mirror_revocations WHERE kind = 'activation' AND license_id = ?
          AND valid_until <= (SELECT valid_until FROM mirror_revocations WHERE kind = 'license' AND id = ?)`)
        .run(c.id, c.id).changes;
      if (absorbed > 0) db.query("UPDATE mirror_revocations SET covered = covered + ? WHERE kind = 'license' AND id = ?").run(absorbed, c.id);
    }
  }

  stage(page: MirrorSnapshotPage, first: boolean, maxEntries: number): void {
    const db = this.db;
    db.transaction(() => {
      if (first) {
        for (const t of STAGING_TABLES) db.exec(`DELETE FROM ${t}`);
        this.stagedCount = 0;
      }
      if (this.stagedCount + page.revocations.length + page.expiries.length > maxEntries)
        throw new MirrorBoundError(this.stagedCount + page.revocations.length + page.expiries.length, maxEntries);
      const revoke = db.query(`INSERT INTO mirror_snapshot_revocations (kind, id, valid_until, license_id) VALUES (?, ?, ?, ?)
        ON CONFLICT (kind, id) DO UPDATE SET valid_until = max(valid_until, excluded.valid_until)`);
      for (const r of page.revocations) revoke.run(r.kind, r.id, r.validUntil, r.licenseId ?? null);
      const expiry = db.query(
        "INSERT INTO mirror_snapshot_expiries (license_id, expires) VALUES (?, ?) ON CONFLICT (license_id) DO UPDATE SET expires = excluded.expires",
      );
      for (const e of page.expiries) if (e.expires !== null) expiry.run(e.licenseId, e.expires);
      this.stagedCount += page.revocations.length + page.expiries.length;
    }).immediate();
  }

  replace(releases: readonly Omit<ReleaseControlRecord, "updated">[], cursor: string, now: number): void {
    const db = this.db;
    const seq = cursor.slice(cursor.lastIndexOf(".") + 1);
    db.transaction(() => {
      for (const t of MIRROR_TABLES) db.exec(`DELETE FROM ${t}`);
      // A vendor's snapshot leaves out the deactivations a licence's revocation stands for, without
      // saying which: a licence revocation from it counts as standing for some (see commit's lift).
      db.query(`INSERT INTO mirror_revocations (kind, id, valid_until, seq, license_id, covered)
        SELECT kind, id, valid_until, ?, license_id, CASE kind WHEN 'license' THEN 1 ELSE 0 END FROM mirror_snapshot_revocations`).run(seq);
      db.query("INSERT INTO mirror_license_expiry (license_id, expires, seq) SELECT license_id, expires, ? FROM mirror_snapshot_expiries").run(seq);
      for (const t of STAGING_TABLES) db.exec(`DELETE FROM ${t}`);
      // The vendor's controls replace this mirror's: a release the snapshot does not name runs.
      db.exec("DELETE FROM release_controls");
      for (const r of releases) {
        this.upsertControl({ ...r, updated: now });
        const verb = r.withdrawn !== null ? "withdrawn" : r.halted !== null ? "halted" : "resumed";
        this.keepReleaseControl({ lane: r.lane, version: r.version, state: verb, share: null, time: Math.max(r.withdrawn ?? 0, r.halted ?? 0) || now, seq });
      }
      db.exec("UPDATE release_controls_generation SET generation = generation + 1 WHERE id = 1");
      db.query("UPDATE mirror_sync SET feed_cursor = ?, last_sync = ? WHERE id = 1").run(cursor, now);
      this.count = this.recount();
      this.counted = true;
      this.stagedCount = 0;
    }).immediate();
  }

  setVendorKeys(keys: readonly VendorKey[], now: number): void {
    const insert = this.db.query(
      "INSERT INTO mirror_vendor_keys (kid, spki, learned) VALUES (?, ?, ?) ON CONFLICT (kid) DO UPDATE SET spki = excluded.spki, learned = excluded.learned",
    );
    this.db
      .transaction(() => {
        this.db.exec("DELETE FROM mirror_vendor_keys");
        for (const k of keys) insert.run(k.kid, k.spki, now);
      })
      .immediate();
  }

  private recount(): number {
    const row = this.db
      .query(
        "SELECT (SELECT count(*) FROM mirror_revocations) + (SELECT count(*) FROM mirror_license_expiry) + (SELECT count(*) FROM mirror_release_controls) AS n",
      )
      .get() as Row;
    return row.n as number;
  }

  /** What the feed last said of a release (for mirroredReleaseControls). */
  private keepReleaseControl(c: MirrorReleaseControl): void {
    this.db
      .query(`INSERT INTO mirror_release_controls (lane, version, state, share, time, seq) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (lane, version) DO UPDATE SET state = excluded.state, share = excluded.share, time = excluded.time, seq = excluded.seq`)
      .run(c.lane, c.version, c.state, c.share, c.time, c.seq);
  }

  /** A control applied to the records the update path reads, at the vendor's time of it (ReleaseControls reads them again on the generation's move). */
  private applyReleaseControl(lane: string, version: string, op: ReleaseControlOp, at: number, haltRule?: string): void {
    const row = this.db.query("SELECT * FROM release_controls WHERE lane = ? AND version = ?").get(lane, version) as RecordRow | null;
    const before = row ? releaseControlFromRow(row) : noControl({ lane, version }, at);
    const after = applyControl(before, op, at, haltRule);
    if (!after) return;
    this.upsertControl(after);
    this.db.exec("UPDATE release_controls_generation SET generation = generation + 1 WHERE id = 1");
  }

  private upsertControl(c: ReleaseControlRecord): void {
    this.db
      .query(`INSERT INTO release_controls (lane, version, halted, halted_ms, withdrawn, updated, halt_rule) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (lane, version) DO UPDATE SET halted = excluded.halted, halted_ms = excluded.halted_ms, withdrawn = excluded.withdrawn,
        updated = excluded.updated, halt_rule = excluded.halt_rule`)
      .run(c.lane, c.version, c.halted, c.haltedMs, c.withdrawn, c.updated, c.haltRule ?? null);
  }

  prune(now: number): number {
    const pruned = this.db.query("DELETE FROM mirror_revocations WHERE valid_until <= ?").run(now).changes;
    this.count -= pruned;
    return pruned;
  }
}
