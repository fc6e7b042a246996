import type { SQL } from "bun";
import type { AuditRecord, LicenseRecord, NewEvent } from "./types";

/**
 * What the PostgreSQL store lends the modules that keep their own tables (meters, trials): the
 * connection pool, and the writes they share with the store, each inside the caller's transaction.
 */
export interface PostgresWriter {
  readonly sql: SQL;
  insertAudit(tx: SQL, line: AuditRecord): Promise<void>;
  /** An outbox event (written only when the feed carries it or an endpoint subscribes to it). */
  insertEvent(tx: SQL, event: NewEvent): Promise<void>;
  insertLicense(tx: SQL, license: LicenseRecord): Promise<void>;
}
