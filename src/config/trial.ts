import { ConfigError, parseDuration } from "./parse";
import type { PlanConfig, Plans } from "./plans";

/** Trials without a key (docs/trials-and-meters.md, "How to run a trial"): the plan they are made from and how long they last. */
export interface TrialConfig {
  readonly plan: PlanConfig;
  readonly lengthSeconds: number;
  /** --trial-meters as given (NAME=LIMIT[/PERIOD],…), read by src/domain/trials.ts; null: none. */
  readonly meters: string | null;
}

export const MAX_TRIAL_LENGTH = "366d";

/** --trial-plan must name a configured plan; unset, trials are off (null). */
export function trialConfig(planName: string | undefined, length: string, plans: Plans, meters?: string): TrialConfig | null {
  const lengthSeconds = parseDuration("trial-length", length, MAX_TRIAL_LENGTH);
  if (planName === undefined) return null;
  const plan = plans.get(planName);
  if (!plan)
    throw new ConfigError(
      "trial-plan",
      `names no plan of the configuration: add a [plans.${planName.slice(0, 64)}] table${plans.size > 0 ? ` or name one of ${[...plans.keys()].join(", ")}` : ""}`,
    );
  return { plan, lengthSeconds, meters: meters ?? null };
}
