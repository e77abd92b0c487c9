// The sidebar panel: the card and its live memory bar, the workflow's predicted peak per stage, and
// presets as one-click rewrites with their before/after peaks and an undo. Plain DOM; takes `app`.
import { applyChanges, serializeWorkflow, undoChanges } from "./headroom_graph.js";
import { changeText, gib, pct } from "./headroom_format.js";

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
.headroom-preset button,.headroom-undo{cursor:pointer}
.headroom-error{color:#ff7b7b;white-space:pre-wrap}
`;

export function ensureStyle(doc = document) {
  if (doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement("style");
  style.id = STYLE_ID;
  style.textContent = CSS;
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

export function renderStages(estimate, cardBytes) {
  const wrap = el("div", "headroom-estimate");
  if (!estimate) return wrap;
  const limit = estimate.budget_bytes ?? cardBytes;
  const table = el("table", "headroom-stages");
  for (const stage of estimate.stages ?? []) {
    const row = el("tr", stage.name === estimate.peak_stage ? "peak" : "");
    row.dataset.stage = stage.name;
    const barCell = el("td", "bar");
    const bar = el("div", `headroom-stage-bar${limit && stage.peak_bytes > limit ? " over" : ""}`);
    bar.style.width = `${limit ? pct(stage.peak_bytes, limit) : 100}%`;
    barCell.appendChild(bar);
    row.append(el("td", "", stage.name), el("td", "", gib(stage.peak_bytes)), barCell);
    table.appendChild(row);
  }
  // The core's verdict when it gave one: "fits", "tight" (partial weight loading or little margin) or
  // "does not fit"; otherwise the peak against the card.
  const word = estimate.verdict ?? (limit ? (estimate.peak_bytes > limit ? "over" : "fits") : "");
  const over = /not|over/.test(word);
  const verdict = el("div", `headroom-verdict ${word ? (over ? "over" : word === "tight" ? "tight" : "fits") : ""}`,
    limit ? `Peak ${gib(estimate.peak_bytes)} in ${estimate.peak_stage} — ${word} (${gib(limit)})`
          : `Peak ${gib(estimate.peak_bytes)} in ${estimate.peak_stage}`);
  wrap.append(table, verdict);
  return wrap;
}

export function createPanel({ app, client, getBudget = () => "auto" }) {
  const root = el("div", "headroom-panel");
  const state = { snapshot: null, estimate: null, presets: [], previews: {}, undo: null, applied: null, error: null };
  const cardSlot = el("div");
  const estimateSlot = el("div");
  const presetSlot = el("div", "headroom-presets");
  const errorSlot = el("div", "headroom-error");
  const header = el("div", "headroom-workflow-header");
  const refreshButton = el("button", "headroom-refresh", "Refresh");
  refreshButton.title = "Estimate the workflow as it is now";
  refreshButton.addEventListener("click", () => api.refresh());
  header.append(el("h3", "", "This workflow"), refreshButton);
  Object.assign(header.style, { display: "flex", justifyContent: "space-between", alignItems: "center" });
  root.append(cardSlot, header, estimateSlot, presetSlot, errorSlot);

  function renderPresets() {
    presetSlot.replaceChildren(el("h3", "", "Presets"));
    if (!state.presets.length && !state.error) presetSlot.appendChild(el("div", "headroom-none", "No presets available."));
    for (const preset of state.presets) {
      const name = preset.name ?? preset.id;
      const preview = state.previews[name];
      const row = el("div", "headroom-preset");
      row.dataset.preset = name;
      const label = preview?.after
        ? `${preset.title ?? name}: ${gib(preview.before?.peak_bytes)} → ${gib(preview.after?.peak_bytes)}`
        : (preset.title ?? name);
      const button = el("button", "headroom-apply", "Apply");
      button.addEventListener("click", () => api.applyPreset(name));
      const labelEl = el("span", "headroom-preset-label", label);
      if (preset.description) labelEl.title = preset.description;
      if (preview?.after?.verdict) labelEl.dataset.verdict = preview.after.verdict;
      row.append(labelEl, button);
      presetSlot.appendChild(row);
    }
    if (state.undo?.length) {
      const undo = el("button", "headroom-undo", `Undo ${state.applied}`);
      undo.title = state.undo.map(changeText).join("\n");
      undo.addEventListener("click", () => api.undo());
      presetSlot.appendChild(undo);
    }
  }

  function render() {
    cardSlot.replaceChildren(renderBar(state.snapshot));
    estimateSlot.replaceChildren(renderStages(state.estimate, state.snapshot?.total_bytes));
    renderPresets();
    errorSlot.textContent = state.error ?? "";
  }

  function fail(err) {
    state.error = err.fix ? `${err.message}\n${err.fix}` : err.message;
    render();
  }

  const api = {
    element: root,
    state,
    setSnapshot(snapshot) {
      state.snapshot = snapshot;
      cardSlot.replaceChildren(renderBar(snapshot));
    },
    async refresh() {
      state.error = null;
      try {
        const workflow = serializeWorkflow(app);
        const [vram, estimate, presets] = await Promise.all([
          client.vram(), client.estimate(workflow, getBudget()), client.presets()]);
        state.snapshot = vram.snapshot;
        state.estimate = estimate;
        state.presets = presets.presets ?? [];
        const previews = await Promise.all(state.presets.map((p) =>
          client.applyPreset(workflow, p.name ?? p.id, getBudget()).catch(() => null)));
        state.presets.forEach((p, i) => { state.previews[p.name ?? p.id] = previews[i]; });
      } catch (err) {
        return fail(err);
      }
      render();
    },
    // Rewrites the live graph with the preset's changes (computed by the server on the current graph).
    async applyPreset(name) {
      try {
        // One preset at a time: go back to the user's graph first, so changes are computed on it.
        if (state.undo?.length) undoChanges(app, state.undo);
        state.undo = null;
        const result = await client.applyPreset(serializeWorkflow(app), name, getBudget());
        state.undo = applyChanges(app, result.changes);
        state.applied = name;
        state.previews[name] = result;
        state.estimate = await client.estimate(serializeWorkflow(app), getBudget()).catch(() => state.estimate);
      } catch (err) {
        return fail(err);
      }
      render();
      return state.undo;
    },
    undo() {
      undoChanges(app, state.undo);
      state.undo = null;
      state.applied = null;
      render();
    },
  };
  render();
  return api;
}
