import type { MeterView } from "../domain/meters";
import { parseMeterOption, type MetersInput } from "../domain/meters";
import { KeyturnError } from "../domain/errors";
import type { TrialView } from "../domain/trials";
import { out, UsageError } from "./io";

/**
 * `--meter NAME=LIMIT[/PERIOD],…` on `license create` and `license update` (`none` on update: no
 * meters), as the create and update inputs take them; a malformed one is a usage error naming the flag.
 */
export function meterFlag(usage: string, f: Readonly<Record<string, string | boolean | undefined>>): { meters?: MetersInput } {
  const text = f.meter;
  if (typeof text !== "string") return {};
  if (text === "none") return { meters: {} };
  try {
    return { meters: parseMeterOption([text]) };
  } catch (e) {
    if (e instanceof KeyturnError) throw new UsageError(usage, e.message);
    throw e;
  }
}

/** A licence's meters and trial under `license show`'s lines (nothing for a licence with neither). */
export function printMetersAndTrial(meters: Record<string, MeterView> | undefined, trial: TrialView | undefined): void {
  for (const [name, m] of Object.entries(meters ?? {}))
    out(`  meter ${name}: ${m.used} of ${m.limit} used, ${m.remaining} left${m.period ? ` (per ${m.period}, resets ${m.resetsAt})` : " (one-time pool)"}`);
  if (trial)
    out(`  trial started ${trial.started}, ends ${trial.ends ?? "never"}${trial.converted ? `, converted ${trial.converted} to ${trial.convertedTo}` : ""}`);
}
