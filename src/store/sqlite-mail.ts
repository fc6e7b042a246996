import type { Database } from "bun:sqlite";
import { metadataPath, metadataPaths } from "./sqlite-metadata";
import { licenseFromRow } from "./rows";
import type { AuditRecord, LicenseRecord, MailableLicences } from "./types";
import type { MailFilter, MailKind, MailOutcome, MailRecord, MailStore, NewMail } from "./mail-types";

type Row = Record<string, unknown>;

const INSERT = `INSERT INTO mail_outbox (id, kind, license_id, recipient, subject, body, dedupe, resend_of, status, next_attempt, created)
  VALUES ($id, $kind, $licenseId, $recipient, $subject, $body, $dedupe, $resendOf, 'pending', $created, $created) ON CONFLICT (dedupe) DO NOTHING`;

/** Writes one mail; inside the caller's transaction when there is one (SqliteStore's Journal.mail). False when its dedupe was taken. */
export function insertMailSqlite(db: Database, m: NewMail): boolean {
  return (
    db.query(INSERT).run({
      id: m.id,
      kind: m.kind,
      licenseId: m.licenseId,
      recipient: m.recipient,
      subject: m.subject,
      body: m.body,
      dedupe: m.dedupe ?? null,
      resendOf: m.resendOf ?? null,
      created: m.created,
    }).changes === 1
  );
}

export function mailFromRow(r: Row): MailRecord {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    kind: r.kind as MailRecord["kind"],
    licenseId: (r.license_id as string | null) ?? null,
    recipient: r.recipient as string,
    subject: r.subject as string,
    body: r.body as string,
    dedupe: (r.dedupe as string | null) ?? null,
    resendOf: (r.resend_of as string | null) ?? null,
    created: Number(r.created),
    status: r.status as MailRecord["status"],
    attempts: Number(r.attempts),
    nextAttempt: Number(r.next_attempt),
    lastAttempt: n(r.last_attempt),
    lastError: (r.last_error as string | null) ?? null,
    sent: n(r.sent),
  };
}

/**
 * The outbox in the SQLite records. Its writes are short transactions of their own: SqliteStore's
 * group commit opens and closes its transaction within one synchronous call, so none is open when
 * these run.
 */
export class SqliteMailStore implements MailStore {
  constructor(private readonly db: Database) {}

  async enqueueMail(mails: readonly NewMail[], audit?: AuditRecord): Promise<NewMail[]> {
    return this.db
      .transaction(() => {
        if (audit)
          this.db
            .query(`INSERT INTO audit (ref, time, address, action, activation_id, license_id, outcome, error, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
            .run(audit.ref, audit.time, audit.address, audit.action, audit.activationId, audit.licenseId, audit.outcome, audit.error, audit.actor ?? null);
        return mails.filter((m) => insertMailSqlite(this.db, m));
      })
      .immediate();
  }

  async claimMail(now: number, leaseUntil: number, owner: string, limit: number): Promise<MailRecord[]> {
    const rows = this.db
      .transaction(
        () =>
          this.db
            .query(`UPDATE mail_outbox SET lease_owner = $owner, lease_until = $leaseUntil WHERE id IN (
              SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt <= $now AND (lease_until IS NULL OR lease_until < $now)
              ORDER BY next_attempt, id LIMIT $limit) RETURNING *`)
            .all({ owner, leaseUntil, now, limit }) as Row[],
      )
      .immediate();
    return rows.map(mailFromRow).sort((a, b) => a.nextAttempt - b.nextAttempt || (a.id < b.id ? -1 : 1));
  }

  async recordMailAttempt(id: string, owner: string, o: MailOutcome): Promise<boolean> {
    const r = this.db
      .query(`UPDATE mail_outbox SET status = $status, attempts = attempts + 1, last_attempt = $time,
          next_attempt = $next, last_error = $error, sent = $sent, lease_owner = NULL, lease_until = NULL
        WHERE id = $id AND lease_owner = $owner AND status = 'pending'`)
      .run({
        status: o.status,
        time: o.time,
        next: o.status === "pending" ? o.nextAttempt : o.time,
        error: o.status === "sent" ? null : o.error,
        sent: o.status === "sent" ? o.time : null,
        id,
        owner,
      });
    return r.changes === 1;
  }

  async getMail(id: string): Promise<MailRecord | null> {
    const r = this.db.query("SELECT * FROM mail_outbox WHERE id = ?").get(id) as Row | null;
    return r ? mailFromRow(r) : null;
  }

  async listMail(f: MailFilter): Promise<MailRecord[]> {
    const where: string[] = [];
    const params: Record<string, string | number> = { limit: f.limit };
    if (f.licenseId) where.push("license_id = $license"), (params.license = f.licenseId);
    if (f.before) {
      where.push("(created < $bc OR (created = $bc AND id < $bi))");
      params.bc = f.before.created;
      params.bi = f.before.id;
    }
    const sql = `SELECT * FROM mail_outbox ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created DESC, id DESC LIMIT $limit`;
    return (this.db.query(sql).all(params) as Row[]).map(mailFromRow);
  }

  async licenseIdsOfEmail(email: string, limit: number, without?: string): Promise<string[]> {
    const rows = this.db
      .query(`SELECT id FROM licenses WHERE lower(email) = lower(?) AND email IS NOT NULL AND kind = 'license'
        AND (? IS NULL OR json_extract(metadata, ?) IS NOT 'true') ORDER BY issued, id LIMIT ?`)
      .all(email, without ?? null, metadataPath(without), limit) as Row[];
    return rows.map((r) => r.id as string);
  }

  async licensesUpdatesEnding(from: number, to: number, limit: number, mailable?: MailableLicences): Promise<LicenseRecord[]> {
    const rows = this.db
      .query(`SELECT * FROM licenses WHERE kind = 'license' AND revoked IS NULL AND email IS NOT NULL
        AND updates_until >= ? AND updates_until < ? AND (? IS NULL OR json_extract(metadata, ?) IS NULL OR json_extract(metadata, ?) IS NOT NULL)
        ORDER BY updates_until, id LIMIT ?`)
      .all(from, to, mailable?.without ?? null, ...metadataPaths(mailable), limit) as Row[];
    return rows.map(licenseFromRow);
  }

  async countMailSince(recipient: string, kind: MailKind, since: number): Promise<number> {
    const r = this.db
      .query("SELECT count(*) AS n FROM mail_outbox WHERE kind = ? AND lower(recipient) = lower(?) AND created >= ?")
      .get(kind, recipient, since) as Row;
    return Number(r.n);
  }

  async pruneMail(before: number): Promise<number> {
    return this.db.query("DELETE FROM mail_outbox WHERE status <> 'pending' AND created < ?").run(before).changes;
  }
}
