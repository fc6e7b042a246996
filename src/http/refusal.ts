import type { Logger } from "../config/log";
import type { Audit, AuditAction } from "../domain/audit";
import type { Clock } from "../domain/clock";
import { KeyturnError } from "../domain/errors";
import type { RequestState } from "./front-door";
import { errorResponse } from "./respond";

/** Not-found probes get one audit line per client and window; the rest are in the request log only. */
const PROBE_WINDOW_MS = 60_000;
const MAX_PROBE_CLIENTS = 10_000;

interface RefusalDeps {
  readonly log: Logger;
  readonly audit: Audit;
  readonly clock: Clock;
}

/**
 * The one error answer of the API: a KeyturnError as it is, anything else as internal_error
 * (logged). Every refusal is audited under its endpoint's action and answered with the audit
 * line's `ref`, except repeated probes of unknown paths, so scanning cannot fill the audit trail.
 */
export function refusals(deps: RefusalDeps) {
  const lastProbe = new Map<string, number>();
  const audited = (err: KeyturnError, s: RequestState) => {
    if (err.code !== "not_found") return true;
    const now = deps.clock();
    const last = lastProbe.get(s.group);
    if (last !== undefined && now - last < PROBE_WINDOW_MS) return false;
    if (lastProbe.size >= MAX_PROBE_CLIENTS) lastProbe.clear();
    lastProbe.set(s.group, now);
    return true;
  };

  return async (error: unknown, action: AuditAction, s: RequestState): Promise<Response> => {
    let err: KeyturnError;
    if (error instanceof KeyturnError) err = error;
    else {
      deps.log.error("unexpected error", { action, error: String((error as Error)?.stack ?? error) });
      err = new KeyturnError("internal_error", "Something went wrong on our side; the reference names it in our logs.");
    }
    if (err.ref === undefined && audited(err, s)) {
      try {
        err.ref = await deps.audit.refused(action, { address: s.address, ...(s.actor ? { actor: s.actor } : {}) }, err);
      } catch (e) {
        deps.log.error("audit write failed", { error: String(e) });
      }
    }
    s.ref = err.ref;
    s.code = err.code;
    return errorResponse(err);
  };
}

export type Refusals = ReturnType<typeof refusals>;
