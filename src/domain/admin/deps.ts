import type { KeyRing } from "../keys";
import type { Variant } from "../../config/variants";
import type { Plans } from "../../config/plans";
import type { AuditRecord, Store } from "../../store/types";
import type { AuditAction } from "../audit";
import type { Clock } from "../clock";
import { KeyturnError } from "../errors";
import type { RecordSeal } from "../record-seal";
import type { DestinationPolicy } from "../webhooks/destination";
import { newId } from "../ids";

export const SCOPES = [
  "licenses:read",
  "licenses:write",
  "activations:read",
  "activations:write",
  "audit:read",
  "releases:read",
  "releases:write",
  "webhooks:read",
  "webhooks:write",
  "stats:read",
  "feed:read",
  "admin",
] as const;

export type Scope = (typeof SCOPES)[number];

/** Who is asking: an admin token (its id and name) or the operator at the command line. */
export interface AdminPrincipal {
  /** null for the command line. */
  readonly tokenId: string | null;
  readonly name: string;
  readonly scopes: readonly Scope[];
}

export interface AdminCaller {
  readonly principal: AdminPrincipal;
  /** The network address as http/ determined it; null at the command line. */
  readonly address: string | null;
}

/** The operator at the command line: every scope (they hold the records anyway). */
export const CLI_CALLER: AdminCaller = { principal: { tokenId: null, name: "cli", scopes: ["admin"] }, address: null };

export interface AdminDeps {
  readonly variant: Variant;
  readonly store: Store;
  readonly clock: Clock;
  /** To state how long the tokens of a revoked license or deactivated installation may still be presented. */
  readonly tokenTtlSeconds: number;
  /** Where webhooks may go; none but public hosts when absent. */
  readonly webhookDestinations?: DestinationPolicy;
  /** Seals webhook secrets and idempotent answers in the records; kept in clear when absent (tests of other things). */
  readonly seal?: RecordSeal;
  /** The license public keys the feed publishes to mirrors; none when absent (commands that do not serve). */
  readonly keys?: KeyRing;
  /** The configuration's plans (`[plans.NAME]`); none when absent. */
  readonly plans?: Plans;
}

/** `admin` holds every scope. */
export function requireScope(principal: AdminPrincipal, scope: Scope): void {
  if (!principal.scopes.includes(scope) && !principal.scopes.includes("admin"))
    throw new KeyturnError("insufficient_scope", `This admin token lacks the scope ${scope}.`);
}

/** How an audit line names the actor: "tok_… (name)" or "cli"; never the secret. */
export function actorOf(p: AdminPrincipal): string {
  return p.tokenId === null ? "cli" : `${p.tokenId} (${p.name})`;
}

/** The audit line of an admin change, written in the change's transaction. */
export function adminAudit(
  d: AdminDeps,
  caller: AdminCaller,
  action: AuditAction,
  ids: { licenseId?: string | null; activationId?: string | null } = {},
): AuditRecord {
  return {
    ref: newId("ref", d.clock()),
    time: d.clock(),
    address: caller.address,
    action,
    activationId: ids.activationId ?? null,
    licenseId: ids.licenseId ?? null,
    outcome: "ok",
    error: null,
    actor: actorOf(caller.principal),
  };
}
