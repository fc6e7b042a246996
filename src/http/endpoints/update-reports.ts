import { Type } from "@sinclair/typebox";
import type { ReleaseHolder } from "../../domain/releases/holder";
import { InstallReportModel, type InstallReports } from "../../domain/releases/install-reports";
import { endpoint, type Endpoint } from "../endpoint";
import { json } from "../respond";
import { BEARER_ERRORS, BODY_ERRORS, NO_STORE } from "./shared";

const ReportAnswer = Type.Object({
  ok: Type.Literal(true),
  release: Type.Object({ lane: Type.String(), version: Type.String() }, { description: "The release the report was counted for" }),
});

/** POST /updates/report: an installation's install outcome, counted per release (and watched by a rollout's autoHalt). */
export function updateReportEndpoints(releases: ReleaseHolder, reports: InstallReports): Endpoint[] {
  return [
    endpoint({
      method: "POST",
      path: "/updates/report",
      summary:
        "Report what became of installing a release (installed, failed, rolled-back): counted per release and lane, and watched by the rollout's autoHalt",
      auth: "entitlement",
      budget: "api",
      audit: "update-report",
      body: InstallReportModel,
      answer: ReportAnswer,
      errors: [...BEARER_ERRORS, ...BODY_ERRORS, "not_found"],
      handler: async ({ principal, body }) => json({ ok: true, release: await reports.report(principal.claims, body, await releases.ready()) }, 200, NO_STORE),
    }),
  ];
}
