// Builds Headroom's extension definition for `app.registerExtension`, detecting what this frontend
// offers: sidebar tabs (1.2.4+), toasts (1.2.27+), declared settings (1.3.22+), app.rootGraph (newer
// than 1.9), the sidebarTab service (newest). Everything is reached through `app` and `api` given here.
import { clientIdOf, createClient } from "./headroom_client.js";
import { changeText, gib, loaderText, speedText } from "./headroom_format.js";
import { applyPresetResult, nodeName, serializeWorkflow } from "./headroom_graph.js";
import { patchNodeType } from "./headroom_node_view.js";
import { handleExecutionError } from "./headroom_oom.js";
import { showUnfinishedRun } from "./headroom_unfinished.js";
import { createPanel, ensureStyle } from "./headroom_panel.js";
import { readSetting, SETTING_IDS, settingDefinitions, writeSetting } from "./headroom_settings.js";

// " (dynamic VRAM)" / " (legacy loader)": which loader the queue-time verdict is for.
function loaderFor(detail) {
  const loader = loaderText(detail?.runtime);
  return loader ? ` (${loader})` : "";
}

export function registerSidebarTab(app, tab) {
  const manager = app.extensionManager;
  const register = manager?.sidebarTab?.registerSidebarTab?.bind(manager.sidebarTab) ??
    manager?.registerSidebarTab?.bind(manager);
  if (!register) return false;
  register(tab);
  return true;
}

export function toast(app, message) {
  const add = app.extensionManager?.toast?.add;
  if (add) add.call(app.extensionManager.toast, message);
  else console.warn(`[Headroom] ${message.summary}: ${message.detail}`);
}

// The extension's state: what app.registerExtension receives (`definition`) and what its hooks share.
export function createHeadroomExtension(app, api) {
  const client = createClient(api);
  const ext = { app, api, client, panel: null, host: null, watch: null, seenErrors: new Set() };
  ext.getBudget = () => readSetting(app, SETTING_IDS.budget, "auto");
  // A value the server refuses (a budget of "banana") is said where it was typed, in the settings' words,
  // at once, rather than later in red on every estimate; the server keeps the value it had.
  ext.pushSettings = (values) => client.settings(values).catch((err) => {
    if (err.status !== 400) return;
    toast(app, { severity: "error", summary: "Headroom setting not accepted", detail: err.message, life: 10000 });
  });
  ext.definition = extensionDefinition(ext);
  return ext;
}

function extensionDefinition(ext) {
  const { app, api } = ext;
  return {
    name: "headroom.panel",
    settings: settingDefinitions(ext.pushSettings),
    async beforeRegisterNodeDef(nodeType, nodeData) {
      patchNodeType(nodeType, nodeData);
    },
    async afterConfigureGraph() {
      ext.panel?.refresh();  // a workflow was loaded while the panel is open
    },
    async setup() {
      registerSidebarTab(app, {
        id: "headroom", icon: "pi pi-gauge", title: "Headroom", tooltip: "Headroom: VRAM and presets",
        type: "custom", render: (el) => openPanel(ext, el), destroy: () => closePanel(ext),
      });
      api.addEventListener("headroom.vram", (event) => ext.panel?.setSnapshot(event.detail));
      api.addEventListener("headroom.preflight", (event) => onPreflight(ext, event.detail));
      api.addEventListener("execution_error", (event) => handleExecutionError({
        app, client: ext.client, detail: event.detail, getBudget: ext.getBudget, onApplied: () => ext.panel?.refresh(),
      }));
      ext.pushSettings({
        budget: String(readSetting(app, SETTING_IDS.budget, "auto")),
        queue_action: readSetting(app, SETTING_IDS.queueAction, "warn"),
        refresh_s: Number(readSetting(app, SETTING_IDS.refresh, 1)) || 1,
        calibration: Boolean(readSetting(app, SETTING_IDS.calibration, false)),
      });
      showUnfinishedRun({ app, client: ext.client });
    },
  };
}

function openPanel(ext, el) {
  const { app, api, client } = ext;
  // Today's frontend (1.58: ExtensionSlot mounts the tab through a Vue function ref) calls render()
  // again with the same element whenever the sidebar re-renders, e.g. right after a preset changes a
  // widget: keep the panel that is there, with its undo.
  if (ext.panel && ext.host === el && el.contains(ext.panel.element)) return;
  ensureStyle(el.ownerDocument);
  ext.panel = createPanel({ app, client, getBudget: ext.getBudget,
    // Checked by the server first (400 with the reason), so a refused budget never becomes the setting.
    setBudget: async (value) => {
      await client.settings({ budget: value });
      await writeSetting(app, SETTING_IDS.budget, value);
    },
    setCalibration: (on) => writeSetting(app, SETTING_IDS.calibration, on).then(() => ext.pushSettings({ calibration: on })) });
  ext.host = el;
  el.replaceChildren(ext.panel.element);
  ext.panel.refresh();
  client.panel(true, clientIdOf(api)).catch(() => {});
  // Older frontends never call destroy(): notice when the tab's element leaves the page instead.
  clearInterval(ext.watch);
  ext.watch = setInterval(() => { if (!el.isConnected) closePanel(ext); }, 2000);
}

function closePanel(ext) {
  clearInterval(ext.watch);
  ext.watch = null;
  if (ext.panel) ext.client.panel(false, clientIdOf(ext.api)).catch(() => {});
  ext.panel?.destroy?.();  // stops its watch on the graph
  ext.panel = null;
  ext.host = null;
}

// Auto-fix changed the queued prompt with a preset; the same preset on the graph on screen makes what is
// shown what ran, with the panel's Undo (a hidden copy would leave the user looking at another workflow).
async function showFixOnScreen(ext, preset) {
  const { app, client } = ext;
  try {
    const result = await client.applyPreset(serializeWorkflow(app), preset, ext.getBudget());
    const record = applyPresetResult(app, result);
    ext.panel?.adoptApplied?.(preset, record, result);
  } catch (err) {
    toast(app, { severity: "warn", summary: "Headroom could not show the fix on screen", detail: err.message, life: 8000 });
  }
}

// Once per distinct reason: an unsupported workflow would otherwise toast on every queue.
function toastOnce(ext, reason, summary) {
  if (ext.seenErrors.has(reason)) return;
  ext.seenErrors.add(reason);
  toast(ext.app, { severity: "warn", summary, detail: reason, life: 6000 });
}

function onPreflight(ext, detail) {
  if (!detail) return;
  if (detail.error) {
    toastOnce(ext, detail.error, "Headroom could not check this workflow");
    return;
  }
  if (detail.estimated === false) {  // no peak (e.g. no diffusion loader): say so once, never a fit
    toastOnce(ext, detail.not_estimated ?? "the core gave no peak", "Headroom could not estimate this workflow");
    return;
  }
  if (!detail.over_budget && !detail.applied) showRunsTight(ext.app, detail);
  else showOverBudget(ext, detail);
}

// The plan's first change in the words the panel and `headroom plan` give (older servers: the fix).
const firstChange = (detail) => detail.first_change ?? detail.fix;

function showRunsTight(app, detail) {
  // The catalog's flags of the verdict (prompt_handler's verdict_flags): it runs, but not with room to spare.
  // Reported whatever the action: warn, block and auto-fix act only on a run that will not complete.
  const flags = detail.verdict_flags;
  if (!flags?.runs || flags?.fits) return;
  const first = firstChange(detail);
  const why = detail.verdict_reason ?? "ComfyUI will stream part of the weights or run with little margin";
  // The core's reason names the slowdown already; without one the plan's figure says it.
  const speed = !detail.verdict_reason && typeof detail.slowdown === "number" && detail.slowdown > 1.05
    ? ` (${speedText(detail.slowdown)})` : "";
  toast(app, { severity: "info", summary: `Runs: ${detail.verdict}${loaderFor(detail)}`, life: 6000,
    detail: `peak ${gib(detail.peak_bytes)} in ${detail.peak_stage} of ${gib(detail.budget_bytes)}: ${why}${speed}.${first ? ` First change: ${first}` : ""}${detail.advice ? ` ${detail.advice}` : ""}` });
}

function showOverBudget(ext, detail) {
  const app = ext.app;
  const first = firstChange(detail);
  // The core's verdict words first, as the panel, the Preflight report and `headroom plan` say them.
  const where = `${detail.verdict ? `${detail.verdict}: ` : ""}peak ${gib(detail.peak_bytes)} in ${detail.peak_stage} over ${gib(detail.budget_bytes)}` +
    `${detail.verdict_reason ? ` (${detail.verdict_reason})` : ""}${loaderFor(detail)}`;
  if (detail.applied) {
    const onScreen = detail.preset ? " The graph on screen has the same change; Undo is in the Headroom panel." : "";
    toast(app, { severity: "info", summary: "Headroom applied a fix", life: 8000,
      detail: `${where}; applied: ${detail.applied.map((c) => changeText(c, (id) => nodeName(app, id))).join("; ")}.${onScreen}` });
    if (detail.preset) showFixOnScreen(ext, detail.preset);
  } else if (detail.blocked) {
    toast(app, { severity: "error", summary: "Headroom blocked the run", detail: `${where}. First change: ${first ?? "see the plan"}`, life: 10000 });
  } else {
    toast(app, { severity: "warn", summary: detail.verdict ? `This run: ${detail.verdict}` : "This run will not fit", detail: `${where}. First change: ${first ?? "see the Headroom panel"}`, life: 10000 });
  }
}
