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
];
