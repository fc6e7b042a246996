import type { ConsoleSessionRecord, Store } from "../store/types";
import type { Scope } from "./admin/deps";
import { authenticateAdmin } from "./admin/tokens";
import type { Clock } from "./clock";
import { KeyturnError } from "./errors";
import { randomBase32, sha256Hex } from "./ids";

/** A console session lasts a working day; a portal session is short (the customer does one errand). */
export const CONSOLE_SESSION_MS = 8 * 3600_000;
export const PORTAL_SESSION_MS = 30 * 60_000;
/** An OpenID sign-in must come back from the issuer within this. */
export const PENDING_SIGN_IN_MS = 10 * 60_000;

const SECRET = /^[0-9A-Z]{32}$/;

/** A session as the console and portal pages see it. */
export interface Session {
  readonly kind: "console" | "portal";
  /** Names the actor of audit lines: the admin token, the staff subject, or the license. */
  readonly tokenId: string | null;
  readonly subject: string | null;
  readonly licenseId: string | null;
  readonly name: string;
  readonly scopes: readonly Scope[];
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

/**
 * Console and portal sessions, kept server-side: the browser holds only a random secret in a
 * cookie, the store its hash, the expiry and the revocation. A console session opened with an
 * admin token ends when the token is revoked (the store revokes both in one transaction) and never
 * outlives the token.
 */
export class ConsoleSessions {
  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  /** Opens a console session with an admin token; admin_token_invalid as the API answers it. */
  async signInWithToken(token: unknown): Promise<{ secret: string; session: Session }> {
    const principal = await authenticateAdmin(this.deps, typeof token === "string" ? token.trim() : token);
    const tokens = await this.deps.store.listAdminTokens();
    const record = tokens.find((t) => t.id === principal.tokenId);
    const now = this.deps.clock();
    const expires = Math.min(now + CONSOLE_SESSION_MS, record?.expires ?? Infinity);
    return this.open({ kind: "console", tokenId: principal.tokenId, subject: null, licenseId: null, name: principal.name, scopes: principal.scopes, detail: null, expires });
  }

  /** Opens a console session for a staff member whose ID token was verified, with the scopes their groups map to. */
  async signInStaff(subject: string, name: string, scopes: readonly Scope[]): Promise<{ secret: string; session: Session }> {
    if (scopes.length === 0) throw new KeyturnError("not_in_required_group", "None of your groups is given access to the console.");
    const expires = this.deps.clock() + CONSOLE_SESSION_MS;
    return this.open({ kind: "console", tokenId: null, subject, licenseId: null, name, scopes, detail: null, expires });
  }

  /** Opens a portal session for the license (found by its key by the caller). */
  async signInPortal(licenseId: string, name: string): Promise<{ secret: string; session: Session }> {
    const expires = this.deps.clock() + PORTAL_SESSION_MS;
    return this.open({ kind: "portal", tokenId: null, subject: null, licenseId, name, scopes: [], detail: null, expires });
  }

  /** The live session of a cookie's secret of the kind asked; null when unknown, expired or revoked. */
  async find(secret: string | null, kind: "console" | "portal"): Promise<Session | null> {
    if (secret === null || !SECRET.test(secret)) return null;
    const r = await this.deps.store.findConsoleSession(hashOf(secret));
    if (!r || r.kind !== kind || r.revoked !== null || r.expires <= this.deps.clock()) return null;
    return sessionOf(r, secret);
  }

  /** Ends a session at once (sign out); later requests with its cookie are signed out. */
  async revoke(secret: string | null): Promise<void> {
    if (secret !== null && SECRET.test(secret)) await this.deps.store.revokeConsoleSession(hashOf(secret), this.deps.clock());
  }

  /** Keeps an OpenID sign-in's PKCE verifier and nonce under the hash of its `state`. */
  async beginPending(state: string, pending: PendingSignIn): Promise<void> {
    const now = this.deps.clock();
    await this.deps.store.createConsoleSession({
      idHash: hashOf(state),
      kind: "pending",
      tokenId: null,
      subject: null,
      licenseId: null,
      name: "",
      scopes: [],
      detail: JSON.stringify(pending),
      created: now,
      expires: now + PENDING_SIGN_IN_MS,
      revoked: null,
    });
  }

  /** Takes a pending sign-in once (a replayed callback finds nothing); null when unknown or expired. */
  async takePending(state: string | null): Promise<PendingSignIn | null> {
    if (state === null || !SECRET.test(state)) return null;
    const r = await this.deps.store.findConsoleSession(hashOf(state));
    if (!r || r.kind !== "pending" || r.expires <= this.deps.clock() || r.detail === null) return null;
    if (!(await this.deps.store.revokeConsoleSession(r.idHash, this.deps.clock()))) return null;
    return JSON.parse(r.detail) as PendingSignIn;
  }

  private async open(s: Omit<ConsoleSessionRecord, "idHash" | "created" | "revoked">): Promise<{ secret: string; session: Session }> {
    const secret = newSecret();
    const record: ConsoleSessionRecord = { ...s, idHash: hashOf(secret), created: this.deps.clock(), revoked: null };
    await this.deps.store.createConsoleSession(record);
    return { secret, session: sessionOf(record, secret) };
  }
}

/** 160 random bits in Crockford base32, the form of every session secret and sign-in state. */
export function newSecret(): string {
  return randomBase32(32);
}

function sessionOf(r: ConsoleSessionRecord, secret: string): Session {
  return {
    kind: r.kind === "portal" ? "portal" : "console",
    tokenId: r.tokenId,
    subject: r.subject,
    licenseId: r.licenseId,
    name: r.name,
    scopes: r.scopes as Scope[],
    csrf: csrfOf(secret),
    expires: r.expires,
  };
}

/** Whether the session holds the scope (`admin` holds every scope). */
export function sessionHas(s: Session, scope: Scope): boolean {
  return s.scopes.includes(scope) || s.scopes.includes("admin");
}
