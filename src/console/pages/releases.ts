import { adminAudit, requireScope } from "../../domain/admin/deps";
import { auditRead } from "../../domain/admin/read-audit";
import { sessionHas, type Session } from "../../domain/console-sessions";
import { failureShare, reportsPerRelease } from "../../domain/releases/install-report-figures";
import { releaseOverview } from "../../domain/releases/overview";
import { STATS_DAYS } from "../../domain/stats";
import type { Rollout } from "../../domain/releases/rollout";
import { KeyturnError } from "../../domain/errors";
import type { ReleaseControlOp } from "../../store/types";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { confirmButton, confirmPage, doneAt } from "../confirm";
import { html } from "../html";
import { actionForm, consolePage, notice, when } from "../layout";

const DAY_MS = 86_400_000;

export const RELEASE_OPS: readonly ReleaseControlOp[] = ["halt", "resume", "withdraw", "restore"];

/** The controls that take a release from installations, confirmed first (confirm.ts), and what each does to them. */
export const CONFIRMED_RELEASE_OPS: Readonly<Partial<Record<ReleaseControlOp, string>>> = {
  halt: "Its rollout stops where it is: installations not yet admitted are offered the previous release until it is resumed.",
  withdraw: "No installation is offered it any more, on any mirror: the lane falls back to the previous release until it is restored.",
};

const rolloutText = (r: Rollout | null) =>
  r === null
    ? "all at once"
    : [
        "percent" in r ? `${r.percent}%` : `over ${r.days} day(s)`,
        r.targets ? `targets first: ${[...r.targets.licenses, ...r.targets.plans.map((p) => `plan ${p}`)].join(", ")}` : null,
        r.autoHalt ? `halts by itself at ${r.autoHalt.failureRate * 100}% failed of ${r.autoHalt.minReports}+ reports within ${r.autoHalt.window}` : null,
      ]
        .filter(Boolean)
        .join("; ");

const controlPath = (lane: string, version: string, op: ReleaseControlOp) =>
  `/console/releases/${encodeURIComponent(lane)}/${encodeURIComponent(version)}/${op}`;

/** Lanes with their live releases and rollout state, the controls, and the skipped folders with why (scope releases:read). */
export async function releasesPage(deps: ConsoleDeps, session: Session, address: string | null, message?: string): Promise<Outcome> {
  const caller = callerOf(session, address);
  requireScope(caller.principal, "releases:read");
  await auditRead(deps.admin, caller, "release-list");
  const index = await deps.releases.ready();
  const o = await releaseOverview({ index, skipped: deps.releases.skipped, controls: deps.controls, clock: deps.clock });
  const reports = new Map(
    reportsPerRelease(await deps.admin.store.installReportsPerDay(deps.clock() - STATS_DAYS * DAY_MS)).map((r) => [`${r.lane}\n${r.version}`, r]),
  );
  const write = sessionHas(session, "releases:write");
  const lanes = o.lanes.map(
    (
      l,
    ) => html`<section><h2>${l.lane}</h2><div class="table-wrap"><table><thead><tr><th scope="col">Version</th><th scope="col">Released</th><th scope="col">Rollout</th><th scope="col">State</th><th scope="col">Install reports (30 days)</th>${write ? html`<th scope="col"><span class="muted">Controls</span></th>` : ""}</tr></thead>
<tbody>${l.releases.map((r) => {
      const state = r.withdrawn
        ? `withdrawn ${when(r.withdrawn)}`
        : r.haltRule
          ? html`halted by itself: served only to installations running it <span class="halt-rule">(${r.haltRule})</span>`
          : r.halted
            ? `halted at ${r.share}%`
            : `${r.share}% admitted`;
      const counts = reports.get(`${l.lane}\n${r.version}`);
      const ops = RELEASE_OPS.filter((op) =>
        op === "halt" ? !r.halted && !r.withdrawn : op === "resume" ? !!r.halted : op === "withdraw" ? !r.withdrawn : !!r.withdrawn,
      );
      return html`<tr data-release="${r.version}"><td>${r.version}</td><td>${when(r.released)}</td><td>${rolloutText(r.rollout)}</td><td>${state}</td><td class="install-reports">${counts ? `${counts.installed} installed, ${counts.failed} failed, ${counts.rolledBack} rolled back (${failureShare(counts)}% failed)` : "none"}</td>${
        write
          ? html`<td>${ops.map((op) => (CONFIRMED_RELEASE_OPS[op] ? confirmButton(controlPath(l.lane, r.version, op), `${op} ${r.version}`) : actionForm(session, controlPath(l.lane, r.version, op), `${op} ${r.version}`)))}</td>`
          : ""
      }</tr>`;
    })}</tbody></table></div></section>`,
  );
  const body = html`${message ? notice(message) : ""}${o.lanes.length === 0 ? notice("No release is live.") : ""}${lanes}
<h2>Skipped folders</h2>${
    o.skipped.length
      ? html`<div class="table-wrap"><table id="skipped"><thead><tr><th scope="col">Folder</th><th scope="col">Why</th></tr></thead><tbody>${o.skipped.map((x) => html`<tr><td><code>${x.folder}</code></td><td>${x.reason}</td></tr>`)}</tbody></table></div>`
      : html`<p>None: every folder was taken.</p>`
  }
${o.otherControls.length ? html`<h2>Controls of releases not in the tree</h2><ul>${o.otherControls.map((c) => html`<li>${c.lane} ${c.version}: ${c.withdrawn ? "withdrawn" : "halted"}</li>`)}</ul>` : ""}`;
  return { page: consolePage({ title: "Releases", session, current: "/console/releases", body }) };
}

/** Halt, resume, withdraw or restore a release (scope releases:write), audited as the admin API does. */
export async function releaseControlAction(
  deps: ConsoleDeps,
  session: Session,
  address: string | null,
  lane: string,
  version: string,
  op: ReleaseControlOp,
): Promise<Outcome> {
  const caller = callerOf(session, address);
  requireScope(caller.principal, "releases:write");
  await deps.controls.applyToKnown(op, lane, version, deps.releases.current, adminAudit(deps.admin, caller, `release-${op}`));
  return { redirect: doneAt("/console/releases", `release-${op}`) };
}

/** The confirmation of a halt or a withdrawal, naming the release and its lane. */
export function releaseConfirmPage(session: Session, address: string | null, lane: string, version: string, op: ReleaseControlOp): Outcome {
  requireScope(callerOf(session, address).principal, "releases:write");
  const consequence = CONFIRMED_RELEASE_OPS[op];
  if (!consequence) throw new KeyturnError("not_found", "There is nothing at this address.");
  const verb = `${op[0]!.toUpperCase()}${op.slice(1)}`;
  return confirmPage(session, {
    title: `${verb} release?`,
    question: `${verb} version ${version} of ${lane}?`,
    consequence,
    action: controlPath(lane, version, op),
    button: `${verb} ${version}`,
    back: "/console/releases",
    current: "/console/releases",
  });
}
