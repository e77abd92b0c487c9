// The extension's settings (declared in the extension definition, v1.3.22+), mirrored to the server
// so the queue-time check uses them.
export const SETTING_IDS = {
  budget: "Headroom.Budget",
  queueAction: "Headroom.QueueAction",
  refresh: "Headroom.RefreshSeconds",
  calibration: "Headroom.Calibration",
};

export function settingDefinitions(onChange) {
  return [
    {
      id: SETTING_IDS.budget, name: "Budget (auto, GB, or a GPU name)", type: "text", defaultValue: "auto",
      category: ["Headroom", "Budget", "Override"],
      tooltip: "auto = free VRAM as ComfyUI counts it. A number of GB or a GPU name plans for another card.",
      onChange: (value) => onChange({ budget: String(value ?? "auto") }),
    },
    {
      id: SETTING_IDS.queueAction, name: "When a queued workflow will not fit", type: "combo", defaultValue: "warn",
      options: ["pass", "warn", "block", "auto-fix"], category: ["Headroom", "Queue", "Action"],
      tooltip: "pass: say nothing; warn: toast with the peak and the fix; block: do not queue; auto-fix: apply the cheapest fix.",
      onChange: (value) => onChange({ queue_action: value ?? "warn" }),
    },
    {
      id: SETTING_IDS.refresh, name: "Memory bar refresh (seconds)", type: "number", defaultValue: 1,
      attrs: { min: 0.2, max: 60, step: 0.1 }, category: ["Headroom", "Panel", "Refresh"],
      onChange: (value) => onChange({ refresh_s: Number(value) || 1 }),
    },
    {
      id: SETTING_IDS.calibration, name: "Calibrate estimates from my own runs", type: "boolean", defaultValue: false,
      category: ["Headroom", "Calibration", "Enabled"],
      tooltip: "Corrections per model and stage learned from this card's recorded runs (docs/calibration.md).",
      onChange: (value) => onChange({ calibration: Boolean(value) }),
    },
  ];
}

export function writeSetting(app, id, value) {
  try {
    const set = app.extensionManager?.setting?.set ?? app.ui?.settings?.setSettingValue;
    const owner = app.extensionManager?.setting?.set ? app.extensionManager.setting : app.ui?.settings;
    return set ? Promise.resolve(set.call(owner, id, value)).catch(() => {}) : Promise.resolve();
  } catch {
    return Promise.resolve();
  }
}

export function readSetting(app, id, fallback) {
  try {
    return app.extensionManager?.setting?.get?.(id) ?? app.ui?.settings?.getSettingValue?.(id) ?? fallback;
  } catch {
    return fallback;
  }
}
