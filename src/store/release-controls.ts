import type { ReleaseControlOp, ReleaseControlRecord, ReleaseKey } from "./types";

/** A release with no control row: running, not withdrawn. */
export function noControl(key: ReleaseKey, now: number): ReleaseControlRecord {
  return { lane: key.lane, version: key.version, halted: null, haltedMs: 0, withdrawn: null, updated: now, haltRule: null };
}

/**
 * The control after `op`, or null when it changes nothing (halting a halted release, restoring one
 * not withdrawn). Resume adds the halt's length to haltedMs, so a ramp goes on from where it stood.
 * A halt keeps the rule that made it (`haltRule`; none when a person halts) until it is resumed.
 */
export function applyControl(c: ReleaseControlRecord, op: ReleaseControlOp, now: number, haltRule?: string): ReleaseControlRecord | null {
  switch (op) {
    case "halt":
      return c.halted === null ? { ...c, halted: now, updated: now, haltRule: haltRule ?? null } : null;
    case "resume":
      return c.halted !== null ? { ...c, halted: null, haltedMs: c.haltedMs + Math.max(0, now - c.halted), updated: now, haltRule: null } : null;
    case "withdraw":
      return c.withdrawn === null ? { ...c, withdrawn: now, updated: now } : null;
    case "restore":
      return c.withdrawn !== null ? { ...c, withdrawn: null, updated: now } : null;
  }
}
