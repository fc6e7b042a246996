/**
 * Numbered migrations, one entry per version, in each dialect. Applied in order at start (and by
 * `keyturn migrate`); a version once released is never edited, only followed by a new one.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "licenses, activations, challenges, audit",
    sqlite: `
      CREATE TABLE licenses (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        key_hash TEXT UNIQUE,
        licensee TEXT NOT NULL,
        organization TEXT NOT NULL,
        plan TEXT NOT NULL,
        plan_title TEXT NOT NULL,
        channels TEXT NOT NULL,
        seats INTEGER NOT NULL,
        issued INTEGER NOT NULL,
        expires INTEGER,
        revoked INTEGER
      ) STRICT;
      CREATE TABLE activations (
        id TEXT PRIMARY KEY,
        license_id TEXT NOT NULL REFERENCES licenses(id),
        kind TEXT NOT NULL,
        installation TEXT NOT NULL,
        device_hash TEXT NOT NULL,
        product TEXT,
        name TEXT NOT NULL,
        platform TEXT NOT NULL,
        version TEXT NOT NULL,
        created INTEGER NOT NULL,
        last_seen INTEGER NOT NULL,
        deactivated INTEGER
      ) STRICT;
      CREATE UNIQUE INDEX activations_one_active_seat
        ON activations(license_id, installation) WHERE deactivated IS NULL;
      CREATE INDEX activations_by_license ON activations(license_id);
      CREATE TABLE challenges (
        nonce_hash TEXT PRIMARY KEY,
        installation TEXT NOT NULL,
        created INTEGER NOT NULL,
        expires INTEGER NOT NULL,
        used INTEGER
      ) STRICT;
      CREATE INDEX challenges_by_expiry ON challenges(expires);
      CREATE TABLE audit (
        ref TEXT PRIMARY KEY,
        time INTEGER NOT NULL,
        address TEXT,
        action TEXT NOT NULL,
        activation_id TEXT,
        license_id TEXT,
        outcome TEXT NOT NULL,
        error TEXT
      ) STRICT;
      CREATE INDEX audit_by_time ON audit(time);
      CREATE INDEX audit_by_license ON audit(license_id, time);
      CREATE INDEX audit_by_activation ON audit(activation_id, time);
    `,
    postgres: `
      CREATE TABLE licenses (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        key_hash TEXT UNIQUE,
        licensee TEXT NOT NULL,
        organization TEXT NOT NULL,
        plan TEXT NOT NULL,
        plan_title TEXT NOT NULL,
        channels TEXT NOT NULL,
        seats INTEGER NOT NULL,
        issued BIGINT NOT NULL,
        expires BIGINT,
        revoked BIGINT
      );
      CREATE TABLE activations (
        id TEXT PRIMARY KEY,
        license_id TEXT NOT NULL REFERENCES licenses(id),
        kind TEXT NOT NULL,
        installation TEXT NOT NULL,
        device_hash TEXT NOT NULL,
        product TEXT,
        name TEXT NOT NULL,
        platform TEXT NOT NULL,
        version TEXT NOT NULL,
        created BIGINT NOT NULL,
        last_seen BIGINT NOT NULL,
        deactivated BIGINT
      );
      CREATE UNIQUE INDEX activations_one_active_seat
        ON activations(license_id, installation) WHERE deactivated IS NULL;
      CREATE INDEX activations_by_license ON activations(license_id);
      CREATE TABLE challenges (
        nonce_hash TEXT PRIMARY KEY,
        installation TEXT NOT NULL,
        created BIGINT NOT NULL,
        expires BIGINT NOT NULL,
        used BIGINT
      );
      CREATE INDEX challenges_by_expiry ON challenges(expires);
      CREATE TABLE audit (
        ref TEXT PRIMARY KEY,
        time BIGINT NOT NULL,
        address TEXT,
        action TEXT NOT NULL,
        activation_id TEXT,
        license_id TEXT,
        outcome TEXT NOT NULL,
        error TEXT
      );
      CREATE INDEX audit_by_time ON audit(time);
      CREATE INDEX audit_by_license ON audit(license_id, time);
      CREATE INDEX audit_by_activation ON audit(activation_id, time);
    `,
  },
  {
    version: 2,
    name: "licenses.active_seats, kept by triggers",
    // Counting a license's active seats scanned all of them on every activation and every
    // entitlements/current (~65 ns a seat: 0.4 ms at 6,000 seats). The database keeps the count
    // itself, so every store and every process sharing the file agree on it without code of theirs.
    sqlite: `
      ALTER TABLE licenses ADD COLUMN active_seats INTEGER NOT NULL DEFAULT 0;
      UPDATE licenses SET active_seats =
        (SELECT count(*) FROM activations a WHERE a.license_id = licenses.id AND a.deactivated IS NULL);
      CREATE TRIGGER activations_seat_taken AFTER INSERT ON activations WHEN NEW.deactivated IS NULL
      BEGIN UPDATE licenses SET active_seats = active_seats + 1 WHERE id = NEW.license_id; END;
      CREATE TRIGGER activations_seat_freed AFTER UPDATE OF deactivated ON activations
        WHEN OLD.deactivated IS NULL AND NEW.deactivated IS NOT NULL
      BEGIN UPDATE licenses SET active_seats = active_seats - 1 WHERE id = OLD.license_id; END;
      CREATE TRIGGER activations_seat_retaken AFTER UPDATE OF deactivated ON activations
        WHEN OLD.deactivated IS NOT NULL AND NEW.deactivated IS NULL
      BEGIN UPDATE licenses SET active_seats = active_seats + 1 WHERE id = NEW.license_id; END;
      CREATE TRIGGER activations_seat_deleted AFTER DELETE ON activations WHEN OLD.deactivated IS NULL
      BEGIN UPDATE licenses SET active_seats = active_seats - 1 WHERE id = OLD.license_id; END;
    `,
    postgres: `
      ALTER TABLE licenses ADD COLUMN active_seats INTEGER NOT NULL DEFAULT 0;
      UPDATE licenses l SET active_seats =
        (SELECT count(*) FROM activations a WHERE a.license_id = l.id AND a.deactivated IS NULL);
      CREATE FUNCTION keyturn_count_active_seats() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP <> 'INSERT' AND OLD.deactivated IS NULL THEN
          UPDATE licenses SET active_seats = active_seats - 1 WHERE id = OLD.license_id;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.deactivated IS NULL THEN
          UPDATE licenses SET active_seats = active_seats + 1 WHERE id = NEW.license_id;
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER activations_count_active_seats
        AFTER INSERT OR DELETE OR UPDATE OF deactivated, license_id ON activations
        FOR EACH ROW EXECUTE FUNCTION keyturn_count_active_seats();
    `,
  },
  {
    version: 3,
    name: "admin tokens, audit actor, license email and metadata, idempotency, outbox events, webhooks",
    // The outbox is written by every activation, so its table has no index but its key: an event
    // costs one append. Its seq never starts again without AUTOINCREMENT because pruning always
    // keeps the newest event; its id is unique by construction (time and 50 random bits).
    sqlite: `
      CREATE TABLE admin_tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        created INTEGER NOT NULL,
        expires INTEGER,
        revoked INTEGER,
        last_used INTEGER
      ) STRICT;
      ALTER TABLE audit ADD COLUMN actor TEXT;
      ALTER TABLE licenses ADD COLUMN email TEXT;
      ALTER TABLE licenses ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
      CREATE INDEX licenses_by_issued ON licenses(issued, id);
      CREATE TABLE idempotency (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        answer TEXT NOT NULL,
        created INTEGER NOT NULL,
        PRIMARY KEY (scope, key)
      ) STRICT;
      CREATE INDEX idempotency_by_created ON idempotency(created);
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        type TEXT NOT NULL,
        time INTEGER NOT NULL,
        data TEXT NOT NULL
      );
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        types TEXT NOT NULL,
        secret TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        disabled_reason TEXT,
        created INTEGER NOT NULL,
        after_seq INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE webhook_fanout (
        name TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
      ) STRICT;
      INSERT INTO webhook_fanout (name, seq) VALUES ('events', 0);
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        event_seq INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        next_attempt INTEGER NOT NULL,
        lease_until INTEGER,
        lease_owner TEXT,
        created INTEGER NOT NULL,
        last_attempt INTEGER,
        UNIQUE (endpoint_id, event_id)
      ) STRICT;
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt);
      CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries(event_seq);
      CREATE TABLE webhook_attempts (
        delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        time INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        status_code INTEGER,
        error TEXT,
        PRIMARY KEY (delivery_id, attempt)
      ) STRICT;
    `,
    postgres: `
      CREATE TABLE admin_tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        created BIGINT NOT NULL,
        expires BIGINT,
        revoked BIGINT,
        last_used BIGINT
      );
      ALTER TABLE audit ADD COLUMN actor TEXT;
      ALTER TABLE licenses ADD COLUMN email TEXT;
      ALTER TABLE licenses ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
      CREATE INDEX licenses_by_issued ON licenses(issued, id);
      CREATE TABLE idempotency (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        answer TEXT NOT NULL,
        created BIGINT NOT NULL,
        PRIMARY KEY (scope, key)
      );
      CREATE INDEX idempotency_by_created ON idempotency(created);
      CREATE TABLE events (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL,
        type TEXT NOT NULL,
        time BIGINT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        types TEXT NOT NULL,
        secret TEXT NOT NULL,
        enabled BOOLEAN NOT NULL,
        disabled_reason TEXT,
        created BIGINT NOT NULL,
        after_seq BIGINT NOT NULL
      );
      CREATE TABLE webhook_fanout (
        name TEXT PRIMARY KEY,
        seq BIGINT NOT NULL
      );
      INSERT INTO webhook_fanout (name, seq) VALUES ('events', 0);
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        event_seq BIGINT NOT NULL,
        event_id TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        next_attempt BIGINT NOT NULL,
        lease_until BIGINT,
        lease_owner TEXT,
        created BIGINT NOT NULL,
        last_attempt BIGINT,
        UNIQUE (endpoint_id, event_id)
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt);
      CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries(event_seq);
      CREATE TABLE webhook_attempts (
        delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        time BIGINT NOT NULL,
        duration_ms INTEGER NOT NULL,
        status_code INTEGER,
        error TEXT,
        PRIMARY KEY (delivery_id, attempt)
      );
    `,
  },
  {
    version: 4,
    name: "release controls, known releases, the lane an installation reads",
    // release_controls_generation moves with every control change, so a process learns of one by
    // reading one row (and, on SQLite, only after the WAL index says something was committed).
    sqlite: `
      CREATE TABLE release_controls (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        halted INTEGER,
        halted_ms INTEGER NOT NULL DEFAULT 0,
        withdrawn INTEGER,
        updated INTEGER NOT NULL,
        PRIMARY KEY (lane, version)
      ) STRICT;
      CREATE TABLE release_controls_generation (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL
      ) STRICT;
      INSERT INTO release_controls_generation (id, generation) VALUES (1, 0);
      CREATE TABLE known_releases (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        first_seen INTEGER NOT NULL,
        PRIMARY KEY (lane, version)
      ) STRICT;
      ALTER TABLE activations ADD COLUMN lane TEXT;
      CREATE INDEX activations_by_last_seen ON activations(last_seen);
    `,
    postgres: `
      CREATE TABLE release_controls (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        halted BIGINT,
        halted_ms BIGINT NOT NULL DEFAULT 0,
        withdrawn BIGINT,
        updated BIGINT NOT NULL,
        PRIMARY KEY (lane, version)
      );
      CREATE TABLE release_controls_generation (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation BIGINT NOT NULL
      );
      INSERT INTO release_controls_generation (id, generation) VALUES (1, 0);
      CREATE TABLE known_releases (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        first_seen BIGINT NOT NULL,
        PRIMARY KEY (lane, version)
      );
      ALTER TABLE activations ADD COLUMN lane TEXT;
      CREATE INDEX activations_by_last_seen ON activations(last_seen);
    `,
  },
  {
    version: 5,
    name: "a mirror's knowledge of its vendor: feed cursor, revocations, license expiry, release controls",
    sqlite: `
      CREATE TABLE mirror_sync (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        vendor TEXT NOT NULL,
        feed_cursor TEXT,
        last_sync INTEGER,
        started INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE mirror_revocations (
        kind TEXT NOT NULL CHECK (kind IN ('activation', 'license')),
        id TEXT NOT NULL,
        valid_until INTEGER NOT NULL,
        seq TEXT NOT NULL,
        PRIMARY KEY (kind, id)
      ) STRICT;
      CREATE INDEX mirror_revocations_by_until ON mirror_revocations(valid_until);
      CREATE TABLE mirror_license_expiry (
        license_id TEXT PRIMARY KEY,
        expires INTEGER,
        seq TEXT NOT NULL
      ) STRICT;
      CREATE TABLE mirror_release_controls (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        state TEXT NOT NULL,
        share REAL,
        time INTEGER NOT NULL,
        seq TEXT NOT NULL,
        PRIMARY KEY (lane, version)
      ) STRICT;
    `,
    postgres: `
      CREATE TABLE mirror_sync (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        vendor TEXT NOT NULL,
        feed_cursor TEXT,
        last_sync BIGINT,
        started BIGINT NOT NULL
      );
      CREATE TABLE mirror_revocations (
        kind TEXT NOT NULL CHECK (kind IN ('activation', 'license')),
        id TEXT NOT NULL,
        valid_until BIGINT NOT NULL,
        seq TEXT NOT NULL,
        PRIMARY KEY (kind, id)
      );
      CREATE INDEX mirror_revocations_by_until ON mirror_revocations(valid_until);
      CREATE TABLE mirror_license_expiry (
        license_id TEXT PRIMARY KEY,
        expires BIGINT,
        seq TEXT NOT NULL
      );
      CREATE TABLE mirror_release_controls (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        state TEXT NOT NULL,
        share REAL,
        time BIGINT NOT NULL,
        seq TEXT NOT NULL,
        PRIMARY KEY (lane, version)
      );
    `,
  },
  {
    version: 6,
    name: "the feed's epoch (a new one for records copied or restored) and each activation's latest token expiry",
    // The epoch names these records in every feed cursor: a mirror holding a cursor of another epoch
    // (records copied elsewhere, a backup restored) reads a snapshot instead of trusting the seq.
    // pruned_through: the newest seq retention has deleted, so a cursor before it is known to miss events.
    sqlite: `
      CREATE TABLE feed_epoch (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        epoch TEXT NOT NULL,
        pruned_through INTEGER NOT NULL
      ) STRICT;
      INSERT INTO feed_epoch (id, epoch, pruned_through) VALUES (1, lower(hex(randomblob(12))), 0);
      ALTER TABLE activations ADD COLUMN token_exp INTEGER;
    `,
    postgres: `
      CREATE TABLE feed_epoch (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        epoch TEXT NOT NULL,
        pruned_through BIGINT NOT NULL
      );
      INSERT INTO feed_epoch (id, epoch, pruned_through) VALUES (1, substr(md5(random()::text || clock_timestamp()::text), 1, 24), 0);
      ALTER TABLE activations ADD COLUMN token_exp BIGINT;
      `,
  },
  {
    version: 7,
    name: "the first scan of the release tree is a baseline (no release.published for it); the check value of the key sealing secrets in the records",
    // Records that already know releases took their baseline when they first scanned.
    sqlite: `
      CREATE TABLE known_releases_baseline (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        taken INTEGER NOT NULL
      ) STRICT;
      INSERT INTO known_releases_baseline (id, taken) SELECT 1, min(first_seen) FROM known_releases HAVING count(*) > 0;
      CREATE TABLE record_key_check (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        value TEXT NOT NULL
      ) STRICT;
    `,
    postgres: `
      CREATE TABLE known_releases_baseline (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        taken BIGINT NOT NULL
      );
      INSERT INTO known_releases_baseline (id, taken) SELECT 1, min(first_seen) FROM known_releases HAVING count(*) > 0;
      CREATE TABLE record_key_check (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        value TEXT NOT NULL
      );
    `,
  },
  {
    version: 8,
    name: "a license's own token lifetime (null: the site's --token-ttl)",
    sqlite: `ALTER TABLE licenses ADD COLUMN token_ttl INTEGER;`,
    postgres: `ALTER TABLE licenses ADD COLUMN token_ttl BIGINT;`,
  },
  {
    version: 9,
    name: "licenses.seat_lease: seats that lapse when their installation is not seen",
    // The reclaim's search: the license's held seats by last sighting, without its deactivated history.
    sqlite: `
      ALTER TABLE licenses ADD COLUMN seat_lease INTEGER;
      CREATE INDEX activations_held_by_seen ON activations(license_id, last_seen) WHERE deactivated IS NULL;
    `,
    postgres: `
      ALTER TABLE licenses ADD COLUMN seat_lease BIGINT;
      CREATE INDEX activations_held_by_seen ON activations(license_id, last_seen) WHERE deactivated IS NULL;
    `,
  },
  {
    version: 10,
    name: "console and portal sessions: hashed ids, server-side expiry and revocation",
    sqlite: `
      CREATE TABLE console_sessions (
        id_hash TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('console', 'portal', 'pending')),
        token_id TEXT,
        subject TEXT,
        license_id TEXT,
        name TEXT NOT NULL,
        scopes TEXT NOT NULL,
        detail TEXT,
        created INTEGER NOT NULL,
        expires INTEGER NOT NULL,
        revoked INTEGER
      ) STRICT;
      CREATE INDEX console_sessions_by_token ON console_sessions(token_id);
      CREATE INDEX console_sessions_by_expiry ON console_sessions(expires);
    `,
    postgres: `
      CREATE TABLE console_sessions (
        id_hash TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('console', 'portal', 'pending')),
        token_id TEXT,
        subject TEXT,
        license_id TEXT,
        name TEXT NOT NULL,
        scopes TEXT NOT NULL,
        detail TEXT,
        created BIGINT NOT NULL,
        expires BIGINT NOT NULL,
        revoked BIGINT
      );
      CREATE INDEX console_sessions_by_token ON console_sessions(token_id);
      CREATE INDEX console_sessions_by_expiry ON console_sessions(expires);
    `,
  },
  {
    version: 11,
    name: "audit lines found by error code without a scan; a staff console session keeps the person's groups",
    // The audit search's order is time descending then ref, so an error's lines come out of the index
    // in order; only refusals have an error, so the index leaves the ok lines out. A staff session's
    // scopes are derived from its groups at each request (docs/console.md, "Sessions").
    sqlite: `
      CREATE INDEX audit_by_error ON audit(error, time DESC, ref) WHERE error IS NOT NULL;
      ALTER TABLE console_sessions ADD COLUMN staff_groups TEXT;
    `,
    postgres: `
      CREATE INDEX audit_by_error ON audit(error, time DESC, ref) WHERE error IS NOT NULL;
      ALTER TABLE console_sessions ADD COLUMN staff_groups TEXT;
    `,
  },
  {
    version: 12,
    name: "the variant the records serve, noted at their first start",
    // Records made before it have only ever served one variant: the next start notes the one it serves.
    sqlite: `
      CREATE TABLE records_variant (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        variant TEXT NOT NULL,
        noted INTEGER NOT NULL
      ) STRICT;
    `,
    postgres: `
      CREATE TABLE records_variant (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        variant TEXT NOT NULL,
        noted BIGINT NOT NULL
      );
    `,
  },
  {
    version: 13,
    name: "a mirror's compact revocations (licence-level), its snapshot staged on disk, its vendor's public keys",
    sqlite: `
      ALTER TABLE mirror_revocations ADD COLUMN license_id TEXT;
      ALTER TABLE mirror_revocations ADD COLUMN covered INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE mirror_revocations ADD COLUMN issued_before INTEGER;
      CREATE INDEX mirror_revocations_by_license ON mirror_revocations(license_id) WHERE license_id IS NOT NULL;
      CREATE TABLE mirror_snapshot_revocations (
        kind TEXT NOT NULL CHECK (kind IN ('activation', 'license')),
        id TEXT NOT NULL,
        valid_until INTEGER NOT NULL,
        license_id TEXT,
        PRIMARY KEY (kind, id)
      ) STRICT;
      CREATE TABLE mirror_snapshot_expiries (
        license_id TEXT PRIMARY KEY,
        expires INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE mirror_vendor_keys (
        kid TEXT PRIMARY KEY,
        spki TEXT NOT NULL,
        learned INTEGER NOT NULL
      ) STRICT;
    `,
    postgres: `
      ALTER TABLE mirror_revocations ADD COLUMN license_id TEXT;
      ALTER TABLE mirror_revocations ADD COLUMN covered INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE mirror_revocations ADD COLUMN issued_before BIGINT;
      CREATE INDEX mirror_revocations_by_license ON mirror_revocations(license_id) WHERE license_id IS NOT NULL;
      CREATE TABLE mirror_snapshot_revocations (
        kind TEXT NOT NULL CHECK (kind IN ('activation', 'license')),
        id TEXT NOT NULL,
        valid_until BIGINT NOT NULL,
        license_id TEXT,
        PRIMARY KEY (kind, id)
      );
      CREATE TABLE mirror_snapshot_expiries (
        license_id TEXT PRIMARY KEY,
        expires BIGINT NOT NULL
      );
      CREATE TABLE mirror_vendor_keys (
        kid TEXT PRIMARY KEY,
        spki TEXT NOT NULL,
        learned BIGINT NOT NULL
      );
    `,
  },
  {
    version: 14,
    name: "stats counted a slice at a time: rollout buckets stored once, an index for the licences expiring",
    // GET /admin/stats hashed every installation of a lane once per ramping release on each request
    // (issue 34). An installation's bucket for a release never changes (src/domain/releases/rollout.ts),
    // so it is stored the first time it is counted and compared in SQL afterwards; releases are
    // numbered so a bucket row holds two integers and an id, not the lane and version again; keyed
    // by installation first, so one seek per installation reads its buckets of every release. The day
    // counts read the audit trail a day at a time through audit_by_time: an index of their own
    // would be one more b-tree write in every activation. activations_by_last_seen (migration 4)
    // served only the stats' whole-table count, now read by id a slice at a time; each sighting
    // moved its entry (a random page written per installation seen, every 30 s). A deactivated
    // installation is never counted: its buckets go with it (one keyed delete per deactivation).
    sqlite: `
      CREATE TABLE rollout_releases (
        no INTEGER PRIMARY KEY,
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        UNIQUE (lane, version)
      ) STRICT;
      CREATE TABLE rollout_buckets (
        release_no INTEGER NOT NULL,
        activation_id TEXT NOT NULL,
        bucket INTEGER NOT NULL,
        PRIMARY KEY (activation_id, release_no)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX licenses_expiring ON licenses(expires, id) WHERE kind = 'license' AND revoked IS NULL;
      DROP INDEX activations_by_last_seen;
      CREATE TRIGGER activations_buckets_freed AFTER UPDATE OF deactivated ON activations
        WHEN OLD.deactivated IS NULL AND NEW.deactivated IS NOT NULL
      BEGIN DELETE FROM rollout_buckets WHERE activation_id = OLD.id; END;
      CREATE TRIGGER activations_buckets_deleted AFTER DELETE ON activations
      BEGIN DELETE FROM rollout_buckets WHERE activation_id = OLD.id; END;
    `,
    postgres: `
      CREATE TABLE rollout_releases (
        no BIGSERIAL PRIMARY KEY,
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        UNIQUE (lane, version)
      );
      CREATE TABLE rollout_buckets (
        release_no BIGINT NOT NULL,
        activation_id TEXT NOT NULL,
        bucket BIGINT NOT NULL,
        PRIMARY KEY (activation_id, release_no)
      );
      CREATE INDEX licenses_expiring ON licenses(expires, id) WHERE kind = 'license' AND revoked IS NULL;
      DROP INDEX activations_by_last_seen;
      CREATE FUNCTION keyturn_drop_rollout_buckets() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' OR (OLD.deactivated IS NULL AND NEW.deactivated IS NOT NULL) THEN
          DELETE FROM rollout_buckets WHERE activation_id = OLD.id;
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER activations_drop_rollout_buckets
        AFTER DELETE OR UPDATE OF deactivated ON activations
        FOR EACH ROW EXECUTE FUNCTION keyturn_drop_rollout_buckets();
    `,
  },
  {
    version: 15,
    name: "licenses.updates_until and licenses.features: a maintenance window and features (docs/licence-models.md)",
    // Both NULL on every licence so far: such a licence answers exactly as before (no claim, no field).
    // features holds the list as typed, in JSON, since it is read and written whole with its licence.
    sqlite: `
      ALTER TABLE licenses ADD COLUMN updates_until INTEGER;
      ALTER TABLE licenses ADD COLUMN features TEXT;
    `,
    postgres: `
      ALTER TABLE licenses ADD COLUMN updates_until BIGINT;
      ALTER TABLE licenses ADD COLUMN features TEXT;
    `,
  },
  {
    version: 16,
    name: "meters on licences (limit, period, use in the current window), usage idempotency keys, trials by device",
    // A meter is its own row, locked (PostgreSQL) or written under the write lock (SQLite) by each use,
    // as a seat is: never below zero across processes. A use's answer is kept under its licence and
    // idempotency key for 24 h, so a retried use is answered the first answer and counted once. A
    // trial is keyed by the device hash: a second start finds the first.
    sqlite: `
      CREATE TABLE license_meters (
        license_id TEXT NOT NULL REFERENCES licenses(id),
        name TEXT NOT NULL,
        lim INTEGER NOT NULL,
        period INTEGER,
        window_start INTEGER NOT NULL,
        used INTEGER NOT NULL,
        PRIMARY KEY (license_id, name)
      ) STRICT;
      CREATE TABLE meter_uses (
        license_id TEXT NOT NULL,
        key TEXT NOT NULL,
        meter TEXT NOT NULL,
        amount INTEGER NOT NULL,
        answer TEXT NOT NULL,
        created INTEGER NOT NULL,
        PRIMARY KEY (license_id, key)
      ) STRICT;
      CREATE INDEX meter_uses_by_created ON meter_uses(created);
      CREATE TABLE trials (
        device_hash TEXT PRIMARY KEY,
        license_id TEXT NOT NULL REFERENCES licenses(id),
        started INTEGER NOT NULL,
        converted INTEGER,
        converted_to TEXT
      ) STRICT;
      CREATE INDEX trials_by_started ON trials(started);
      CREATE INDEX trials_by_license ON trials(license_id);
    `,
    postgres: `
      CREATE TABLE license_meters (
        license_id TEXT NOT NULL REFERENCES licenses(id),
        name TEXT NOT NULL,
        lim BIGINT NOT NULL,
        period BIGINT,
        window_start BIGINT NOT NULL,
        used BIGINT NOT NULL,
        PRIMARY KEY (license_id, name)
      );
      CREATE TABLE meter_uses (
        license_id TEXT NOT NULL,
        key TEXT NOT NULL,
        meter TEXT NOT NULL,
        amount BIGINT NOT NULL,
        answer TEXT NOT NULL,
        created BIGINT NOT NULL,
        PRIMARY KEY (license_id, key)
      );
      CREATE INDEX meter_uses_by_created ON meter_uses(created);
      CREATE TABLE trials (
        device_hash TEXT PRIMARY KEY,
        license_id TEXT NOT NULL REFERENCES licenses(id),
        started BIGINT NOT NULL,
        converted BIGINT,
        converted_to TEXT
      );
      CREATE INDEX trials_by_started ON trials(started);
      CREATE INDEX trials_by_license ON trials(license_id);
    `,
  },
  {
    version: 17,
    name: "mail outbox; licences found by e-mail address (portal sign-in by link)",
    // A mail is written in the transaction of the change that causes it (a licence created, a key
    // reissued) and sent by a worker that leases it, as webhook deliveries are (src/domain/mail/worker.ts).
    // `body` is sealed (it may hold a licence key or a sign-in link); `dedupe` makes a reminder written
    // by two processes at once one mail.
    sqlite: `
      CREATE TABLE mail_outbox (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        license_id TEXT,
        recipient TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        dedupe TEXT UNIQUE,
        resend_of TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt INTEGER NOT NULL,
        last_attempt INTEGER,
        last_error TEXT,
        sent INTEGER,
        lease_owner TEXT,
        lease_until INTEGER,
        created INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt) WHERE status = 'pending';
      CREATE INDEX mail_outbox_by_created ON mail_outbox(created, id);
      CREATE INDEX mail_outbox_by_license ON mail_outbox(license_id) WHERE license_id IS NOT NULL;
      CREATE INDEX licenses_by_email ON licenses(lower(email)) WHERE email IS NOT NULL;
    `,
    postgres: `
      CREATE TABLE mail_outbox (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        license_id TEXT,
        recipient TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        dedupe TEXT UNIQUE,
        resend_of TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt BIGINT NOT NULL,
        last_attempt BIGINT,
        last_error TEXT,
        sent BIGINT,
        lease_owner TEXT,
        lease_until BIGINT,
        created BIGINT NOT NULL
      );
      CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt) WHERE status = 'pending';
      CREATE INDEX mail_outbox_by_created ON mail_outbox(created, id);
      CREATE INDEX mail_outbox_by_license ON mail_outbox(license_id) WHERE license_id IS NOT NULL;
      CREATE INDEX licenses_by_email ON licenses(lower(email)) WHERE email IS NOT NULL;
    `,
  },
  {
    version: 18,
    name: "commerce bridges: the provider events received (one row each, so a replay applies nothing twice) the provider ids that lead to a licence (or to another id that does), and the e-mail of a provider's customer (Paddle names buyers by id)",
    sqlite: `
      CREATE TABLE bridge_events (
        provider TEXT NOT NULL,
        event_id TEXT NOT NULL,
        type TEXT NOT NULL,
        received INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        detail TEXT NOT NULL,
        license_id TEXT,
        replays INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (provider, event_id)
      ) STRICT;
      CREATE INDEX bridge_events_by_received ON bridge_events(received, provider, event_id);
      CREATE TABLE bridge_links (
        provider TEXT NOT NULL,
        reference TEXT NOT NULL,
        license_id TEXT,
        alias TEXT,
        PRIMARY KEY (provider, reference)
      ) STRICT, WITHOUT ROWID;
      CREATE TABLE bridge_customers (
        provider TEXT NOT NULL,
        customer TEXT NOT NULL,
        email TEXT NOT NULL,
        updated INTEGER NOT NULL,
        PRIMARY KEY (provider, customer)
      ) STRICT, WITHOUT ROWID;
    `,
    postgres: `
      CREATE TABLE bridge_events (
        provider TEXT NOT NULL,
        event_id TEXT NOT NULL,
        type TEXT NOT NULL,
        received BIGINT NOT NULL,
        outcome TEXT NOT NULL,
        detail TEXT NOT NULL,
        license_id TEXT,
        replays INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (provider, event_id)
      );
      CREATE INDEX bridge_events_by_received ON bridge_events(received, provider, event_id);
      CREATE TABLE bridge_links (
        provider TEXT NOT NULL,
        reference TEXT NOT NULL,
        license_id TEXT,
        alias TEXT,
        PRIMARY KEY (provider, reference)
      );
      CREATE TABLE bridge_customers (
        provider TEXT NOT NULL,
        customer TEXT NOT NULL,
        email TEXT NOT NULL,
        updated BIGINT NOT NULL,
        PRIMARY KEY (provider, customer)
      );
    `,
  },
  {
    version: 22,
    name: "install outcome reports per installation and release; the rule that halted a release by itself",
    // One row per installation and release: its latest outcome (a retried install is one
    // installation, not several failures), so a release's failure rate is a share of installations.
    // Keyed by release first: the counts and the automatic halt read one release's rows.
    sqlite: `
      CREATE TABLE install_reports (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        activation_id TEXT NOT NULL,
        device_hash TEXT NOT NULL,
        from_version TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('installed', 'failed', 'rolled-back')),
        code TEXT,
        reported INTEGER NOT NULL,
        PRIMARY KEY (lane, version, activation_id)
      ) STRICT, WITHOUT ROWID;
      ALTER TABLE release_controls ADD COLUMN halt_rule TEXT;
    `,
    postgres: `
      CREATE TABLE install_reports (
        lane TEXT NOT NULL,
        version TEXT NOT NULL,
        activation_id TEXT NOT NULL,
        device_hash TEXT NOT NULL,
        from_version TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('installed', 'failed', 'rolled-back')),
        code TEXT,
        reported BIGINT NOT NULL,
        PRIMARY KEY (lane, version, activation_id)
      );
      ALTER TABLE release_controls ADD COLUMN halt_rule TEXT;
    `,
  },
  {
    version: 23,
    name: "a licence's activations through one index, its held seats by last sighting within it",
    // Every activation wrote a random page of each index that begins with its licence; two of those
    // (all of a licence's activations; its held seats by last sighting) are one index with
    // deactivated between them. On a million licences that was a fifth fewer pages for each
    // checkpoint to sync: 14-45 % more activations a second, activate p99 0.3-1.1 ms lower
    // (bench/README.md, "4a and 5a, seventh round"). PostgreSQL's reclaim orders by deactivated
    // first to use the index's order (postgres.ts); its build holds writes to activations meanwhile.
    sqlite: `
      CREATE INDEX activations_by_license_state ON activations(license_id, deactivated, last_seen);
      DROP INDEX activations_by_license;
      DROP INDEX activations_held_by_seen;
    `,
    postgres: `
      CREATE INDEX activations_by_license_state ON activations(license_id, deactivated, last_seen);
      DROP INDEX activations_by_license;
      DROP INDEX activations_held_by_seen;
    `,
  },
  {
    version: 24,
    name: "an activation's licence indexed once while its seat is held, once after it ends (SQLite; PostgreSQL unchanged)",
    // Each index that begins with the licence costs every new seat a page at a random place, which a
    // checkpoint then syncs while requests wait: activate's tail at a million licences is those
    // checkpoints. A held seat is already in the unique index of held seats; the second index now
    // holds only ended ones, so taking a seat writes one page fewer and a sighting (last_seen)
    // none of an index. A licence's whole history is one search of each (sqlite.ts,
    // licenseActivations); the reclaim reads the held seats' rows, which only a full licence does
    // (bench/README.md, "4a and 5a, sixteenth round"). PostgreSQL keeps migration 23's index: its
    // checkpoints run in a process of their own, and its reclaim reads that index's order.
    sqlite: `
      CREATE INDEX activations_by_license_ended ON activations(license_id) WHERE deactivated IS NOT NULL;
      DROP INDEX activations_by_license_state;
    `,
    postgres: "SELECT 1",
  },
  {
    version: 25,
    name: "a granted seat's audit line found through its activation, not indexed by licence (SQLite; PostgreSQL unchanged)",
    // The audit's index by licence took a page at a random place from every seat granted. A granted
    // seat's line (action 'activate', outcome 'ok', written in the transaction that takes the seat
    // it names) is found through that activation instead: the licence's activations (migration 24's
    // two indexes), then each one's lines by audit_by_activation, whose keys are time-ordered ids
    // and grow at its end (sqlite.ts, auditSearch). Every other line, refusals included, stays in
    // this index. Activations are never deleted, so no granted seat's line is lost to the search.
    // PostgreSQL keeps its index.
    sqlite: `
      CREATE INDEX audit_by_license_but_seats ON audit(license_id, time)
        WHERE activation_id IS NULL OR action <> 'activate' OR outcome <> 'ok';
      DROP INDEX audit_by_license;
    `,
    postgres: "SELECT 1",
  },
];
