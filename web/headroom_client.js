// A budget as request fields: the settings' text ("auto", "12", a GPU name) or fields such as { vram_bytes }.
function budgetFields(budget) {
  return budget && typeof budget === "object" ? budget : { budget };
}

// The pack's HTTP routes through ComfyUI's api.fetchApi (which adds /api and the user headers).
export function createClient(api) {
  async function call(path, body) {
    const init = body === undefined ? {} : {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    };
    const res = await api.fetchApi(path, init);
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = { error: `HTTP ${res.status}` };
    }
    if (!res.ok) {
      const err = new Error(data?.error ?? `HTTP ${res.status}`);
      err.status = res.status;
      err.fix = data?.fix;
      throw err;
    }
    return data;
  }
  return {
    vram: () => call("/headroom/vram"),
    presets: () => call("/headroom/presets"),
    // The core's plan: the estimate per stage, the verdict and the ordered changes.
    plan: (workflow, budget) => call("/headroom/plan", { workflow, budget }),
    applyPreset: (workflow, preset, budget) => call("/headroom/apply-preset", { workflow, preset, ...budgetFields(budget) }),
    // The preset the OOM toast offers, ranked by the core ({chosen, ranked, not_ranked}).
    suggestPreset: (workflow, budget) => call("/headroom/suggest-preset", { workflow, ...budgetFields(budget) }),
    explain: (text) => call("/headroom/explain", { text }),
    // The run recorder's history (GET /headroom/runs): {v, runs: [newest first], skipped_lines}.
    runs: (limit = 20) => call(`/headroom/runs?limit=${encodeURIComponent(limit)}`),
    settings: (values) => call("/headroom/settings", values),
    panel: (open, clientId) => call("/headroom/panel", { open, client_id: clientId ?? null }),
    // The run the previous process left unfinished ({run, explanation}, both null when none or seen).
    unfinishedRun: () => call("/headroom/runs/unfinished"),
    unfinishedSeen: () => call("/headroom/runs/unfinished/seen", {}),
    calibration: () => call("/headroom/calibration"),
    resetCalibration: () => call("/headroom/calibration/reset", {}),
  };
}

// The websocket client id, across frontend versions.
export function clientIdOf(api) {
  return api?.clientId ?? api?.initialClientId ?? globalThis.sessionStorage?.getItem?.("clientId") ?? null;
}
