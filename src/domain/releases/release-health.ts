import type { Logger } from "../../config/log";
import type { Variant } from "../../config/variants";
import type { AuditRecord, ReleaseKey, Store } from "../../store/types";
import type { Clock } from "../clock";
import { newId } from "../ids";
import { TRIAL_MARK } from "../trial-mark";
import { placeOfLane, type ReleaseControls } from "./release-controls";
import type { ReleaseIndex } from "./release-index";
import { windowMs, type AutoHalt } from "./rollout";

/** A release's install reports within its autoHalt window: how many installations reported, how many of them failed. */
export interface Health {
  readonly reports: number;
  readonly failed: number;
}

/** Whether `health` crosses `rule`: at least minReports installations reported, and at least failureRate of them failed. */
export const crosses = (rule: AutoHalt, health: Health): boolean => health.reports >= rule.minReports && health.failed >= rule.failureRate * health.reports;

const percent = (x: number) => `${Math.round(x * 10_000) / 100}%`;

/** The rule, with the figures that crossed it, as the control, the audit line, the event and the console name it. */
export function haltRuleText(rule: AutoHalt, health: Health): string {
  return (
    `autoHalt: ${health.failed} of ${health.reports} installations reporting within ${rule.window} failed (${percent(health.failed / health.reports)}; ` +
    `the rule: at least ${percent(rule.failureRate)} of at least ${rule.minReports})`
  );
}

/**
 * The automatic halt: after install reports are written, each release they name whose rollout has
 * `autoHalt` is looked at in the records (every process's reports, so several processes agree),
 * and one whose failures cross the rule is halted as `release halt` halts it (the audit line and
 * the release.halted event in the same transaction; mirrors follow the event), with the rule kept
 * on its control: until a person resumes it, it is served only to installations running it
 * (release-rules.ts).
 */
export class ReleaseHealthWatch {
  constructor(
    private readonly variant: Variant,
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly controls: ReleaseControls,
    private readonly index: () => ReleaseIndex | null,
    private readonly log: Logger,
  ) {}

  /** Looks at these releases (those that just got reports); answers the ones it halted. */
  async check(releases: readonly ReleaseKey[]): Promise<ReleaseKey[]> {
    const index = this.index();
    if (!index) return [];
    const view = await this.controls.current();
    const halted: ReleaseKey[] = [];
    for (const key of releases) {
      const place = placeOfLane(this.variant, key.lane);
      if (!place) continue;
      const release = index.releasesOf(place.product, place.channel, place.platform).find((r) => r.manifest.version === key.version);
      const rule = release?.manifest.rollout?.autoHalt;
      if (!rule) continue;
      const control = view.get(key.lane, key.version);
      if (control?.halted != null || control?.withdrawn != null) continue;
      const now = this.clock();
      // A trial is a seat anyone can start without a key: its reports do not halt a release for everyone.
      const health = await this.store.releaseHealth(key, now - windowMs(rule.window), TRIAL_MARK);
      if (!crosses(rule, health)) continue;
      const text = haltRuleText(rule, health);
      const audit: AuditRecord = {
        ref: newId("ref", now),
        time: now,
        address: null,
        action: "release-halt",
        activationId: null,
        licenseId: null,
        outcome: "ok",
        error: null,
        // The audit line names the rule and its figures where a person's halt names the person.
        actor: text,
      };
      const change = await this.controls.apply("halt", key.lane, key.version, index, audit, text);
      if (change.changed) {
        this.log.warn("release halted by its rollout's autoHalt", { lane: key.lane, version: key.version, rule: text });
        halted.push(key);
      }
    }
    return halted;
  }
}
