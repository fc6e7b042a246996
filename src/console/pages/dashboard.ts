import { requireScope } from "../../domain/admin/deps";
import { auditRead } from "../../domain/admin/read-audit";
import { sessionHas, type Session } from "../../domain/console-sessions";
import { failureShare } from "../../domain/releases/install-report-figures";
import { releaseOverview } from "../../domain/releases/overview";
import type { Stats } from "../../domain/stats";
import { cachedStats } from "../../domain/stats-cache";
import { callerOf, type ConsoleDeps, type Outcome } from "../deps";
import { html, jsonData, type Html } from "../html";
import { consolePage, when } from "../layout";
import { trialsAndMeters } from "./licence-models";

const MAX_LANE_CHARTS = 8;

/** One bar chart per lane: installations seen in the window by version. */
function installationCharts(stats: Stats): Html[] {
  const lanes = new Map<string, { version: string; installations: number }[]>();
  for (const row of stats.installations) {
    const lane = row.lane ?? "not seen on a lane yet";
    let list = lanes.get(lane);
    if (!list) lanes.set(lane, (list = []));
    list.push({ version: row.version, installations: row.installations });
  }
  return [...lanes].slice(0, MAX_LANE_CHARTS).map(([lane, rows], i) => {
    rows.sort((a, b) => a.version.localeCompare(b.version, "en", { numeric: true }));
    const id = `chart-lane-${i}`;
    return html`<section aria-labelledby="${id}-h"><h3 id="${id}-h">${lane}</h3>
${jsonData(id, { kind: "bars", title: "", labels: rows.map((r) => r.version), x: rows.map((_, j) => j), series: [{ label: "installations", values: rows.map((r) => r.installations) }] })}
<div class="chart" data-chart="${id}" role="img" aria-label="Installations by version on ${lane}"></div>
<details><summary>Figures</summary><div class="table-wrap"><table class="installations" data-lane="${lane}"><thead><tr><th scope="col">Version</th><th scope="col">Installations</th></tr></thead>
<tbody>${rows.map((r) => html`<tr><td>${r.version}</td><td>${r.installations}</td></tr>`)}</tbody></table></div></details></section>`;
  });
}

function activationChart(stats: Stats): Html {
  const days = stats.activationsPerDay;
  return html`${jsonData("chart-activations", {
    kind: "lines",
    title: "",
    x: days.map((deps) => Date.parse(deps.day) / 1000),
    series: [
      { label: "activations", values: days.map((deps) => deps.activations) },
      { label: "seat_limit refusals", values: days.map((deps) => deps.seatLimitRefusals) },
    ],
  })}<div class="chart" data-chart="chart-activations" role="img" aria-label="Activations and seat_limit refusals per day"></div>
<details><summary>Figures</summary><div class="table-wrap"><table id="activations-per-day"><thead><tr><th scope="col">Day</th><th scope="col">Activations</th><th scope="col">seat_limit refusals</th></tr></thead>
<tbody>${days.filter((deps) => deps.activations > 0 || deps.seatLimitRefusals > 0).map((deps) => html`<tr><td>${deps.day}</td><td>${deps.activations}</td><td>${deps.seatLimitRefusals}</td></tr>`)}</tbody></table></div></details>`;
}

/** Per release with reports (the first MAX_LANE_CHARTS): installed and failed installations per day, and the figures. */
function installReportCharts(stats: Stats): Html {
  if (stats.installReports.length === 0) return html`<p>No install report in the window.</p>`;
  // Every day of the window (the activations' days), zeros included, so the charts share one time axis.
  const days = stats.activationsPerDay.map((d) => d.day);
  const charts = stats.installReports.slice(0, MAX_LANE_CHARTS).map((r, i) => {
    const id = `chart-reports-${i}`;
    const byDay = new Map(r.days.map((d) => [d.day, d]));
    return html`<section aria-labelledby="${id}-h"><h3 id="${id}-h">${r.lane} ${r.version}</h3>
${jsonData(id, {
  kind: "lines",
  title: "",
  x: days.map((day) => Date.parse(day) / 1000),
  series: [
    { label: "installed", values: days.map((day) => byDay.get(day)?.installed ?? 0) },
    { label: "failed or rolled back", values: days.map((day) => (byDay.get(day)?.failed ?? 0) + (byDay.get(day)?.rolledBack ?? 0)) },
  ],
})}<div class="chart" data-chart="${id}" role="img" aria-label="Install outcomes per day of ${r.version} on ${r.lane}"></div></section>`;
  });
  return html`${charts}<div class="table-wrap"><table id="install-reports"><thead><tr><th scope="col">Lane</th><th scope="col">Version</th><th scope="col">Day</th><th scope="col">Installed</th><th scope="col">Failed</th><th scope="col">Rolled back</th></tr></thead>
<tbody>${stats.installReports.map(
    (r) =>
      html`<tr class="release-total" data-lane="${r.lane}" data-version="${r.version}"><th scope="row">${r.lane}</th><td>${r.version}</td><td>all (${failureShare(r)}% failed)</td><td>${r.installed}</td><td>${r.failed}</td><td>${r.rolledBack}</td></tr>${r.days.map(
        (d) => html`<tr><td></td><td></td><td>${d.day}</td><td>${d.installed}</td><td>${d.failed}</td><td>${d.rolledBack}</td></tr>`,
      )}`,
  )}</tbody></table></div>`;
}

/** The dashboard (scope stats:read): adoption by version per lane, activations, licences expiring, the release tree's health. */
export async function dashboardPage(deps: ConsoleDeps, session: Session, address: string | null): Promise<Outcome> {
  const caller = callerOf(session, address);
  requireScope(caller.principal, "stats:read");
  await auditRead(deps.admin, caller, "stats-read");
  const stats = await cachedStats({ store: deps.admin.store, clock: deps.clock, controls: deps.controls, index: deps.releases.current });
  const index = deps.releases.current;
  const overview = index ? await releaseOverview({ index, skipped: deps.releases.skipped, controls: deps.controls, clock: deps.clock }) : null;
  const licenseLink = sessionHas(session, "licenses:read");
  const body = html`<p class="muted">Since ${when(stats.since)} (the last 30 days); counted ${stats.ageSeconds} s ago.</p>
<div class="grid"><section><h2>Installations by version, per lane</h2>${stats.installations.length ? installationCharts(stats) : html`<p>No installation seen in the window.</p>`}</section>
<section><h2>Activations and seat_limit refusals per day</h2>${activationChart(stats)}</section></div>
<section><h2>Install reports per release, per day</h2>${installReportCharts(stats)}</section>
<div class="grid"><section><h2>Licences expiring within 30 days</h2>${
    stats.expiringLicenses.length
      ? html`<div class="table-wrap"><table><thead><tr><th scope="col">Licensee</th><th scope="col">Organisation</th><th scope="col">Expires</th></tr></thead><tbody>${stats.expiringLicenses.map(
          (l) =>
            html`<tr><td>${licenseLink ? html`<a href="/console/licenses/${encodeURIComponent(l.id)}">${l.licensee}</a>` : l.licensee}</td><td>${l.organization}</td><td>${when(l.expires)}</td></tr>`,
        )}</tbody></table></div>`
      : html`<p>None.</p>`
  }</section>
<section><h2>Release tree</h2>${
    overview
      ? html`<p id="tree-health" class="${overview.skipped.length ? "status-bad" : "status-ok"}">${overview.lanes.length} lane(s), ${overview.lanes.reduce((n, l) => n + l.releases.length, 0)} live release(s), ${overview.skipped.length} folder(s) skipped.</p>`
      : html`<p id="tree-health" class="status-bad">The release tree has not been read yet.</p>`
  }${
    stats.rollouts.length
      ? html`<div class="table-wrap"><table><thead><tr><th scope="col">Lane</th><th scope="col">Version</th><th scope="col">Share</th><th scope="col">Admitted / seen</th></tr></thead><tbody>${stats.rollouts.map(
          (r) =>
            html`<tr><td>${r.lane}</td><td>${r.version}</td><td>${r.withdrawn ? "withdrawn" : `${r.share}%${r.halted ? " (halted)" : ""}`}</td><td>${r.admitted} / ${r.seen}</td></tr>`,
        )}</tbody></table></div>`
      : ""
  }</section></div>
${trialsAndMeters(stats)}`;
  return { page: consolePage({ title: "Dashboard", session, current: "/console/", body, charts: true }) };
}
