import type { SQL } from "bun";
import { licenseFromRow } from "./rows";
import type { AuditRecord, LicenseRecord, MailableLicences } from "./types";
import type { MailFilter, MailKind, MailOutcome, MailRecord, MailStore, NewMail } from "./mail-types";
import { mailFromRow } from "./sqlite-mail";

/** Writes one mail, in the transaction `tx` when it is one (PostgresStore's Journal.mail). False when its dedupe was taken. */
export async function insertMailPostgres(tx: SQL, m: NewMail): Promise<boolean> {
  const r = await tx`INSERT INTO mail_outbox (id, kind, license_id, recipient, subject, body, dedupe, resend_of, status, next_attempt, created)
    VALUES (${m.id}, ${m.kind}, ${m.licenseId}, ${m.recipient}, ${m.subject}, ${m.body}, ${m.dedupe ?? null}, ${m.resendOf ?? null},
      'pending', ${m.created}, ${m.created}) ON CONFLICT (dedupe) DO NOTHING`;
  return r.count === 1;
}

/** The outbox in PostgreSQL; a mail is leased by one process at a time (FOR UPDATE SKIP LOCKED). */
export class PostgresMailStore implements MailStore {
  constructor(private readonly sql: SQL) {}

  async enqueueMail(mails: readonly NewMail[], audit?: AuditRecord): Promise<NewMail[]> {
    return this.sql.begin(async (tx) => {
      if (audit)
        await tx`INSERT INTO audit (ref, time, address, action, activation_id, license_id, outcome, error, actor)
          VALUES (${audit.ref}, ${audit.time}, ${audit.address}, ${audit.action}, ${audit.activationId}, ${audit.licenseId}, ${audit.outcome}, ${audit.error}, ${audit.actor ?? null})`;
      const written: NewMail[] = [];
      for (const m of mails) if (await insertMailPostgres(tx, m)) written.push(m);
      return written;
    });
  }

  async claimMail(now: number, leaseUntil: number, owner: string, limit: number): Promise<MailRecord[]> {
    const rows = await this.sql`UPDATE mail_outbox SET lease_owner = ${owner}, lease_until = ${leaseUntil} WHERE id IN (
        SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt <= ${now} AND (lease_until IS NULL OR lease_until < ${now})
        ORDER BY next_attempt, id LIMIT ${limit} FOR UPDATE SKIP LOCKED) RETURNING *`;
    return rows.map(mailFromRow).sort((a: MailRecord, b: MailRecord) => a.nextAttempt - b.nextAttempt || (a.id < b.id ? -1 : 1));
  }

  async recordMailAttempt(id: string, owner: string, o: MailOutcome): Promise<boolean> {
    const r = await this.sql`UPDATE mail_outbox SET status = ${o.status}, attempts = attempts + 1, last_attempt = ${o.time},
        next_attempt = ${o.status === "pending" ? o.nextAttempt : o.time}, last_error = ${o.status === "sent" ? null : o.error},
        sent = ${o.status === "sent" ? o.time : null}, lease_owner = NULL, lease_until = NULL
      WHERE id = ${id} AND lease_owner = ${owner} AND status = 'pending'`;
    return r.count === 1;
  }

  async getMail(id: string): Promise<MailRecord | null> {
    const [r] = await this.sql`SELECT * FROM mail_outbox WHERE id = ${id}`;
    return r ? mailFromRow(r) : null;
  }

  async listMail(f: MailFilter): Promise<MailRecord[]> {
    const license = f.licenseId ?? null;
    const bc = f.before?.created ?? null;
    const bi = f.before?.id ?? null;
    const rows = await this.sql`SELECT * FROM mail_outbox
      WHERE (${license}::text IS NULL OR license_id = ${license})
        AND (${bc}::bigint IS NULL OR created < ${bc} OR (created = ${bc} AND id < ${bi}))
      ORDER BY created DESC, id DESC LIMIT ${f.limit}`;
    return rows.map(mailFromRow);
  }

  async licenseIdsOfEmail(email: string, limit: number, without?: string): Promise<string[]> {
    const rows = await this.sql`SELECT id FROM licenses WHERE lower(email) = lower(${email}) AND email IS NOT NULL AND kind = 'license'
      AND (${without ?? null}::text IS NULL OR (metadata::jsonb ->> ${without ?? ""}) IS DISTINCT FROM 'true')
      ORDER BY issued, id LIMIT ${limit}`;
    return rows.map((r: { id: string }) => r.id);
  }

  async licensesUpdatesEnding(from: number, to: number, limit: number, mailable?: MailableLicences): Promise<LicenseRecord[]> {
    const rows = await this.sql`SELECT * FROM licenses WHERE kind = 'license' AND revoked IS NULL AND email IS NOT NULL
      AND updates_until >= ${from} AND updates_until < ${to}
      AND (${mailable?.without ?? null}::text IS NULL OR (metadata::jsonb ->> ${mailable?.without ?? ""}) IS NULL
        OR (metadata::jsonb ->> ${mailable?.unless ?? ""}) IS NOT NULL)
      ORDER BY updates_until, id LIMIT ${limit}`;
    return rows.map(licenseFromRow);
  }

  async countMailSince(recipient: string, kind: MailKind, since: number): Promise<number> {
    const [r] = await this.sql`SELECT count(*) AS n FROM mail_outbox WHERE kind = ${kind} AND lower(recipient) = lower(${recipient}) AND created >= ${since}`;
    return Number(r.n);
  }

  async pruneMail(before: number): Promise<number> {
    const r = await this.sql`DELETE FROM mail_outbox WHERE status <> 'pending' AND created < ${before}`;
    return r.count;
  }
}
