import type { Logger } from "../config/log";
import type { Audit, AuditAction } from "../domain/audit";
import type { Clock } from "../domain/clock";
import { KeyturnError } from "../domain/errors";
import type { RequestState } from "./front-door";

/** Not-found probes get one audit line per client and window; the rest are in the request log only. */
const PROBE_WINDOW_MS = 60_000;
const MAX_PROBE_CLIENTS = 10_000;

interface RefusalDeps {
  readonly log: Logger;
  readonly audit: Audit;
  readonly clock: Clock;
}

/**
 * The one refusal step of every answer (API, console, portal): a KeyturnError as it is, anything
 * else as internal_error (logged). Every refusal is audited once, under its endpoint's action and
 * naming the actor when one is known, and carries the audit line's `ref`, except repeated probes
 * of unknown paths, so scanning cannot fill the audit trail. The caller words it as JSON or a page.
 */
export function refusals(deps: RefusalDeps) {
  const lastProbe = new Map<string, number>();
  const audited = (err: KeyturnError, state: RequestState) => {
    if (err.code !== "not_found") return true;
    const now = deps.clock();
    const last = lastProbe.get(state.group);
    if (last !== undefined && now - last < PROBE_WINDOW_MS) return false;
    if (lastProbe.size >= MAX_PROBE_CLIENTS) lastProbe.clear();
    lastProbe.set(state.group, now);
    return true;
  };

  /** `probe`: a not_found here may be a scanner's (an API path); a page's refusal answers a person and is always audited. */
  return async (error: unknown, action: AuditAction, state: RequestState, probe = true): Promise<KeyturnError> => {
    let err: KeyturnError;
    if (error instanceof KeyturnError) err = error;
    else {
      deps.log.error("unexpected error", { action, error: String((error as Error)?.stack ?? error) });
      err = new KeyturnError("internal_error", "Something went wrong on our side; the reference names it in our logs.");
    }
    if (err.ref === undefined && (!probe || audited(err, state))) {
      try {
        err.ref = await deps.audit.refused(action, { address: state.address, ...(state.actor ? { actor: state.actor } : {}) }, err);
      } catch (e) {
        deps.log.error("audit write failed", { error: String(e) });
      }
    }
    state.ref = err.ref;
    state.code = err.code;
    return err;
  };
}

export type Refusals = ReturnType<typeof refusals>;
