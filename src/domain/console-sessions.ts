import type { AuditRecord, ConsoleSessionRecord, Store } from "../store/types";
import type { Scope } from "./admin/deps";
import { authenticateAdmin } from "./admin/tokens";
import type { Clock } from "./clock";
import { KeyturnError } from "./errors";
import { randomBase32, sha256Hex } from "./ids";

/** A console session lasts a working day; a portal session is short (the customer does one errand). */
export const CONSOLE_SESSION_MS = 8 * 3600_000;
export const PORTAL_SESSION_MS = 30 * 60_000;
/** A portal sign-in link mailed to a customer works once, within this. */
export const PORTAL_LINK_MS = 15 * 60_000;
/** An OpenID sign-in must come back from the issuer within this. */
export const PENDING_SIGN_IN_MS = 10 * 60_000;

const SECRET = /^[0-9A-Z]{32}$/;

/** A session as the console and portal pages see it. */
export interface Session {
  /** Names the session to an admin who lists and ends sessions (`cs_…`); not the cookie's secret. */
  readonly id: string;
  readonly kind: "console" | "portal";
  /** Names the actor of audit lines: the admin token, the staff subject, or the license. */
  readonly tokenId: string | null;
  readonly subject: string | null;
  readonly licenseId: string | null;
  readonly name: string;
  /** An admin token's scopes, or those a staff member's groups give under today's --console-groups. */
  readonly scopes: readonly Scope[];
  /** A staff session's groups as the issuer asserted them at sign-in; null for an admin token's. */
  readonly groups: readonly string[] | null;
  /** The per-session token every form carries (derived from the cookie's secret, never stored). */
  readonly csrf: string;
  readonly expires: number;
}

/** What an OpenID sign-in under way keeps server-side between the redirect and the callback. */
export interface PendingSignIn {
  readonly verifier: string;
  readonly nonce: string;
}

const hashOf = (secret: string) => sha256Hex(`keyturn-session\0${secret}`);
const csrfOf = (secret: string) => sha256Hex(`keyturn-csrf\0${secret}`);

/** The console sessions an admin may list at once (a site's staff, signed in within a working day). */
export const MAX_LISTED_SESSIONS = 1000;
const PUBLIC_ID = /^cs_[0-9a-f]{24}$/;
/** 96 bits of the stored hash: enough to name one session, and not the secret nor its whole hash. */
const publicIdOf = (idHash: string) => `cs_${idHash.slice(0, 24)}`;

/** What an admin sees of a console session (list, console page): never its secret. */
export interface ConsoleSessionView {
  readonly id: string;
  /** `token`: opened with an admin token; `staff`: a staff member through the OpenID issuer. */
  readonly kind: "token" | "staff";
  readonly name: string;
  readonly tokenId: string | null;
  readonly subject: string | null;
  readonly groups: readonly string[] | null;
  /** The scopes it holds now (a staff session's from today's --console-groups). */
  readonly scopes: readonly Scope[];
  readonly created: number;
  readonly expires: number;
}

/** The scopes a staff member's groups give under a --console-groups mapping (none: no console). */
export function scopesOfGroups(mapping: ReadonlyMap<string, readonly Scope[]>, groups: readonly string[]): Scope[] {
  return [...new Set(groups.flatMap((g) => mapping.get(g) ?? []))];
}

/**
 * Console and portal sessions, kept server-side: the browser holds only a random secret in a
 * cookie, the store its hash, the expiry and the revocation. A console session opened with an
 * admin token ends when the token is revoked (the store revokes both in one transaction) and never
 * outlives the token. A staff session keeps the person's groups, not scopes: each use maps them
 * with this process's --console-groups, so a group taken out of the mapping (and the site
 * restarted) ends what it gave; it never outlives the issuer's ID token (see signInStaff).
 */
export class ConsoleSessions {
  private readonly consoleGroups: ReadonlyMap<string, readonly Scope[]>;

  constructor(private readonly deps: { store: Store; clock: Clock; consoleGroups?: ReadonlyMap<string, readonly Scope[]> }) {
    this.consoleGroups = deps.consoleGroups ?? new Map();
  }

  /** Opens a console session with an admin token; admin_token_invalid as the API answers it. */
  async signInWithToken(token: unknown): Promise<{ secret: string; session: Session }> {
    const principal = await authenticateAdmin(this.deps, typeof token === "string" ? token.trim() : token);
    const tokens = await this.deps.store.listAdminTokens();
    const record = tokens.find((t) => t.id === principal.tokenId);
    const now = this.deps.clock();
    const expires = Math.min(now + CONSOLE_SESSION_MS, record?.expires ?? Infinity);
    return this.open({
      kind: "console",
      tokenId: principal.tokenId,
      subject: null,
      licenseId: null,
      name: principal.name,
      scopes: principal.scopes,
      detail: null,
      expires,
    });
  }

  /**
   * Opens a console session for a staff member whose ID token was verified. It ends when the ID
   * token does (`notAfter`, its exp) if that comes before a working day: the issuer vouched for the
   * person until then, and a person disabled at the issuer cannot sign in again after it.
   */
  async signInStaff(subject: string, name: string, groups: readonly string[], notAfter: number): Promise<{ secret: string; session: Session }> {
    if (scopesOfGroups(this.consoleGroups, groups).length === 0)
      throw new KeyturnError("not_in_required_group", "None of your groups is given access to the console.");
    const now = this.deps.clock();
    if (notAfter <= now) throw new KeyturnError("token_invalid", "The ID token has expired: sign in again.");
    const expires = Math.min(now + CONSOLE_SESSION_MS, notAfter);
    return this.open({ kind: "console", tokenId: null, subject, licenseId: null, name, scopes: [], staffGroups: [...groups], detail: null, expires });
  }

  /** Opens a portal session for the license (found by its key by the caller). */
  async signInPortal(licenseId: string, name: string): Promise<{ secret: string; session: Session }> {
    const expires = this.deps.clock() + PORTAL_SESSION_MS;
    return this.open({ kind: "portal", tokenId: null, subject: null, licenseId, name, scopes: [], detail: null, expires });
  }

  /**
   * Opens a portal session for every licence under an e-mail address (the customer followed a
   * mailed link): the session names the address, not a licence, and the licences are looked up at
   * each request, so a licence given that address later is seen and one moved away is not.
   */
  async signInPortalEmail(email: string): Promise<{ secret: string; session: Session }> {
    const expires = this.deps.clock() + PORTAL_SESSION_MS;
    return this.open({ kind: "portal", tokenId: null, subject: `email:${email}`, licenseId: null, name: email, scopes: [], detail: null, expires });
  }

  /**
   * Keeps a portal sign-in link's secret, hashed like a session's, for PORTAL_LINK_MS; the secret
   * itself is only in the mail.
   */
  async beginPortalLink(email: string): Promise<string> {
    const secret = newSecret();
    await this.keepPending(hashOf(secret), { portalEmail: email }, PORTAL_LINK_MS);
    return secret;
  }

  /** Uses a sign-in link once: its address, or null when unknown, expired or used (of racing uses, one wins). */
  async takePortalLink(secret: string | null): Promise<string | null> {
    const detail = await this.takeOnce(secret, (d) => typeof (d as { portalEmail?: unknown }).portalEmail === "string");
    return detail && (detail as { portalEmail: string }).portalEmail;
  }

  /**
   * The live session of a cookie's secret of the kind asked; null when unknown, expired, revoked,
   * or a staff session whose groups give no scope any more.
   */
  async find(secret: string | null, kind: "console" | "portal"): Promise<Session | null> {
    if (secret === null || !SECRET.test(secret)) return null;
    const r = await this.deps.store.findConsoleSession(hashOf(secret));
    if (!r || r.kind !== kind || r.revoked !== null || r.expires <= this.deps.clock()) return null;
    const session = sessionOf(r, csrfOf(secret), this.scopesOf(r));
    return session.kind === "console" && session.scopes.length === 0 ? null : session;
  }

  /** The console sessions open now, newest first (at most MAX_LISTED_SESSIONS), with the scopes each holds now. */
  async list(): Promise<ConsoleSessionView[]> {
    return (await this.openRecords()).map((r) => this.viewOf(r));
  }

  /**
   * Ends an open console session named by its id (`cs_…`), with the audit line in the same
   * transaction; not_found when no open session has that id.
   */
  async end(id: string, audit: AuditRecord): Promise<ConsoleSessionView> {
    const record = PUBLIC_ID.test(id) ? (await this.openRecords()).find((r) => publicIdOf(r.idHash) === id) : undefined;
    if (!record || !(await this.deps.store.revokeConsoleSession(record.idHash, this.deps.clock(), audit)))
      throw new KeyturnError("not_found", "No open console session has this id.");
    return this.viewOf(record);
  }

  /** Ends a session at once (sign out); later requests with its cookie are signed out. */
  async revoke(secret: string | null): Promise<void> {
    if (secret !== null && SECRET.test(secret)) await this.deps.store.revokeConsoleSession(hashOf(secret), this.deps.clock());
  }

  /** Keeps an OpenID sign-in's PKCE verifier and nonce under the hash of its `state`. */
  async beginPending(state: string, pending: PendingSignIn): Promise<void> {
    await this.keepPending(hashOf(state), pending, PENDING_SIGN_IN_MS);
  }

  /** Takes a pending sign-in once (a replayed callback finds nothing); null when unknown or expired. */
  async takePending(state: string | null): Promise<PendingSignIn | null> {
    // A portal sign-in link is no OpenID state: it is left for the portal.
    return (await this.takeOnce(state, (d) => !("portalEmail" in d))) as PendingSignIn | null;
  }

  /** A pending record (an OpenID sign-in's state, a portal link) under `idHash`, with what it stands for, for `ttlMs`. */
  private async keepPending(idHash: string, detail: object, ttlMs: number): Promise<void> {
    const now = this.deps.clock();
    await this.deps.store.createConsoleSession({
      idHash,
      kind: "pending",
      tokenId: null,
      subject: null,
      licenseId: null,
      name: "",
      scopes: [],
      detail: JSON.stringify(detail),
      created: now,
      expires: now + ttlMs,
      revoked: null,
    });
  }

  /**
   * The detail of the live pending record of `secret` when `wanted` accepts it, ended in the same
   * step (of racing takes, one wins); null when unknown, expired, already taken or not wanted.
   */
  private async takeOnce(secret: string | null, wanted: (detail: object) => boolean): Promise<object | null> {
    if (secret === null || !SECRET.test(secret)) return null;
    const r = await this.deps.store.findConsoleSession(hashOf(secret));
    if (!r || r.kind !== "pending" || r.revoked !== null || r.expires <= this.deps.clock() || r.detail === null) return null;
    const detail = JSON.parse(r.detail) as object;
    if (!wanted(detail)) return null;
    return (await this.deps.store.revokeConsoleSession(r.idHash, this.deps.clock())) ? detail : null;
  }

  private async open(s: Omit<ConsoleSessionRecord, "idHash" | "created" | "revoked">): Promise<{ secret: string; session: Session }> {
    const secret = newSecret();
    const record: ConsoleSessionRecord = { ...s, idHash: hashOf(secret), created: this.deps.clock(), revoked: null };
    await this.deps.store.createConsoleSession(record);
    return { secret, session: sessionOf(record, csrfOf(secret), this.scopesOf(record)) };
  }

  private openRecords(): Promise<ConsoleSessionRecord[]> {
    return this.deps.store.listConsoleSessions(this.deps.clock(), MAX_LISTED_SESSIONS);
  }

  private viewOf(r: ConsoleSessionRecord): ConsoleSessionView {
    const scopes = this.scopesOf(r);
    return {
      id: publicIdOf(r.idHash),
      kind: r.tokenId === null ? "staff" : "token",
      name: r.name,
      tokenId: r.tokenId,
      subject: r.subject,
      groups: r.staffGroups ?? null,
      scopes,
      created: r.created,
      expires: r.expires,
    };
  }

  /** A staff session's scopes from its groups under this process's mapping; any other session's as stored. */
  private scopesOf(r: ConsoleSessionRecord): Scope[] {
    return r.staffGroups ? scopesOfGroups(this.consoleGroups, r.staffGroups) : (r.scopes as Scope[]);
  }
}

/** 160 random bits in Crockford base32, the form of every session secret and sign-in state. */
export function newSecret(): string {
  return randomBase32(32);
}

function sessionOf(r: ConsoleSessionRecord, csrf: string, scopes: readonly Scope[]): Session {
  return {
    id: publicIdOf(r.idHash),
    kind: r.kind === "portal" ? "portal" : "console",
    tokenId: r.tokenId,
    subject: r.subject,
    licenseId: r.licenseId,
    name: r.name,
    scopes,
    groups: r.staffGroups ?? null,
    csrf,
    expires: r.expires,
  };
}

/** Whether the session holds the scope (`admin` holds every scope). */
export function sessionHas(s: Session, scope: Scope): boolean {
  return s.scopes.includes(scope) || s.scopes.includes("admin");
}
