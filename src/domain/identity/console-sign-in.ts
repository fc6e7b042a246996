import type { IdentityConfig } from "../../config/config";
import type { Logger } from "../../config/log";
import { ConfigError } from "../../config/parse";
import { SCOPES, type Scope } from "../admin/deps";
import type { Clock } from "../clock";
import { newSecret, type ConsoleSessions, type Session } from "../console-sessions";
import { KeyturnError } from "../errors";
import { verifyIdToken } from "./id-token";
import { IssuerKeys } from "./issuer-keys";
import { requireRecentAuthentication, requireSecondFactor } from "./sign-in-rules";
import { staffLicenseId } from "./staff-sign-in";

const TOKEN_TIMEOUT_MS = 5_000;
const MAX_TOKEN_ANSWER = 64 * 1024;
const MAX_KEPT_GROUPS = 100;

/** The scopes a staff member's groups give in the console (`--console-groups`); unknown scope names are refused at start. */
export function consoleScopes(groups: ReadonlyMap<string, readonly string[]>): ReadonlyMap<string, readonly Scope[]> {
  for (const [group, scopes] of groups) {
    const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
    if (unknown.length > 0) throw new ConfigError("console-groups", `${group} names unknown scopes ${unknown.join(", ")} (known: ${SCOPES.join(", ")})`);
  }
  return groups as ReadonlyMap<string, readonly Scope[]>;
}

const base64url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");

/**
 * Console sign-in for staff with the vendor's OpenID issuer, as a web client: authorization code
 * with PKCE (S256), state and nonce kept server-side, the ID token verified like staff sign-in's
 * (RS256 against the issuer's keys, iss, aud, times), then recent authentication, a second factor,
 * and the scopes their groups map to.
 */
export class ConsoleOpenId {
  private readonly keys: IssuerKeys;

  constructor(
    private readonly deps: {
      identity: IdentityConfig;
      scopes: ReadonlyMap<string, readonly Scope[]>;
      sessions: ConsoleSessions;
      clock: Clock;
      log: Logger;
    },
  ) {
    this.keys = new IssuerKeys(deps.identity.issuer, deps.clock, deps.log);
  }

  /** Where to send the browser: the issuer's authorization endpoint with a fresh state, nonce and code challenge. */
  async start(redirectUri: string): Promise<{ url: string; state: string }> {
    const { authorization } = await this.keys.endpoints();
    const state = newSecret();
    const nonce = newSecret();
    const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
    await this.deps.sessions.beginPending(state, { verifier, nonce });
    const url = new URL(authorization);
    const id = this.deps.identity;
    for (const [k, v] of Object.entries({
      response_type: "code",
      client_id: id.clientId,
      redirect_uri: redirectUri,
      scope: id.scopes.join(" "),
      state,
      nonce,
      max_age: String(id.maxAgeSeconds),
      code_challenge: base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)))),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v);
    return { url: url.href, state };
  }

  /** The issuer's answer: the code exchanged (once: the state is taken), the ID token checked, a console session opened. */
  async finish(state: string | null, code: string | null, redirectUri: string): Promise<{ secret: string; session: Session }> {
    const pending = await this.deps.sessions.takePending(state);
    if (!pending) throw new KeyturnError("challenge_unknown", "This sign-in is unknown, used or expired: start it again.");
    if (!code || code.length > 2048) throw new KeyturnError("invalid_request", "The issuer sent no authorization code.");
    const { token } = await this.keys.endpoints();
    const id = this.deps.identity;
    let answer: Record<string, unknown>;
    try {
      const res = await fetch(token, {
        method: "POST",
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri,
          client_id: id.clientId,
          code_verifier: pending.verifier,
        }),
      });
      const text = await res.text();
      if (text.length > MAX_TOKEN_ANSWER) throw new Error("the token answer is too large");
      answer = JSON.parse(text);
      if (!res.ok) throw new Error(`the token endpoint answered ${res.status} ${String(answer.error ?? "")}`);
    } catch (e) {
      this.deps.log.warn("console sign-in: the code could not be exchanged", { error: (e as Error).message });
      throw new KeyturnError("issuer_unavailable", "The issuer did not exchange the sign-in code.");
    }
    if (typeof answer.id_token !== "string") throw new KeyturnError("token_invalid", "The issuer answered no ID token.");
    const now = this.deps.clock();
    const claims = await verifyIdToken(answer.id_token, { issuer: id.issuer, clientId: id.clientId, keys: this.keys, nowMs: now });
    if (claims.nonce !== pending.nonce) throw new KeyturnError("token_invalid", "The ID token was not made for this sign-in (nonce).");
    const detail = { licenseId: staffLicenseId(claims.sub) };
    requireRecentAuthentication(claims, id.maxAgeSeconds, now, detail);
    requireSecondFactor(claims, id, detail);
    const groups = claims[id.groupsClaim];
    const list = typeof groups === "string" ? [groups] : Array.isArray(groups) ? groups.filter((g): g is string => typeof g === "string") : [];
    // Only the groups the mapping names are kept: they are all a later request maps, and the session stays small.
    const kept = [...new Set(list)].filter((g) => this.deps.scopes.has(g)).slice(0, MAX_KEPT_GROUPS);
    const name =
      typeof claims.name === "string" ? claims.name.slice(0, 200) : typeof claims.email === "string" ? claims.email.slice(0, 200) : claims.sub.slice(0, 200);
    return this.deps.sessions.signInStaff(claims.sub.slice(0, 200), name, kept, claims.exp * 1000);
  }
}
