import type { MeterView, MetersInput } from "../../domain/meters";
import { parseMeterOption } from "../../domain/meters";
import type { Stats } from "../../domain/stats";
import type { TrialView } from "../../domain/trials";
import { field, type Form } from "../form";
import { html, type Html } from "../html";
import { when } from "../layout";

/**
 * The console's parts of the licence models (docs/trials-and-meters.md): a licence's meters as a form
 * field and a table, its trial, and the dashboard's trials and metered use.
 */

/** Meters as the form field writes them: `exports=500/30d, credits=1000`. */
export function metersText(meters: Record<string, MeterView> | undefined): string {
  return Object.entries(meters ?? {})
    .map(([name, m]) => `${name}=${m.limit}${m.period ? `/${m.period}` : ""}`)
    .join(", ");
}

/** The meters field of the create and edit forms. */
export function metersField(meters?: Record<string, MeterView>): Html {
  return html`<label>Meters (empty: none; e.g. exports=500/30d, credits=1000 for a one-time pool) <input name="meters" maxlength="1000" value="${metersText(meters)}" autocomplete="off"></label>`;
}

/** The form's meters as the create and update inputs take them; empty: none. */
export function metersOf(f: Form): MetersInput {
  const text = field(f, "meters");
  return text === undefined ? {} : parseMeterOption([text]);
}

/** A licence's meters, used and left in their current periods; nothing for a licence without. */
export function meterTable(meters: Record<string, MeterView> | undefined): Html {
  const rows = Object.entries(meters ?? {});
  if (rows.length === 0) return html``;
  return html`<h2>Metered use</h2><div class="table-wrap"><table id="meters" class="cards"><thead><tr><th scope="col">Meter</th><th scope="col">Used</th><th scope="col">Left</th><th scope="col">Limit</th><th scope="col">Starts again</th></tr></thead>
<tbody>${rows.map(
    ([name, m]) =>
      html`<tr data-meter="${name}"><td data-label="Meter">${name}</td><td data-label="Used">${m.used}</td><td data-label="Left">${m.remaining}</td><td data-label="Limit">${m.limit}${m.period ? ` per ${m.period}` : " (one-time pool)"}</td><td data-label="Starts again">${m.resetsAt ? when(m.resetsAt) : "never"}</td></tr>`,
  )}</tbody></table></div>`;
}

/** The trial a licence was made for; nothing for a bought licence. */
export function trialFacts(trial: TrialView | undefined, licensePath: (id: string) => string): Html {
  if (!trial) return html``;
  return html`<h2>Trial</h2><dl class="grid" id="trial"><div><dt>Started</dt><dd>${when(trial.started)}</dd></div><div><dt>Ends</dt><dd>${when(trial.ends)}</dd></div>
<div><dt>Converted</dt><dd>${trial.converted && trial.convertedTo ? html`${when(trial.converted)}, to <a href="${licensePath(trial.convertedTo)}">${trial.convertedTo}</a>` : "not yet"}</dd></div></dl>`;
}

/** The dashboard's trials (started, converted) and metered use by meter. */
export function trialsAndMeters(stats: Stats): Html {
  const rate = stats.trials.started === 0 ? "" : ` (${Math.round((stats.trials.converted / stats.trials.started) * 100)} %)`;
  return html`<div class="grid"><section><h2>Trials</h2><p id="trials">${stats.trials.started} started, ${stats.trials.converted} converted to a bought licence${rate}.</p></section>
<section><h2>Metered use</h2>${
    stats.meters.length
      ? html`<div class="table-wrap"><table id="meter-totals"><thead><tr><th scope="col">Meter</th><th scope="col">Licences</th><th scope="col">Used / limit</th><th scope="col">With nothing left</th></tr></thead><tbody>${stats.meters.map(
          (m) => html`<tr><td>${m.name}</td><td>${m.licenses}</td><td>${m.used} / ${m.limit}</td><td>${m.exhausted}</td></tr>`,
        )}</tbody></table></div>`
      : html`<p>No licence has a meter.</p>`
  }</section></div>`;
}
