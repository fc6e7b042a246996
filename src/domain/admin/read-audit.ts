import type { Store } from "../../store/types";
import type { AuditAction } from "../audit";
import { newId } from "../ids";
import { actorOf, type AdminCaller, type AdminDeps } from "./deps";

/**
 * A successful admin read is audited once per token, action and licence within this window: who
 * read what is kept, while a mirror polling the feed every 30 s writes 6 lines an hour, not 120.
 */
export const READ_AUDIT_WINDOW_MS = 10 * 60_000;
const MAX_REMEMBERED = 10_000;

/** The reads audited lately, per records (each process keeps its own). */
const lately = new WeakMap<Store, Map<string, number>>();

/**
 * The audit line of a successful admin read through the API (the command line is not audited: its
 * operator holds the records). Coalesced: see READ_AUDIT_WINDOW_MS.
 */
export async function auditRead(d: AdminDeps, caller: AdminCaller, action: AuditAction, licenseId: string | null = null): Promise<void> {
  if (caller.principal.tokenId === null) return;
  let seen = lately.get(d.store);
  if (!seen) lately.set(d.store, (seen = new Map()));
  const now = d.clock();
  const key = `${caller.principal.tokenId}\n${action}\n${licenseId ?? ""}`;
  const last = seen.get(key);
  if (last !== undefined && now - last < READ_AUDIT_WINDOW_MS && now >= last) return;
  if (seen.size >= MAX_REMEMBERED) seen.clear();
  seen.set(key, now);
  await d.store.writeAudit({
    ref: newId("ref", now),
    time: now,
    address: caller.address,
    action,
    activationId: null,
    licenseId,
    outcome: "ok",
    error: null,
    actor: actorOf(caller.principal),
  });
}
