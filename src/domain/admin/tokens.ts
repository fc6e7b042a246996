import { Type, type Static } from "@sinclair/typebox";
import type { AdminTokenRecord } from "../../store/types";
import { isoTime } from "../clock";
import { KeyturnError } from "../errors";
import { newId, sha256Hex } from "../ids";
import { adminAudit, requireScope, SCOPES, type AdminCaller, type AdminDeps, type AdminPrincipal, type Scope } from "./deps";
import { idParam } from "./input";
import { closed, futureTime, Nullable, Text, TimeInput, trimmed } from "./model";

const PREFIX = "kta_";
/** 32 random bytes: 43 base64url characters after the prefix. */
const SECRET_BYTES = 32;
const SECRET_PATTERN = /^kta_[A-Za-z0-9_-]{32,100}$/;
/** lastUsed is written at most once a minute per token, so a busy token costs one read per request. */
const LAST_USED_GRANULARITY_MS = 60_000;

export interface AdminTokenView {
  readonly id: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly created: string;
  readonly expires: string | null;
  readonly revoked: string | null;
  readonly lastUsed: string | null;
}

export function adminTokenView(t: AdminTokenRecord): AdminTokenView {
  const iso = (ms: number | null) => (ms === null ? null : isoTime(ms));
  return { id: t.id, name: t.name, scopes: t.scopes, created: isoTime(t.created), expires: iso(t.expires), revoked: iso(t.revoked), lastUsed: iso(t.lastUsed) };
}

/** A new admin token, as the admin API, the console and `keyturn admin-token create` give it. */
export const AdminTokenCreateInput = closed({
  name: Text(100),
  scopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), { minItems: 1, maxItems: SCOPES.length }),
  expires: Type.Optional(Nullable(TimeInput)),
});
export type AdminTokenCreateInput = Static<typeof AdminTokenCreateInput>;

/** Creates an admin token; the secret is answered here once and only its SHA-256 is kept. Scope: admin. */
export async function createAdminToken(d: AdminDeps, caller: AdminCaller, input: AdminTokenCreateInput): Promise<{ token: AdminTokenView; secret: string }> {
  requireScope(caller.principal, "admin");
  const name = trimmed(input.name);
  const scopes = input.scopes as Scope[];
  const now = d.clock();
  const expires = futureTime(input.expires, "expires", now);
  const secret = PREFIX + Buffer.from(crypto.getRandomValues(new Uint8Array(SECRET_BYTES))).toString("base64url");
  const record: AdminTokenRecord = {
    id: newId("tok", now),
    name,
    secretHash: sha256Hex(secret),
    scopes: [...new Set(scopes)],
    created: now,
    expires,
    revoked: null,
    lastUsed: null,
  };
  await d.store.createAdminToken(record, adminAudit(d, caller, "admin-token-create"));
  return { token: adminTokenView(record), secret };
}

export async function listAdminTokens(d: AdminDeps, caller: AdminCaller): Promise<AdminTokenView[]> {
  requireScope(caller.principal, "admin");
  return (await d.store.listAdminTokens()).map(adminTokenView);
}

/** Revokes at once: every later request with it is admin_token_invalid (tokens are not cached). Scope: admin. */
export async function revokeAdminToken(d: AdminDeps, caller: AdminCaller, id: unknown): Promise<void> {
  requireScope(caller.principal, "admin");
  const tokenId = idParam(id, "id");
  if (!(await d.store.revokeAdminToken(tokenId, d.clock(), adminAudit(d, caller, "admin-token-revoke"))))
    throw new KeyturnError("not_found", `No unrevoked admin token ${tokenId}.`);
}

/**
 * The admin bearer check: the secret's hash looked up by primary key on every request (no cache,
 * so a revocation applies to the very next request). Unknown, malformed, expired or revoked:
 * admin_token_invalid, the same answer for each.
 */
export async function authenticateAdmin(d: Pick<AdminDeps, "store" | "clock">, secret: unknown): Promise<AdminPrincipal> {
  const invalid = () => new KeyturnError("admin_token_invalid", "The admin token is unknown, expired or revoked.");
  if (typeof secret !== "string" || !SECRET_PATTERN.test(secret)) throw invalid();
  const token = await d.store.findAdminTokenBySecretHash(sha256Hex(secret));
  const now = d.clock();
  if (!token || token.revoked !== null || (token.expires !== null && token.expires <= now)) throw invalid();
  await d.store.touchAdminToken(token.id, now, now - LAST_USED_GRANULARITY_MS);
  return { tokenId: token.id, name: token.name, scopes: token.scopes as Scope[] };
}
