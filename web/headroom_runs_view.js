// The panel's "Recent runs": the memory timeline of a recorded run (VRAM and RAM as measured, the
// predicted band of each stage beside them, a peak-hold line), predicted against measured per stage,
// and the calibration's switch, reset and "calibrated from N runs". Renders GET /headroom/runs and GET
// /headroom/calibration as they come; it computes nothing the core answers (the error column is the
// difference of the two figures shown next to it).
import { gib } from "./headroom_format.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 340, H = 150, PAD_L = 38, PAD_R = 6, PAD_T = 8, PAD_B = 18;

export const RUNS_CSS = `
.headroom-runs{display:flex;flex-direction:column;gap:6px}
.headroom-runs-list{display:flex;flex-wrap:wrap;gap:4px}
.headroom-run-pick{cursor:pointer;font-size:11px;padding:1px 6px;border-radius:3px;border:1px solid #555;background:#2c2c2c;color:inherit}
.headroom-run-pick.selected{border-color:#9ab;background:#34424d}
.headroom-run-pick.oom,.headroom-run-pick.error{color:#ff7b7b}.headroom-run-pick.interrupted,.headroom-run-pick.unfinished{color:#e6c15a}
.headroom-timeline{background:#1d1d1d;border-radius:4px}
.headroom-timeline .vram{stroke:#5fb3ff;stroke-width:1.6;fill:none}
.headroom-timeline .ram{stroke:#c58cff;stroke-width:1.2;fill:none}
.headroom-timeline .peak-hold{stroke:#ffb65f;stroke-width:1;stroke-dasharray:3 2;fill:none}
.headroom-timeline .band{fill:#3a8d50;fill-opacity:.25;stroke:#3a8d50;stroke-opacity:.7}
.headroom-timeline .card{stroke:#b04a4a;stroke-dasharray:2 3}
.headroom-timeline text{fill:#aaa;font-size:9px}
.headroom-runs-keys{display:flex;flex-wrap:wrap;gap:2px 10px;font-size:11px;opacity:.9}
.headroom-runs-keys span::before{content:"";display:inline-block;width:10px;height:3px;margin-right:4px;vertical-align:3px}
.headroom-runs-keys .vram::before{background:#5fb3ff}.headroom-runs-keys .ram::before{background:#c58cff}
.headroom-runs-keys .peak-hold::before{background:#ffb65f}.headroom-runs-keys .band::before{background:#3a8d50;height:8px;vertical-align:0}
.headroom-run-stages{width:100%;border-collapse:collapse;font-size:12px}
.headroom-run-stages th{text-align:left;font-weight:normal;opacity:.7}.headroom-run-stages td,.headroom-run-stages th{padding:1px 4px;white-space:nowrap}
.headroom-run-stages td.err.over{color:#ff7b7b}.headroom-run-stages td.err.under{color:#7bd88f}
.headroom-calibration{display:flex;flex-wrap:wrap;align-items:center;gap:6px;font-size:12px}
.headroom-calibration-status{opacity:.85}
.headroom-runs-export{color:#8fc6ff}
`;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs ?? {})) node.setAttribute(k, String(v));
  return node;
}

const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

// Where each stage ran on the timeline: from the samples the recorder tagged with it, else one after
// the other by their wall times.
export function stageSpans(run) {
  const spans = new Map();
  for (const p of run?.timeline ?? []) {
    if (!p?.stage || num(p.t) === null) continue;
    const s = spans.get(p.stage) ?? { from: p.t, to: p.t };
    s.from = Math.min(s.from, p.t);
    s.to = Math.max(s.to, p.t);
    spans.set(p.stage, s);
  }
  let t = 0;
  return (run?.stages ?? []).map((stage) => {
    const wall = num(stage.wall_s) ?? 0;
    const span = spans.get(stage.name) ?? { from: t, to: t + wall };
    t = Math.max(t + wall, span.to);
    return { stage, ...span };
  });
}

export function renderTimeline(run) {
  const points = (run?.timeline ?? []).filter((p) => num(p?.t) !== null);
  const spans = stageSpans(run);
  const tMax = Math.max(1e-3, ...points.map((p) => p.t), ...spans.map((s) => s.to));
  const card = num(run?.runtime?.vram_total_bytes);
  const values = [card, ...points.flatMap((p) => [num(p.vram_bytes), num(p.ram_bytes)]),
    ...spans.flatMap((s) => [num(s.stage.predicted_bytes), num(s.stage.measured_bytes)])].filter((v) => v !== null);
  const yMax = Math.max(1, ...values) * 1.05;
  const x = (t) => PAD_L + (t / tMax) * (W - PAD_L - PAD_R);
  const y = (b) => PAD_T + (1 - b / yMax) * (H - PAD_T - PAD_B);
  const root = svg("svg", { class: "headroom-timeline", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
  root.setAttribute("aria-label", `memory over ${tMax.toFixed(1)} s`);
  for (const frac of [0, 0.5, 1]) {
    const b = yMax / 1.05 * frac;
    const label = svg("text", { x: 2, y: y(b) + 3 });
    label.textContent = gib(b);
    root.appendChild(label);
  }
  const tLabel = svg("text", { x: W - PAD_R - 30, y: H - 4 });
  tLabel.textContent = `${tMax.toFixed(1)} s`;
  root.appendChild(tLabel);
  if (card) root.appendChild(svg("line", { class: "card", x1: PAD_L, x2: W - PAD_R, y1: y(card), y2: y(card) }));
  // The predicted band of a stage: from the least it needs to its predicted peak, over the time it ran.
  for (const { stage, from, to } of spans) {
    const hi = num(stage.predicted_bytes);
    if (hi === null) continue;
    const lo = Math.min(hi, num(stage.predicted_min_bytes) ?? hi);
    const band = svg("rect", { class: "band", x: x(from), width: Math.max(1, x(to) - x(from)), y: y(hi),
      height: Math.max(1, y(lo) - y(hi)) });
    band.dataset.stage = stage.name;
    const title = svg("title");
    title.textContent = `${stage.name}: predicted ${gib(lo)} to ${gib(hi)}`;
    band.appendChild(title);
    root.appendChild(band);
  }
  const line = (key, cls, hold = false) => {
    let peak = 0;
    const pts = [];
    for (const p of points) {
      const v = num(p[key]);
      if (v === null) continue;
      peak = Math.max(peak, v);
      pts.push(`${x(p.t).toFixed(1)},${y(hold ? peak : v).toFixed(1)}`);
    }
    if (pts.length) root.appendChild(svg("polyline", { class: cls, points: pts.join(" ") }));
  };
  line("ram_bytes", "ram");
  line("vram_bytes", "vram");
  line("vram_bytes", "peak-hold", true);
  return root;
}

function errorCell(stage) {
  const p = num(stage.predicted_bytes), m = num(stage.measured_bytes);
  if (p === null || m === null || p === 0) return el("td", "err", "n/a");
  // The history's own figure when it gives one; else the two figures of the row compared.
  const e = num(stage.error_fraction) ?? (m - p) / p;
  const cell = el("td", `err ${e > 0.05 ? "over" : e < -0.05 ? "under" : ""}`, `${e >= 0 ? "+" : ""}${(e * 100).toFixed(0)}%`);
  cell.title = e > 0 ? "the run used more than predicted" : "the run used less than predicted";
  return cell;
}

export function renderStageTable(run) {
  const table = el("table", "headroom-run-stages");
  const head = el("tr");
  for (const h of ["stage", "predicted", "measured", "error", "time"]) head.appendChild(el("th", "", h));
  table.appendChild(head);
  for (const stage of run?.stages ?? []) {
    const row = el("tr");
    row.dataset.stage = stage.name;
    const name = el("td", "", stage.name);
    if (stage.model) name.title = stage.model;
    row.append(name, el("td", "predicted", gib(stage.predicted_bytes)), el("td", "measured",
      num(stage.measured_bytes) === null ? "not measured" : gib(stage.measured_bytes)), errorCell(stage),
    el("td", "", num(stage.wall_s) === null ? "" : `${stage.wall_s.toFixed(1)} s`));
    table.appendChild(row);
  }
  return table;
}

export function calibrationText(calibration) {
  if (!calibration) return "calibration unavailable";
  if (!calibration.enabled) return "calibration off: estimates use the model alone";
  const entries = calibration.calibration ?? [];
  if (!entries.length) {
    const need = calibration.rule?.min_runs;
    return `not calibrated yet${need ? `: needs ${need} measured runs of a model on this card` : ""}`;
  }
  const on = calibration.card ? ` on ${calibration.card}` : " on this card";
  return `calibrated from ${calibration.runs} runs${on} (${entries.map((e) => `${e.stage} ×${Number(e.factor).toFixed(2)}`).join(", ")})`;
}

function renderCalibration(calibration, { onToggle, onReset, exportHref }) {
  const wrap = el("div", "headroom-calibration");
  const label = el("label", "headroom-calibration-switch");
  const box = el("input");
  box.type = "checkbox";
  box.checked = Boolean(calibration?.enabled);
  box.disabled = !calibration;
  box.addEventListener("change", () => onToggle?.(box.checked));
  label.append(box, document.createTextNode(" calibrate from my runs"));
  const reset = el("button", "headroom-calibration-reset", "Reset");
  reset.title = "Forget every correction; only runs from now on count";
  reset.disabled = !calibration;
  reset.addEventListener("click", () => onReset?.());
  const link = el("a", "headroom-runs-export", "Export");
  link.href = exportHref;
  link.download = "headroom-runs.json";
  link.title = "The measurements for a bug report: no prompts, no paths";
  wrap.append(label, reset, link, el("div", "headroom-calibration-status", calibrationText(calibration)));
  return wrap;
}

function when(run) {
  const s = num(run?.started);
  return s === null ? "?" : new Date(s * 1000).toISOString().slice(11, 16);
}

// {runs: the GET /headroom/runs answer, calibration: GET /headroom/calibration's, selected: index,
//  error: text when the runs could not be read} -> the section's element.
export function renderRunsView({ runs, calibration, selected = 0, error = null, onSelect, onToggle, onReset,
  exportHref = "/api/headroom/runs/export" }) {
  const wrap = el("div", "headroom-runs");
  wrap.appendChild(el("h3", "", "Recent runs"));
  wrap.appendChild(renderCalibration(calibration, { onToggle, onReset, exportHref }));
  const list = runs?.runs ?? [];
  if (error || !list.length) {
    wrap.appendChild(el("div", "headroom-runs-none", error ? `Runs not available: ${error}` : "No recorded runs yet."));
    return wrap;
  }
  const picks = el("div", "headroom-runs-list");
  list.forEach((run, i) => {
    const b = el("button", `headroom-run-pick ${run.outcome ?? ""}${i === selected ? " selected" : ""}`,
      `${when(run)} ${run.outcome ?? "?"}`);
    b.title = run.message ?? `${run.stages?.length ?? 0} stages`;
    b.addEventListener("click", () => onSelect?.(i));
    picks.appendChild(b);
  });
  const run = list[Math.min(selected, list.length - 1)];
  const keys = el("div", "headroom-runs-keys");
  keys.append(el("span", "vram", "VRAM measured"), el("span", "peak-hold", "peak hold"), el("span", "ram", "RAM"),
    el("span", "band", "predicted band"));
  wrap.append(picks, renderTimeline(run), keys, renderStageTable(run));
  if (run.message) wrap.appendChild(el("div", "headroom-run-message", run.message));
  return wrap;
}
