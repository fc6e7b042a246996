// The console's and portal's only script: copy buttons and uPlot charts. Served from the
// executable under the site's CSP (no inline script); every page works without it except those two.
"use strict";

function copyButtons() {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      try {
        await navigator.clipboard.writeText(source.textContent.trim());
        button.textContent = "Copied";
      } catch {
        button.textContent = "Copy failed: select the text";
      }
    });
  }
}

/** Whole-number steps for counts (no 0.2 of an installation). */
const COUNTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 1000000];

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"];

function chartWidth(el) {
  return Math.max(260, Math.min(el.clientWidth || 600, 1100));
}

/** Bars per category (versions) or lines over days, as described by the page's JSON block. */
function chart(el) {
  const spec = JSON.parse(document.getElementById(el.dataset.chart).textContent);
  const bars = spec.kind === "bars";
  const opts = {
    width: chartWidth(el),
    height: 220,
    title: spec.title,
    scales: {
      x: bars ? { time: false, range: () => [-0.5, spec.labels.length - 0.5] } : { time: true },
      y: { range: (u, min, max) => [0, Math.max(1, max)] },
    },
    axes: [
      bars ? { values: (u, ticks) => ticks.map((t) => spec.labels[t] ?? ""), splits: () => spec.labels.map((_, i) => i) } : {},
      { size: 50, incrs: COUNTS },
    ],
    series: [bars ? { label: "Version", value: (u, v) => (v == null ? "--" : spec.labels[v] ?? "--") } : { label: "Day" }].concat(
      spec.series.map((s, i) => ({
        label: s.label,
        stroke: PALETTE[i % PALETTE.length],
        fill: bars ? PALETTE[i % PALETTE.length] + "99" : undefined,
        width: 2,
        paths: bars ? uPlot.paths.bars({ size: [0.6, 80] }) : undefined,
        points: { show: !bars },
      })),
    ),
  };
  const data = [spec.x].concat(spec.series.map((s) => s.values));
  const plot = new uPlot(opts, data, el);
  window.addEventListener("resize", () => plot.setSize({ width: chartWidth(el), height: 220 }));
  el.dataset.ready = "true";
}

function charts() {
  if (typeof uPlot === "undefined") return;
  for (const el of document.querySelectorAll("[data-chart]")) chart(el);
}

copyButtons();
charts();
