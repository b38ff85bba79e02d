/**
 * The console's static files: uPlot from node_modules (its UMD build and stylesheet; no CDN, no
 * build step), the console's stylesheet and the timeline's script. Served under
 * /console/assets/ without login: they hold no data.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

const STYLESHEET = `
:root { color-scheme: light; --ink: #1a1a1a; --muted: #4a4a4a; --line: #c8c8c8; --accent: #0b57d0; --bad: #a50e0e; --good: #136c2e; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--ink); background: #fff; }
header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .5rem 1rem; border-bottom: 1px solid var(--line); background: #f4f6f8; }
header nav { display: flex; gap: 1rem; align-items: center; flex: 1; }
header ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; flex: 1; }
.brand { font-weight: 700; }
a { color: var(--accent); }
a[aria-current="page"] { font-weight: 700; color: var(--ink); }
a:focus, button:focus, input:focus, select:focus, main:focus { outline: 3px solid #f9ab00; outline-offset: 2px; }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 1rem; top: .5rem; background: #fff; padding: .25rem .5rem; }
main { padding: 1rem; max-width: 84rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left; vertical-align: top; }
thead th { background: #f4f6f8; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.id { color: var(--muted); font-size: .9em; }
button { font: inherit; padding: .3rem .8rem; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 4px; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
.actions form { display: inline-block; margin-right: .25rem; }
.search { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; margin-bottom: .5rem; }
input[type=search], input[type=password], select { font: inherit; padding: .3rem .5rem; border: 1px solid var(--muted); border-radius: 4px; }
.pager { display: flex; gap: 1rem; margin: 1rem 0; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
.notice { padding: .5rem 1rem; border-left: 4px solid var(--good); background: #eef7ee; }
.error { padding: .5rem 1rem; border-left: 4px solid var(--bad); background: #fbeaea; }
.up { color: var(--good); font-weight: 700; }
.down { color: var(--bad); font-weight: 700; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
.facts dt { font-weight: 700; }
.facts dd { margin: 0; }
pre.text { white-space: pre-wrap; background: #f7f7f7; padding: .75rem; border: 1px solid var(--line); max-height: 30rem; overflow: auto; }
.plot { margin: 1rem 0; min-height: 2rem; }
.compaction-mark { position: absolute; top: 0; bottom: 0; border-left: 2px dashed #a50e0e; pointer-events: none; }
.compaction-mark span { position: absolute; top: 2px; left: 3px; font-size: 12px; background: #fff; color: #a50e0e; padding: 0 2px; white-space: nowrap; }
.compaction-mark[data-kind="hygiene"] { border-color: #7b1fa2; } .compaction-mark[data-kind="hygiene"] span { color: #7b1fa2; }
.compaction-mark[data-kind="idle"] { border-color: #00695c; } .compaction-mark[data-kind="idle"] span { color: #00695c; }
.compaction-mark[data-kind="manual"] { border-color: #e65100; } .compaction-mark[data-kind="manual"] span { color: #8a3100; }
figure.bars { margin: 1rem 0; }
figure.bars figcaption { font-weight: 700; margin-bottom: .25rem; }
svg .bar { fill: #0b57d0; }
svg .bar-label, svg .bar-value { font: 13px system-ui, sans-serif; fill: #1a1a1a; }
.login { max-width: 24rem; }
.login label { display: block; margin: .5rem 0 .25rem; }
.login input { width: 100%; }
.login button { margin-top: .75rem; }
`;

/** Draws the timeline from the page's JSON block; the marks are DOM elements over the plot, so they carry text. */
const TIMELINE_SCRIPT = `"use strict";
(function () {
  var block = document.getElementById("timeline-data");
  if (!block || typeof uPlot === "undefined") return;
  var data = JSON.parse(block.textContent);
  if (data.turns.length === 0) { document.getElementById("timeline-plot").textContent = "No turns recorded yet."; return; }
  // Turns are whole numbers: no tick between two of them.
  var TURN_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500];
  var width = Math.min(1100, document.getElementById("main").clientWidth - 32);
  function marks(u) {
    var over = u.over;
    Array.prototype.slice.call(over.querySelectorAll(".compaction-mark")).forEach(function (el) { el.remove(); });
    data.compactions.forEach(function (mark) {
      var el = document.createElement("div");
      el.className = "compaction-mark";
      el.setAttribute("data-kind", mark.kind);
      el.title = mark.kind + " compaction at turn " + mark.version + ": folded " + mark.folded + " messages, saved " + mark.saved + " tokens (" + mark.before + " → " + mark.after + "), summarizer " + (mark.model || "none");
      el.style.left = Math.round(u.valToPos(data.turns[mark.index], "x")) + "px";
      var label = document.createElement("span");
      label.textContent = mark.kind + " −" + mark.saved;
      el.appendChild(label);
      over.appendChild(el);
    });
  }
  new uPlot({
    title: "Context tokens per turn", width: width, height: 320,
    scales: { x: { time: false } },
    axes: [{ label: "turn", incrs: TURN_STEPS }, { label: "tokens", size: 70 }],
    series: [
      { label: "turn" },
      { label: "context tokens", stroke: "#0b57d0", width: 2, points: { show: true } },
      { label: "compaction threshold", stroke: "#e65100", dash: [6, 4] },
      { label: "window", stroke: "#a50e0e", dash: [2, 4] }
    ],
    hooks: { draw: [marks] }
  }, [data.turns, data.tokens, data.threshold, data.window], document.getElementById("timeline-plot"));
  new uPlot({
    title: "Cached share and cost per turn", width: width, height: 220,
    scales: { x: { time: false }, pct: { range: [0, 100] }, usd: {} },
    axes: [{ label: "turn", incrs: TURN_STEPS }, { scale: "pct", label: "cached %", size: 60 }, { scale: "usd", side: 1, label: "USD", size: 80, grid: { show: false } }],
    series: [
      { label: "turn" },
      { label: "cached share (%)", scale: "pct", stroke: "#136c2e", width: 2 },
      { label: "cost (USD)", scale: "usd", stroke: "#6a1b9a", width: 2, points: { show: true } }
    ]
  }, [data.turns, data.cachedShare, data.usd], document.getElementById("cost-plot"));
})();
`;

export interface Asset {
  type: string;
  body: string | Buffer;
}

let uplot: Promise<{ script: Buffer; css: Buffer }> | undefined;
const loadUplot = () => {
  uplot ??= Promise.all([
    readFile(require.resolve("uplot/dist/uPlot.iife.min.js")),
    readFile(require.resolve("uplot/dist/uPlot.min.css")),
  ]).then(([script, css]) => ({ script, css }));
  return uplot;
};

export async function asset(name: string): Promise<Asset | undefined> {
  switch (name) {
    case "console.css": return { type: "text/css; charset=utf-8", body: STYLESHEET };
    case "timeline.js": return { type: "text/javascript; charset=utf-8", body: TIMELINE_SCRIPT };
    case "uplot.js": return { type: "text/javascript; charset=utf-8", body: (await loadUplot()).script };
    case "uplot.css": return { type: "text/css; charset=utf-8", body: (await loadUplot()).css };
    default: return undefined;
  }
}
