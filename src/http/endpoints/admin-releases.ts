import type { AdminDeps } from "../../domain/admin/deps";
import { adminAudit } from "../../domain/admin/deps";
import { auditRead } from "../../domain/admin/read-audit";
import { isoTime, type Clock } from "../../domain/clock";
import type { ReleaseHolder } from "../../domain/releases/holder";
import { releaseOverview } from "../../domain/releases/overview";
import type { ReleaseControls } from "../../domain/releases/release-controls";
import { cachedStats } from "../../domain/stats-cache";
import type { ReleaseControlOp } from "../../store/types";
import * as S from "../admin-schemas";
import { endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { json } from "../respond";
import { ADMIN_ERRORS } from "./shared";

const RELEASE: ParamDoc[] = [
  { name: "lane", description: "The lane, product/channel/platform (gamma: channel/platform), its slashes percent-encoded as %2F" },
  { name: "version", description: "The release's version" },
];

const SUMMARY: Record<ReleaseControlOp, string> = {
  halt: "Halt a release's rollout: its share stays where it is now",
  resume: "Resume a halted rollout from where it stood",
  withdraw: "Withdraw a release: never served; its lane falls back to the previous release at once",
  restore: "Restore a withdrawn release",
};

/** The release tree's state, rollout controls and adoption figures, under /admin. */
export function adminReleaseEndpoints(admin: AdminDeps, releases: ReleaseHolder, controls: ReleaseControls, clock: Clock): Endpoint[] {
  const control = (op: ReleaseControlOp): Endpoint =>
    endpoint({
      method: "POST",
      path: `/admin/releases/{lane}/{version}/${op}`,
      summary: SUMMARY[op],
      auth: { scope: "releases:write" },
      budget: "admin",
      audit: `release-${op}`,
      params: RELEASE,
      querySchema: S.NoQuery,
      answer: S.AdminReleaseControlAnswer,
      errors: [...ADMIN_ERRORS, "invalid_request", "not_found"],
      handler: async ({ params, admin: caller }) => {
        const change = await controls.applyToKnown(op, params.lane ?? "", params.version ?? "", releases.current, adminAudit(admin, caller, `release-${op}`));
        const c = change.control;
        return json({
          ok: true,
          changed: change.changed,
          release: { lane: c.lane, version: c.version },
          share: change.share,
          halted: c.halted === null ? null : isoTime(c.halted),
          withdrawn: c.withdrawn === null ? null : isoTime(c.withdrawn),
        });
      },
    });

  return [
    endpoint({
      method: "GET",
      path: "/admin/releases",
      summary: "Every lane's live releases with their rollout state, the controls kept, and the folders skipped with why",
      auth: { scope: "releases:read" },
      budget: "admin",
      audit: "release-list",
      querySchema: S.NoQuery,
      answer: S.AdminReleaseOverview,
      errors: [...ADMIN_ERRORS],
      handler: async ({ admin: caller }) => {
        const overview = await releaseOverview({ index: await releases.ready(), skipped: releases.skipped, controls, clock });
        await auditRead(admin, caller, "release-list");
        return json({ ok: true, ...overview });
      },
    }),
    control("halt"),
    control("resume"),
    control("withdraw"),
    control("restore"),
    endpoint({
      method: "GET",
      path: "/admin/stats",
      summary:
        "Installations seen in the last 30 days by product, lane and version; rollouts' reach; activations and seat_limit refusals per day; licenses expiring within 30 days",
      auth: { scope: "stats:read" },
      budget: "admin",
      audit: "stats-read",
      querySchema: S.NoQuery,
      answer: S.AdminStats,
      errors: [...ADMIN_ERRORS, "unavailable"],
      handler: async ({ admin: caller }) => {
        const stats = await cachedStats({ store: admin.store, clock, controls, index: releases.current });
        await auditRead(admin, caller, "stats-read");
        return json({ ok: true, ...stats });
      },
    }),
  ];
}
