import type { Logger } from "../config/log";
import type { AdminDeps } from "./admin/deps";
import type { Clock } from "./clock";
import { PORTAL_LINK_MS, type ConsoleSessions, type Session } from "./console-sessions";
import { TRIAL_MARK } from "./trial-mark";
import { KeyturnError } from "./errors";
import { portalLink } from "./mail/templates";

/** Links mailed to one address within PORTAL_LINK_MS at most: the sign-in budget is per client, and many clients could flood one mailbox. */
export const LINKS_PER_ADDRESS = 3;
/** The licences one address signs in to at most. */
export const LICENCES_PER_ADDRESS = 50;
const ADDRESS = /^[^\s@<>()",;:\\[\]\u0000-\u001f\u007f]{1,64}@[^\s@<>()",;:\\[\]\u0000-\u001f\u007f]{1,190}$/;

/** An e-mail address as the sign-in form takes it: trimmed, one address, at most 254 characters. */
export function emailAddressOf(value: unknown): string {
  const text = typeof value === "string" ? value.trim() : "";
  if (text.length > 254 || !ADDRESS.test(text)) throw new KeyturnError("invalid_request", "Type one e-mail address, like name@example.com.");
  return text;
}

export interface PortalLinkDeps {
  readonly admin: AdminDeps;
  readonly sessions: ConsoleSessions;
  readonly clock: Clock;
  readonly baseUrl: string;
  readonly log: Logger;
}

/**
 * A customer asks for a sign-in link. The answer is the same whether or not the address has a
 * licence here, and comes before anything is looked up: what follows (a lookup, a link kept hashed,
 * a mail in the outbox) happens after it, so neither the words nor the time of the answer tell.
 * Answers the work's promise (tests wait on it; the page does not).
 */
export function requestPortalLink(d: PortalLinkDeps, email: string): Promise<boolean> {
  const mail = d.admin.mail;
  if (!mail) throw new KeyturnError("not_found", "Sign-in by e-mail is not offered on this site.");
  const work = (async () => {
    await new Promise((r) => setImmediate(r));
    const licences = await mail.d.store.licenseIdsOfEmail(email, 1, TRIAL_MARK);
    if (licences.length === 0) return false;
    if ((await mail.d.store.countMailSince(email, "portal-link", d.clock() - PORTAL_LINK_MS)) >= LINKS_PER_ADDRESS) return false;
    const secret = await d.sessions.beginPortalLink(email);
    const url = `${d.baseUrl.replace(/\/+$/, "")}/portal/link?token=${secret}`;
    await mail.d.store.enqueueMail([await mail.compose("portal-link", null, email, portalLink(mail.site, url, PORTAL_LINK_MS / 60_000))]);
    return true;
  })();
  work.catch((e: unknown) => d.log.warn("portal sign-in link not made", { error: String(e) }));
  return work;
}

/**
 * The licences a portal session may act on: the one it signed in with by key, or every licence of
 * its address but trials. A trial is reached only through its device (trials.ts): the address it
 * was started with was never confirmed, and its key is never shown to anyone.
 */
export async function licencesOfSession(admin: AdminDeps, session: Session): Promise<string[]> {
  if (session.licenseId !== null) return [session.licenseId];
  const email = session.subject?.startsWith("email:") ? session.subject.slice("email:".length) : null;
  if (!email || !admin.mail) return [];
  return admin.mail.d.store.licenseIdsOfEmail(email, LICENCES_PER_ADDRESS, TRIAL_MARK);
}

/** The licence a portal request names, if the session may act on it; not_found otherwise (another customer's licence is not theirs to see). */
export async function portalLicenceOf(admin: AdminDeps, session: Session, named: unknown): Promise<string> {
  const mine = await licencesOfSession(admin, session);
  const id = typeof named === "string" && named !== "" ? named : session.licenseId;
  if (id === null || !mine.includes(id)) throw new KeyturnError("not_found", "No such licence under your sign-in.");
  return id;
}
