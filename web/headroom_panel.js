// The sidebar panel: the card and its live memory bar, the workflow's predicted peak per stage, and
// presets as one-click rewrites with their before/after peaks and an undo. Plain DOM; takes `app`.
import { applyPresetResult, serializeWorkflow, undoPresetResult } from "./headroom_graph.js";
import { changeText, gib, loaderText, pct, replaceText, speedText } from "./headroom_format.js";
import { renderRunsView, RUNS_CSS } from "./headroom_runs_view.js";

const STYLE_ID = "headroom-style";
const CSS = `
.headroom-panel{font:13px/1.4 sans-serif;padding:10px;color:var(--fg-color,#ddd);display:flex;flex-direction:column;gap:10px}
.headroom-panel h3{margin:0;font-size:14px}
.headroom-bar{display:flex;height:18px;border-radius:4px;overflow:hidden;background:#333}
.headroom-seg{height:100%}
.headroom-seg.other{background:#b04a4a}.headroom-seg.allocated{background:#d08a2a}
.headroom-seg.unallocated{background:#c9b13a}.headroom-seg.reserve{background:#666}.headroom-seg.free{background:#3a8d50}
.headroom-legend{display:flex;flex-wrap:wrap;gap:4px 10px;font-size:11px;opacity:.9;margin-top:4px}
.headroom-key::before{content:"";display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.headroom-key.other::before{background:#b04a4a}.headroom-key.allocated::before{background:#d08a2a}
.headroom-key.unallocated::before{background:#c9b13a}.headroom-key.reserve::before{background:#666}.headroom-key.free::before{background:#3a8d50}
.headroom-stages{width:100%;border-collapse:collapse}
.headroom-stages td{padding:2px 4px;white-space:nowrap}.headroom-stages td.bar{width:50%}.headroom-stages tr.peak td{font-weight:bold}
.headroom-stage-bar{height:8px;background:#3a8d50;border-radius:2px}.headroom-stage-bar.over{background:#b04a4a}
.headroom-verdict.over{color:#ff7b7b}.headroom-verdict.fits{color:#7bd88f}.headroom-verdict.tight{color:#e6c15a}
.headroom-preset{display:flex;justify-content:space-between;align-items:center;gap:6px;margin:3px 0}
.headroom-preset-text{display:flex;flex-direction:column;min-width:0}
.headroom-preset-changes,.headroom-preset-effect,.headroom-preset-note{font-size:11px;opacity:.85;overflow-wrap:anywhere}
.headroom-preset-effect.better{color:#7bd88f}.headroom-preset-effect.worse{color:#ff7b7b}
.headroom-not-estimated{color:#e6c15a;white-space:pre-wrap}
.headroom-preset.applied .headroom-preset-label{font-weight:bold}.headroom-preset.applied .headroom-preset-label::after{content:" (applied)"}
.headroom-preset-costs{font-size:11px;opacity:.7;overflow-wrap:anywhere}
.headroom-preset button,.headroom-undo{cursor:pointer}
.headroom-error{color:#ff7b7b;white-space:pre-wrap}
.headroom-budget-error{color:#ff7b7b;font-size:11px}.headroom-budget-input{width:60%}
.headroom-trust{font-size:11px;opacity:.9}.headroom-trust .unknown,.headroom-trust-unknown{color:#e6c15a}.headroom-trust-broken{color:#e66a5a}
`;

export function ensureStyle(doc = document) {
  if (doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement("style");
  style.id = STYLE_ID;
  style.textContent = CSS + RUNS_CSS;
  doc.head.appendChild(style);
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function renderBar(snapshot) {
  const wrap = el("div", "headroom-card");
  wrap.appendChild(el("h3", "headroom-device", snapshot?.device ?? "No CUDA device"));
  const total = snapshot?.total_bytes;
  const bar = el("div", "headroom-bar");
  bar.setAttribute("role", "img");
  const legend = el("div", "headroom-legend");
  if (total) {
    const unalloc = snapshot.reserved_unallocated_bytes ?? 0;
    const segments = [
      ["other", "other processes", snapshot.other_processes_bytes ?? 0],
      ["allocated", "PyTorch allocated", snapshot.torch_allocated_bytes ?? 0],
      ["unallocated", "reserved, unallocated", unalloc],
      ["reserve", "ComfyUI reserve", Math.min(snapshot.comfy_reserve_bytes ?? 0, total)],
      ["free", "free", snapshot.free_bytes ?? 0],
    ];
    for (const [cls, label, bytes] of segments) {
      const seg = el("div", `headroom-seg ${cls}`);
      seg.style.width = `${pct(bytes, total)}%`;
      seg.title = `${label}: ${gib(bytes)}`;
      seg.dataset.bytes = String(bytes);
      bar.appendChild(seg);
      legend.appendChild(el("span", `headroom-key ${cls}`, `${label} ${gib(bytes)}`));
    }
    bar.setAttribute("aria-label", `${gib(snapshot.free_bytes)} free of ${gib(total)}`);
    legend.appendChild(el("span", "headroom-total", `total ${gib(total)}`));
  } else {
    legend.appendChild(el("span", "headroom-nogpu", "No GPU reading (CPU run or no CUDA device)"));
  }
  wrap.append(bar, legend);
  return wrap;
}

// True when the core gave a peak and a verdict it could judge (it says "unknown" with a reason when it
// could not estimate the workflow, e.g. no diffusion loader): never shown as a fit.
export function isEstimated(estimate, verdicts = []) {
  return estimate?.peak_bytes !== null && estimate?.peak_bytes !== undefined &&
    verdictRow(verdicts, estimate)?.sized !== false;
}

// The catalog's row ({id, text, runs, fits, sized}) of a core answer's verdict, found by its
// `verdict_id`, or null. The core spells the verdicts (GET /headroom/presets carries them); the panel
// decides from the flags only.
export function verdictRow(verdicts, answer) {
  const id = answer?.verdict_id;
  return id ? (verdicts ?? []).find((v) => v?.id === id) ?? null : null;
}

export function renderStages(estimate, cardBytes, verdicts = []) {
  const wrap = el("div", "headroom-estimate");
  if (!estimate) return wrap;
  if (!isEstimated(estimate, verdicts)) {
    const reason = estimate.reason ?? estimate.notes?.[0] ?? "the core gave no peak for this workflow";
    wrap.appendChild(el("div", "headroom-not-estimated", `Not estimated: ${reason}. No peak, so no verdict.`));
    return wrap;
  }
  const limit = estimate.budget_bytes ?? cardBytes;
  // Without a budget the bars compare the stages with each other (the largest is full length).
  const scale = limit || Math.max(0, ...(estimate.stages ?? []).map((s) => s.peak_bytes ?? 0));
  const table = el("table", "headroom-stages");
  for (const stage of estimate.stages ?? []) {
    const row = el("tr", stage.name === estimate.peak_stage ? "peak" : "");
    row.dataset.stage = stage.name;
    const barCell = el("td", "bar");
    const bar = el("div", `headroom-stage-bar${limit && stage.peak_bytes > limit ? " over" : ""}`);
    bar.style.width = `${scale ? pct(stage.peak_bytes, scale) : 0}%`;
    barCell.appendChild(bar);
    row.append(el("td", "", stage.name), el("td", "", gib(stage.peak_bytes)), barCell);
    table.appendChild(row);
  }
  // The core's verdict when it gave one (its catalog flags say whether the run completes and with room to
  // spare); otherwise the peak against the card.
  const row = verdictRow(verdicts, estimate);
  const over = row ? !row.runs : Boolean(limit && estimate.peak_bytes > limit);
  const tight = Boolean(row && row.runs && !row.fits);
  const word = estimate.verdict ?? (limit ? (over ? "over" : verdicts.find((v) => v.fits)?.text ?? "within") : "");
  // A run that streams weights says how much slower; the core's reason says why it does not fit.
  const speed = tight && typeof estimate.slowdown === "number" && estimate.slowdown > 1.05 ? `, ${speedText(estimate.slowdown)}` : "";
  // The headline names the limit the run stops at (the core's `limit`): the VRAM of a stage, or host RAM,
  // with its own bar; under dynamic VRAM the least the run needs stands beside a peak that grows with the card.
  const least = typeof estimate.required_bytes === "number" && estimate.required_bytes < estimate.peak_bytes
    ? `, needs at least ${gib(estimate.required_bytes)}` : "";
  let headline;
  if (!limit) headline = `Peak ${gib(estimate.peak_bytes)} in ${estimate.peak_stage}${least} (no budget: set one to get a verdict)`;
  else if (over && estimate.limit === "host_ram") headline = `${word}: host RAM — ${estimate.verdict_reason ?? "the weights need more host RAM than there is"}`;
  else if (over && estimate.limit === "vram") {
    const stage = (estimate.stages ?? []).find((x) => x.name === estimate.limit_stage);
    headline = `${word}: VRAM in ${estimate.limit_stage}${stage ? ` needs ${gib(stage.required_bytes ?? stage.peak_bytes)}` : ""} of ${gib(limit)}`;
  } else headline = `${word}${speed}: peak ${gib(estimate.peak_bytes)} in ${estimate.peak_stage}${least} (${gib(limit)})`;
  const verdict = el("div", `headroom-verdict ${word ? (over ? "over" : tight ? "tight" : "fits") : ""}`, headline);
  verdict.dataset.limit = estimate.limit ?? "";
  if (over && estimate.limit === "host_ram" && estimate.ram_bytes) {
    const ram = el("div", "headroom-ram-bar headroom-stage-bar over");
    ram.style.width = `${pct(estimate.host_ram_held_bytes || estimate.host_ram_bytes, estimate.ram_bytes)}%`;
    ram.title = `host RAM ${gib(estimate.host_ram_held_bytes || estimate.host_ram_bytes)} of ${gib(estimate.ram_bytes)}`;
    const row = el("tr", "ram");
    row.dataset.stage = "host RAM";
    table.appendChild(row);
    const cell = el("td", "bar");
    cell.appendChild(ram);
    row.append(el("td", "", "host RAM"), el("td", "", gib(estimate.host_ram_held_bytes || estimate.host_ram_bytes)), cell);
  }
  wrap.append(table, verdict);
  if (estimate.verdict_reason && (tight || (over && !estimate.limit))) {
    wrap.appendChild(el("div", "headroom-verdict-reason", estimate.verdict_reason));
  }
  // The plan's first change, the words the queue check and `headroom plan` give for the same workflow.
  const first = (over || tight) ? estimate.changes?.[0] : null;
  if (first) wrap.appendChild(el("div", "headroom-first-change", `First change: ${changeText(first)}`));
  const loader = loaderText(estimate.runtime);
  if (loader) wrap.appendChild(el("div", "headroom-loader", `for ${loader}`));
  if (estimate.advice) wrap.appendChild(el("div", "headroom-advice", `Advice: ${estimate.advice}`));
  wrap.appendChild(renderTrust(estimate));
  return wrap;
}

// The core's size_source for a loader, in the panel's words.
const SIZE_SOURCE_WORDS = {
  header: "size from the file's header",
  file_name: "size from its file name",
  unknown: "size unknown",
};

// What the figures rest on, in the core's words: which file each loader names and the model and
// precision taken for it, the nodes not counted, the core's notes (where a size came from a file name,
// what was left out), and the smallest card that runs the workflow unchanged.
export function renderTrust(estimate) {
  const box = el("details", "headroom-trust");
  box.appendChild(el("summary", "", "What these figures rest on"));
  const loaders = estimate?.workflow?.loaders ?? [];
  for (const l of loaders) {
    const source = SIZE_SOURCE_WORDS[l.size_source];
    const line = el("div", "headroom-trust-model",
      `${l.type ?? "loader"}: ${l.file ?? "?"} → ${l.model || "unknown model"}${l.precision ? `, ${l.precision}` : ""}` +
      (source ? ` (${source})` : ""));
    if (!l.model || (source && source === SIZE_SOURCE_WORDS.unknown)) line.classList.add("unknown");
    box.appendChild(line);
    // A file that looks broken is said in the core's sentence, which names the node and the file.
    if (l.file_problem) box.appendChild(el("div", "headroom-trust-broken", l.file_problem_text || `${l.file}: ${l.file_problem}`));
  }
  const unknown = estimate?.unknown_nodes ?? [];
  if (unknown.length) {
    box.appendChild(el("div", "headroom-trust-unknown",
      `Not counted: ${unknown.slice(0, 8).map((n) => `${n.type} #${n.id}`).join(", ")}${unknown.length > 8 ? ` and ${unknown.length - 8} more` : ""}`));
  }
  for (const note of estimate?.notes ?? []) box.appendChild(el("div", "headroom-trust-note", note));
  const small = estimate?.smallest_gpu;
  if (small?.name) box.appendChild(el("div", "headroom-trust-card", `Smallest card that runs it unchanged: ${small.name}`));
  // Anything that is not counted opens the box: the user should see it without asking.
  if (unknown.length || loaders.some((l) => !l.model || l.file_problem)) box.open = true;
  return box;
}

export { speedText };

function valueText(value) {
  return value === undefined || value === null || value === "" ? "?" : String(value);
}

// What a preset does to this workflow: the widgets and nodes it changes, then the verdict and the speed
// before → after on the user's card (the core judges every row on it), what the changes cost (the
// catalog's words), and for a "fit N GB" preset how it does on the card it is named after.
export function presetSummary(preview, verdicts = []) {
  const changes = (preview?.changes ?? []).map((c) =>
    c?.replace ? replaceText(c) : c?.widget ? `${c.widget} ${valueText(c.from)} → ${valueText(c.to)}` : changeText(c));
  const before = preview?.before ?? {};
  const after = preview?.after ?? {};
  const effect = [];
  let better = 0;
  if (!changes.length) return { changes, effect, better, costs: [] };
  if (before.verdict || after.verdict) {
    effect.push(before.verdict === after.verdict ? `still ${valueText(after.verdict)}`
      : `${valueText(before.verdict)} → ${valueText(after.verdict)}`);
    const rank = (side) => {
      const r = verdictRow(verdicts, side);
      return r ? (r.fits ? 2 : r.runs ? 1 : 0) : side.verdict ? 1 : -1;
    };
    better += Math.sign(rank(after) - rank(before));
  }
  // The slowdown is of weight streaming only: said when it moves, never "full speed" on its own (a text
  // encoder on the CPU is slower in a stage it does not cover; the costs below say so).
  const s0 = speedText(before.slowdown), s1 = speedText(after.slowdown);
  if (s0 !== s1 && (s0 || s1)) {
    effect.push(`weights: ${s0 ?? "?"} → ${s1 ?? "?"}`);
    if (typeof before.slowdown === "number" && typeof after.slowdown === "number") {
      better += Math.sign(Math.round((before.slowdown - after.slowdown) * 10));
    }
  }
  const target = preview?.target;
  if (preview?.judged_on === "request" && target?.bytes && target.bytes !== preview.judged_bytes && target.verdict) {
    effect.push(`on a ${gib(target.bytes)} card: ${target.verdict}`);
  }
  const costs = (preview?.costs ?? []).map((c) => c?.effect).filter(Boolean);
  return { changes, effect, better, costs };
}

export function createPanel({ app, client, getBudget = () => "auto", setBudget = null, setCalibration = async () => {} }) {
  const root = el("div", "headroom-panel");
  const state = { snapshot: null, estimate: null, presets: [], verdicts: [], previews: {}, previewErrors: {}, undo: null, applied: null,
    error: null, estimatedSignature: null };
  const slots = { card: el("div"), estimate: el("div"), presets: el("div", "headroom-presets"),
    error: el("div", "headroom-error"), runs: el("div", "headroom-runs-slot") };
  const runs = { answer: null, calibration: null, selected: 0, error: null };
  const panel = { app, client, getBudget, setCalibration, root, state, slots, runs };
  panel.api = panelApi(panel);
  root.append(slots.card, budgetControl(getBudget, setBudget, () => panel.api.refresh()),
    workflowHeader(() => panel.api.refresh()), slots.estimate, slots.presets, slots.runs, slots.error);
  panel.watch = watchGraph(root, () => panel.api.refreshIfChanged());
  renderPanel(panel);
  return panel.api;
}

function workflowHeader(onRefresh) {
  const header = el("div", "headroom-workflow-header");
  const refreshButton = el("button", "headroom-refresh", "Refresh");
  refreshButton.title = "Estimate the workflow as it is now";
  refreshButton.addEventListener("click", () => onRefresh());
  header.append(el("h3", "", "This workflow"), refreshButton);
  Object.assign(header.style, { display: "flex", justifyContent: "space-between", alignItems: "center" });
  return header;
}

// The budget the verdicts are against: auto (this card), a card's name or a size in GB. The server
// validates it where it is typed; a refused value is said under the field and the old one stays.
function budgetControl(getBudget, setBudget, onChanged) {
  const wrap = el("div", "headroom-budget");
  const label = el("label", "", "Budget ");
  const input = el("input", "headroom-budget-input");
  input.value = String(getBudget() ?? "auto");
  input.placeholder = "auto, 12, RTX 4090 24GB";
  input.setAttribute("list", "headroom-budget-choices");
  const list = el("datalist");
  list.id = "headroom-budget-choices";
  for (const v of ["auto", "8", "12", "16", "24", "RTX 3060 12GB", "RTX 4090 24GB"]) list.appendChild(Object.assign(el("option"), { value: v }));
  const note = el("div", "headroom-budget-error");
  label.appendChild(input);
  wrap.append(label, list, note);
  if (!setBudget) input.disabled = true;
  input.addEventListener("change", async () => {
    const value = input.value.trim() || "auto";
    try {
      await setBudget(value);
      note.textContent = "";
      await onChanged();
    } catch (err) {
      note.textContent = err.message;
      input.value = String(getBudget() ?? "auto");
    }
  });
  return wrap;
}

function renderRuns(panel) {
  const { runs, api } = panel;
  panel.slots.runs.replaceChildren(renderRunsView({
    runs: runs.answer, calibration: runs.calibration, selected: runs.selected, error: runs.error,
    onSelect: (i) => { runs.selected = i; renderRuns(panel); },
    onToggle: (on) => api.setCalibration(on),
    onReset: () => api.resetCalibration(),
  }));
}

// "fit this card" (the catalog's target "request") needs a card or a budget to fit.
function needsCard(panel, preset) {
  const budget = String(panel.getBudget() ?? "auto").trim().toLowerCase();
  return preset.target === "request" && !panel.state.snapshot?.total_bytes && (budget === "" || budget === "auto");
}

function renderPresets(panel) {
  const { state, slots, api } = panel;
  slots.presets.replaceChildren(el("h3", "", "Presets"));
  if (!state.presets.length && !state.error) slots.presets.appendChild(el("div", "headroom-none", "No presets available."));
  for (const preset of state.presets) slots.presets.appendChild(presetRow(panel, preset));
  if (state.undo) {
    const undo = el("button", "headroom-undo", `Undo ${state.applied}`);
    undo.title = (state.undo.changes ?? []).map((c) => changeText(c)).join("\n");
    undo.addEventListener("click", () => api.undo());
    slots.presets.appendChild(undo);
  }
}

// One preset: its label with the peak before → after, Apply, and what it changes, does and costs.
function presetRow(panel, preset) {
  const { state, api } = panel;
  const name = preset.name ?? preset.id;
  const preview = state.previews[name];
  const row = el("div", "headroom-preset");
  row.dataset.preset = name;
  const label = preview?.after
    ? `${preset.title ?? name}: ${gib(preview.before?.peak_bytes)} → ${gib(preview.after?.peak_bytes)}`
    : (preset.title ?? name);
  const applied = state.applied === name && state.undo;
  if (applied) row.classList.add("applied");
  const button = el("button", "headroom-apply", applied ? "Applied" : "Apply");
  button.disabled = Boolean(applied);
  button.addEventListener("click", () => api.applyPreset(name));
  const text = el("div", "headroom-preset-text");
  const labelEl = el("span", "headroom-preset-label", label);
  if (preset.description) labelEl.title = preset.description;
  if (preview?.after?.verdict) labelEl.dataset.verdict = preview.after.verdict;
  text.appendChild(labelEl);
  if (needsCard(panel, preset)) {
    text.appendChild(el("span", "headroom-preset-note",
      "needs a card: no GPU here, so set Headroom's budget (Settings → Headroom) to a number of GB or a GPU name"));
    button.disabled = true;
  } else if (state.previewErrors[name]) {
    text.appendChild(el("span", "headroom-preset-note", state.previewErrors[name]));
  } else if (preview && !presetPreviewText(text, preview, state.verdicts)) {
    button.disabled = true;
  }
  row.append(text, button);
  return row;
}

// Appends what the preview changes, does and costs to `text`; false when it changes nothing.
function presetPreviewText(text, preview, verdicts) {
  const { changes, effect, better, costs } = presetSummary(preview, verdicts);
  text.appendChild(changes.length ? el("span", "headroom-preset-changes", changes.join("; "))
    : el("span", "headroom-preset-changes", "changes nothing in this workflow"));
  if (effect.length) {
    text.appendChild(el("span", `headroom-preset-effect${better > 0 ? " better" : better < 0 ? " worse" : ""}`,
      effect.join(" · ")));
  }
  if (changes.length && costs.length) text.appendChild(el("span", "headroom-preset-costs", `costs: ${costs.join("; ")}`));
  // The core withholds the verdict after the preset as before it (a broken model file, an assumed size):
  // the row says why, so its figures never read as a fit.
  if (preview.after && verdictRow(verdicts, preview.after)?.sized === false) {
    text.appendChild(el("span", "headroom-preset-note headroom-preset-withheld",
      `no verdict: ${preview.after.verdict_reason ?? "the core could not size it"}`));
  }
  return changes.length > 0;
}

function renderPanel(panel) {
  const { state, slots } = panel;
  slots.card.replaceChildren(renderBar(state.snapshot));
  slots.estimate.replaceChildren(renderStages(state.estimate, state.snapshot?.total_bytes, state.verdicts));
  renderPresets(panel);
  renderRuns(panel);
  slots.error.textContent = state.error ?? "";
}

function fail(panel, err) {
  panel.state.error = err.fix ? `${err.message}\n${err.fix}` : err.message;
  renderPanel(panel);
}

async function reestimate(panel) {
  const { app, client, state } = panel;
  const workflow = serializeWorkflow(app);
  state.estimate = await client.plan(workflow, panel.getBudget()).catch(() => state.estimate);
  state.estimatedSignature = graphSignature(workflow);
}

// The workflow now on screen: its estimate, the presets and a preview of each on the user's graph.
async function refreshWorkflow(panel) {
  const { app, client, state } = panel;
  state.error = null;
  let workflow;
  try {
    workflow = serializeWorkflow(app);
    // An edit made after a preset was applied is the user's graph now: the preset's Undo would throw
    // it away, so it goes (the frontend's own undo still has it).
    if (state.undo && graphSignature(workflow) !== state.appliedSignature) {
      state.undo = null;
      state.applied = null;
    }
    // Rows preview what Apply does, and Apply starts from the user's graph: preview that one.
    const base = state.undo?.workflow ?? workflow;
    const [vram, estimate, presets] = await Promise.all([
      client.vram(), client.plan(workflow, panel.getBudget()), client.presets()]);
    state.snapshot = vram.snapshot;
    state.estimate = estimate;
    state.presets = presets.presets ?? [];
    state.verdicts = presets.verdicts ?? [];
    const previews = await Promise.all(state.presets.map((p) => (needsCard(panel, p) ? null
      : client.applyPreset(base, p.name ?? p.id, panel.getBudget()).catch((err) => ({ error: err.message })))));
    state.presets.forEach((p, i) => {
      const name = p.name ?? p.id;
      state.previews[name] = previews[i]?.error ? null : previews[i];
      state.previewErrors[name] = previews[i]?.error ?? null;
    });
  } catch (err) {
    return fail(panel, err);
  } finally {
    if (workflow) state.estimatedSignature = graphSignature(workflow);
  }
  renderPanel(panel);
  await panel.api.refreshRuns();
}

// Puts the preset's rewritten workflow on screen (computed by the core on the user's graph) and shows
// its plan, which came in the same answer: the figures are those of the graph now on screen.
async function applyPresetOnScreen(panel, name) {
  const { app, client, state } = panel;
  try {
    // One preset at a time: go back to the user's graph first, so changes are computed on it.
    if (state.undo) undoPresetResult(app, state.undo);
    state.undo = null;
    state.applied = null;
    const result = await client.applyPreset(serializeWorkflow(app), name, panel.getBudget());
    state.undo = applyPresetResult(app, result);
    state.applied = name;
    state.previews[name] = result;
    if (result.plan) {
      state.estimate = result.plan;
      state.estimatedSignature = graphSignature(serializeWorkflow(app));
    } else {
      await reestimate(panel);
    }
    state.appliedSignature = state.estimatedSignature;
  } catch (err) {
    return fail(panel, err);
  }
  renderPanel(panel);
  return state.undo;
}

// What the panel offers its host (the extension) and its own buttons.
function panelApi(panel) {
  const { app, client, root, state, runs } = panel;
  const api = {
    element: root,
    state,
    setSnapshot(snapshot) {
      state.snapshot = snapshot;
      panel.slots.card.replaceChildren(renderBar(snapshot));
    },
    refresh: () => refreshWorkflow(panel),
    // The recorded runs and the calibration: their own section, so a server without the run history (or
    // an older pack) leaves the rest of the panel as it was.
    async refreshRuns() {
      const [answer, calibration] = await Promise.all([
        client.runs?.(20).catch((err) => ({ error: err.message })),
        client.calibration?.().catch(() => null)]);
      runs.error = answer?.error ?? null;
      runs.answer = answer?.error ? null : answer;
      runs.calibration = calibration;
      renderRuns(panel);
    },
    async setCalibration(on) {
      await panel.setCalibration(on);
      await api.refreshRuns();
      await reestimate(panel);
      renderPanel(panel);
    },
    async resetCalibration() {
      runs.calibration = await client.resetCalibration().catch(() => runs.calibration);
      renderRuns(panel);
      await reestimate(panel);
      renderPanel(panel);
    },
    refreshIfChanged: () => refreshIfChanged(panel),
    destroy: () => unwatchGraph(root, panel.watch),
    applyPreset: (name) => applyPresetOnScreen(panel, name),
    // A preset applied to the graph on screen elsewhere (the queue's auto-fix): offered for Undo here.
    adoptApplied(name, record, result) {
      state.undo = record;
      state.applied = name;
      state.previews[name] = result;
      if (result?.plan) state.estimate = result.plan;
      state.estimatedSignature = graphSignature(serializeWorkflow(app));
      state.appliedSignature = state.estimatedSignature;
      renderPanel(panel);
    },
    // Puts the graph back as it was and estimates it as it now is (not the preset's numbers).
    async undo() {
      undoPresetResult(app, state.undo);
      state.undo = null;
      state.applied = null;
      renderPanel(panel);
      await reestimate(panel);
      renderPanel(panel);
    },
  };
  return api;
}

// The graph changed since the last estimate (a widget, a node's mode, a link): estimate again.
// Called on the user's edits (debounced) and on a slow timer; cheap when nothing changed.
async function refreshIfChanged(panel) {
  const { state } = panel;
  if (state.refreshing || !panel.root.isConnected) return false;
  let signature;
  try {
    signature = graphSignature(serializeWorkflow(panel.app));
  } catch {
    return false;
  }
  if (signature === state.estimatedSignature) return false;
  state.refreshing = true;
  try {
    await panel.api.refresh();
  } finally {
    state.refreshing = false;
  }
  return true;
}

// Widget edits reach the graph through the canvas, Vue widgets or the properties panel, none of which
// tells an extension on every frontend; so the panel looks after input in the page (debounced) and
// every few seconds, and estimates again when the graph's signature moved.
function watchGraph(root, onChange) {
  const watch = { timer: null, debounce: null, listeners: [] };
  const poke = () => {
    clearTimeout(watch.debounce);
    watch.debounce = setTimeout(() => onChange(), WATCH_DEBOUNCE_MS);
  };
  for (const type of ["change", "input", "pointerup", "keyup"]) {
    root.ownerDocument.addEventListener(type, poke, true);
    watch.listeners.push([type, poke]);
  }
  watch.timer = setInterval(() => onChange(), WATCH_INTERVAL_MS);
  return watch;
}

function unwatchGraph(root, watch) {
  clearInterval(watch.timer);
  clearTimeout(watch.debounce);
  for (const [type, fn] of watch.listeners) root.ownerDocument.removeEventListener(type, fn, true);
  watch.listeners = [];
}

const WATCH_DEBOUNCE_MS = 400;
const WATCH_INTERVAL_MS = 3000;

// What an estimate depends on in a UI-format graph: each node's type, mode and widget values, and the
// links (a serialized graph also carries positions and sizes, which must not re-estimate).
export function graphSignature(workflow) {
  const nodes = (workflow?.nodes ?? []).map((n) => [n.id, n.type, n.mode ?? 0, n.widgets_values ?? null]);
  const subgraphs = (workflow?.definitions?.subgraphs ?? []).map((g) =>
    [g.id, (g.nodes ?? []).map((n) => [n.id, n.type, n.mode ?? 0, n.widgets_values ?? null]), g.links ?? null]);
  return JSON.stringify([nodes, workflow?.links ?? null, subgraphs]);
}
