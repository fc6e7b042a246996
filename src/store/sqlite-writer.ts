import type { Database } from "bun:sqlite";
import type { AuditRecord, LicenseRecord, NewEvent } from "./types";

/**
 * What the SQLite store lends the modules that keep their own tables (meters, trials): the
 * database, its group commit (each write runs under the write lock, BEGIN IMMEDIATE, so no other
 * process writes between its read and its write) and the writes they share with the store.
 * Statements inside `write` must be synchronous and safe to run twice (sqlite-group-commit.ts).
 */
export interface SqliteWriter {
  readonly db: Database;
  write<T>(write: () => T): Promise<T>;
  insertAudit(line: AuditRecord): void;
  /** An outbox event (written only when the feed carries it or an endpoint subscribes to it). */
  insertEvent(event: NewEvent): void;
  insertLicense(license: LicenseRecord): void;
}
