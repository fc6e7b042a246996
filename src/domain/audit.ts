import type { AuditRecord, Store } from "../store/types";
import type { Clock } from "./clock";
import type { KeyturnError } from "./errors";
import { newId } from "./ids";

/** Who asked: the network address as http/ determined it (after trusted proxies). */
export interface RequestContext {
  readonly address: string | null;
  /** Who acted: the admin token that asked ("tok_… (name)"), once it was found good; or who acted for
   * the device when not the device itself (an admin answering an offline request). */
  readonly actor?: string;
}

export type AuditAction =
  | "activate"
  | "refresh"
  | "deactivate"
  | "current"
  | "sign-in"
  | "challenge"
  | "update"
  | "releases"
  | "request"
  | "license-list"
  | "license-show"
  | "activation-list"
  | "audit-read"
  | "feed-read"
  | "webhook-list"
  | "delivery-list"
  | "delivery-show"
  | "release-list"
  | "stats-read"
  | "license-create"
  | "license-update"
  | "license-revoke"
  | "license-reinstate"
  | "license-rekey"
  | "license-renew"
  | "plan-list"
  | "activation-deactivate"
  | "reclaim"
  | "admin-token-create"
  | "admin-token-revoke"
  | "webhook-add"
  | "webhook-remove"
  | "webhook-rotate-secret"
  | "webhook-enable"
  | "webhook-disable"
  | "webhook-retry"
  | "release-halt"
  | "release-resume"
  | "release-withdraw"
  | "release-restore"
  | "update-report"
  | "release-why"
  | "console-sign-in"
  | "console-sign-out"
  | "console-session-list"
  | "console-session-end"
  | "portal-sign-in"
  | "portal-sign-out"
  | "key-rotate"
  | "key-promote";

/** The audit trail: one line per state change and per refusal; a refusal's line is its `ref`. */
export class Audit {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async ok(action: AuditAction, ctx: RequestContext, ids: { licenseId?: string | null; activationId?: string | null }): Promise<string> {
    return this.write(action, ctx, "ok", null, ids);
  }

  async refused(action: AuditAction, ctx: RequestContext, error: KeyturnError): Promise<string> {
    return this.write(action, ctx, "refused", error.code, error.detail ?? {});
  }

  /** The line of a success that the store writes in the transaction of the change itself. */
  okLine(action: AuditAction, ctx: RequestContext, licenseId: string): Omit<AuditRecord, "activationId"> {
    const time = this.clock();
    return { ref: newId("ref", time), time, address: ctx.address, action, licenseId, outcome: "ok", error: null, ...(ctx.actor ? { actor: ctx.actor } : {}) };
  }

  private async write(
    action: AuditAction,
    ctx: RequestContext,
    outcome: "ok" | "refused",
    error: string | null,
    ids: { licenseId?: string | null; activationId?: string | null },
  ): Promise<string> {
    const time = this.clock();
    const ref = newId("ref", time);
    await this.store.writeAudit({
      ref,
      time,
      address: ctx.address,
      action,
      activationId: ids.activationId ?? null,
      licenseId: ids.licenseId ?? null,
      outcome,
      error,
      ...(ctx.actor ? { actor: ctx.actor } : {}),
    });
    return ref;
  }
}
