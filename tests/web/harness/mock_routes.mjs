// Answers the pack's /headroom/* routes in the shape nodes/routes.py returns, with canned numbers
// (GiB figures below are illustrative, not estimates). Presets are computed on the workflow the
// page posts, so the test sees which widgets the panel then rewrites.
import { widgetNames } from "./fake_comfy.js";

const GIB = 1024 ** 3;
// A card reading in the shape of GET /headroom/vram (RTX 4090: 24564 MiB as torch reports its total).
export const SNAPSHOT = {
  device: "NVIDIA GeForce RTX 4090", total_bytes: 25757220864, free_bytes: 9.1 * GIB, comfy_reserve_bytes: 400 * 1024 ** 2,
  torch_allocated_bytes: 11.2 * GIB, torch_reserved_bytes: 12.6 * GIB, reserved_unallocated_bytes: 1.4 * GIB,
  other_processes: [{ pid: 4242, bytes: 1.1 * GIB }], other_processes_bytes: 1.1 * GIB,
};
export const PRESETS = [
  { name: "fp8-weights", title: "fp8 weights" },
  { name: "headroom-decode", title: "Headroom exact tiled decode" },
  { name: "half-frames", title: "Half the frames" },
];
export const PEAKS = { base: 27.3 * GIB, "fp8-weights": 21.0 * GIB, "headroom-decode": 19.8 * GIB, "half-frames": 16.4 * GIB };

function widgetValue(node, name) {
  const names = widgetNames(node.type, node.widgets_values?.length ?? 0);
  return node.widgets_values?.[names.indexOf(name)];
}

export function presetChanges(workflow, preset) {
  const changes = [];
  for (const node of workflow.nodes ?? []) {
    if (node.mode === 4) continue;
    const change = (widget, to) => changes.push({ node_id: node.id, widget, from: widgetValue(node, widget), to });
    if (preset === "fp8-weights" && node.type === "UNETLoader") change("weight_dtype", "fp8_e4m3fn");
    if (preset === "headroom-decode" && node.type === "HeadroomVAEDecode") change("mode", "exact");
    if (preset === "half-frames" && /ImageToVideo|LatentVideo/.test(node.type)) {
      const length = widgetValue(node, "length");
      change("length", Math.floor((length - 1) / 8) * 4 + 1);
    }
  }
  return changes;
}

export function estimateFor(workflow) {
  const over = (workflow.nodes ?? []).some((n) => n.type === "UNETLoader" && widgetValue(n, "weight_dtype") === "default");
  const sample = over ? 22.5 * GIB : 15.9 * GIB;
  return {
    peak_bytes: over ? PEAKS.base : 19.8 * GIB, peak_stage: over ? "decode" : "decode",
    stages: [{ name: "text_encode", peak_bytes: 6.1 * GIB }, { name: "sample", peak_bytes: sample },
      { name: "decode", peak_bytes: over ? PEAKS.base : 19.8 * GIB }],
    budget_bytes: SNAPSHOT.free_bytes + SNAPSHOT.torch_allocated_bytes + SNAPSHOT.reserved_unallocated_bytes,
    verdict: over ? "does not fit" : "fits",
  };
}

// Shape of the core's explain(): diagnosis {id, text}, fixes [{id, text}] (no preset names).
export const EXPLANATION = {
  recognised: true,
  diagnosis: { id: "out_of_memory", text: "The job needs more memory than the card has: 100.0 MiB more was requested with 91.2 MiB free of 44.53 GiB." },
  fixes: [{ id: "lower_precision", text: "Load quantised weights (fp8)" }, { id: "smaller_batch", text: "Lower the batch size or the resolution" }],
};
const BUDGET = 21.7 * GIB;

export async function mock(method, route, body) {
  if (route === "/headroom/vram") return [200, { snapshot: SNAPSHOT, native: { core: { available: true } } }];
  if (route === "/headroom/presets") return [200, { presets: PRESETS }];
  if (route === "/headroom/estimate") {
    if (!body?.workflow?.nodes) return [400, { error: "workflow: expected a ComfyUI workflow object" }];
    return [200, estimateFor(body.workflow)];
  }
  if (route === "/headroom/apply-preset") {
    const changes = presetChanges(body.workflow, body.preset);
    const after = PEAKS[body.preset];
    const verdict = (peak) => (peak <= BUDGET ? "fits" : "does not fit");
    return [200, { workflow: body.workflow, before: { peak_bytes: PEAKS.base, verdict: verdict(PEAKS.base) },
      after: { peak_bytes: after, verdict: verdict(after) }, changes }];
  }
  if (route === "/headroom/explain") return [200, EXPLANATION];
  if (route === "/headroom/settings" || route === "/headroom/panel") return [200, body ?? {}];
  return [404, { error: "no such route" }];
}
