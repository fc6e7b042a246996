import { Type, type Static } from "@sinclair/typebox";
import type { ActivationRecord, LicenseRecord, Store } from "../../store/types";
import type { AdminDeps } from "../admin/deps";
import { findLicense } from "../admin/licenses";
import { closed, IdText } from "../admin/model";
import { KeyturnError } from "../errors";
import { termsOfLicence } from "./licence-terms";
import { laneName } from "./release-controls";
import type { ReleaseIndex } from "./release-index";
import type { Installation, RuleName, Verdict } from "./release-rules";
import type { ReleaseSelection } from "./release-selection";

/** GET /admin/releases/why, `keyturn release why`: an activation, or a device hash with its licence. */
export const WhyQuery = closed({
  activation: Type.Optional(IdText(100, "An activation (act_…)")),
  device: Type.Optional(IdText(100, "A device hash, with license")),
  license: Type.Optional(IdText(200, "The licence (lic_… or its key), with device")),
});
export type WhyQuery = Static<typeof WhyQuery>;

/** The rules `why` names: the release rules (release-rules.ts), the lane's own (`channel`, `lane`: nothing released), and `files` (a release whose files no longer read). */
export type WhyRule = RuleName | "channel" | "lane" | "files";

export interface WhyStep {
  readonly rule: WhyRule;
  readonly effect: Verdict["effect"];
  readonly reason: string;
}

export interface WhyAnswer {
  readonly installation: {
    readonly activation: string | null;
    readonly license: string;
    readonly plan: string;
    readonly kind: LicenseRecord["kind"];
    readonly device: string;
    readonly product: string | null;
    /** null: no activation of this device on the licence, so every platform is shown. */
    readonly platform: string | null;
  };
  readonly lanes: readonly {
    readonly lane: string;
    /** The release this installation gets on the lane; null: none. */
    readonly served: string | null;
    /** The rule that decided it: the newest release's deciding rule (it is served, or passed over for an older one), or why nothing is served. */
    readonly decidedBy: WhyStep;
    /** Every live release of the lane, newest first, with every rule's verdict on it, in the order asked. */
    readonly releases: readonly { readonly version: string; readonly served: boolean; readonly steps: readonly WhyStep[] }[];
  }[];
}

const step = (v: Verdict): WhyStep => ({ rule: v.rule, effect: v.effect, reason: v.reason });

/** The activation and licence a query names (not_found, invalid_request in words). */
async function whoIs(
  d: { store: Store; admin: AdminDeps },
  q: WhyQuery,
): Promise<{ license: LicenseRecord; activation: ActivationRecord | null; device: string }> {
  if (q.activation !== undefined) {
    if (q.device !== undefined || q.license !== undefined) throw new KeyturnError("invalid_request", "Give activation, or device with license, not both.");
    const activation = await d.store.getActivation(q.activation.trim());
    if (!activation) throw new KeyturnError("not_found", `No activation ${JSON.stringify(q.activation.slice(0, 60))}.`);
    const license = await d.store.getLicense(activation.licenseId);
    if (!license) throw new KeyturnError("not_found", `No licence ${activation.licenseId}.`);
    return { license, activation, device: activation.deviceHash };
  }
  if (q.device === undefined || q.license === undefined) throw new KeyturnError("invalid_request", "Give activation, or device with license.");
  const license = await findLicense(d.admin, q.license);
  const device = q.device.trim();
  const held = (await d.store.listActivations(license.id)).filter((a) => a.deviceHash === device);
  return { license, activation: held.find((a) => a.deactivated === null) ?? held.at(-1) ?? null, device };
}

/**
 * For one installation, the release each of its lanes gives it and every rule that decided it:
 * the channel (the licence's channels), then per release, newest first, the release rules in their
 * order (withdraw, halt, window, feature, staff, target, rollout: release-rules.ts) and whether its
 * files read.
 */
export async function explainReleases(
  d: { store: Store; admin: AdminDeps; selection: ReleaseSelection; index: ReleaseIndex },
  q: WhyQuery,
): Promise<WhyAnswer> {
  const { license, activation, device } = await whoIs(d, q);
  const variant = d.admin.variant;
  const who: Installation = { dev: device, kind: license.kind, license: license.id, plan: license.plan, ...termsOfLicence(license) };
  const products = activation ? [activation.product] : variant.products.length ? variant.products : [null];
  const platforms = activation ? [activation.platform] : variant.platforms;
  const lanes: WhyAnswer["lanes"][number][] = [];
  for (const product of products)
    for (const channel of variant.channels)
      for (const platform of platforms) {
        const lane = laneName(product, channel, platform);
        const live = d.index.releasesOf(product, channel, platform);
        if (!activation && live.length === 0) continue;
        if (!license.channels.includes(channel)) {
          lanes.push({
            lane,
            served: null,
            decidedBy: { rule: "channel", effect: "pass", reason: `channel ${channel} is not among the licence's channels (${license.channels.join(", ")})` },
            releases: [],
          });
          continue;
        }
        const e = await d.selection.explain(d.index, who, product, channel, platform);
        const releases = e.releases.map((r) => ({
          version: r.version,
          served: r.version === e.served,
          steps: [
            ...r.verdicts.map(step),
            ...(r.admitted && !r.readable
              ? [{ rule: "files" as const, effect: "pass" as const, reason: "its files no longer read as they were checked" }]
              : []),
          ],
        }));
        // Newest first: the newest release's deciding rule is why the lane gives what it gives (it, or an older one).
        const newest = releases[0];
        lanes.push({
          lane,
          served: e.served,
          decidedBy: newest
            ? (newest.steps.find((s) => s.effect !== "next") ?? newest.steps.at(-1)!)
            : { rule: "lane", effect: "pass", reason: "nothing has been released on this lane" },
          releases,
        });
      }
  return {
    installation: {
      activation: activation?.id ?? null,
      license: license.id,
      plan: license.plan,
      kind: license.kind,
      device,
      product: activation?.product ?? null,
      platform: activation?.platform ?? null,
    },
    lanes,
  };
}
