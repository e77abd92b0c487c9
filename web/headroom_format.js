// Number formatting shared by the panel, the toasts and the node views.
const GIB = 1024 ** 3;

export function gib(bytes) {
  if (bytes === null || bytes === undefined || Number.isNaN(bytes)) return "n/a";
  return `${(bytes / GIB).toFixed(1)} GiB`;
}

export function pct(part, whole) {
  if (!whole || part === null || part === undefined) return 0;
  return Math.max(0, Math.min(100, (part / whole) * 100));
}

// The text of a planner/preset change, whatever form the core gives it. `nameOf(node_id)` names the node
// as the user sees it (its title, headroom_graph.js nodeName); without it the id is all there is. Only a
// function counts: `list.map(changeText)` passes the index there.
export function changeText(change, nameOf) {
  if (!change || typeof change !== "object") return String(change ?? "");
  if (typeof nameOf !== "function") nameOf = (id) => `node ${id}`;
  if (change.description || change.summary || change.title) return change.description || change.summary || change.title;
  if (change.preset) return `preset ${change.preset}`;
  if (change.replace) return `${nameOf(change.node_id)}: ${replaceText(change)}`;
  if (change.widget) return `${nameOf(change.node_id)}: ${change.widget} ${change.from ?? ""} → ${change.to}`;
  return JSON.stringify(change);
}

// The loader a verdict is for, from the core's `runtime` (docs/runtime.md), or null when it names none.
const LOADER_WORDS = { dynamic: "dynamic VRAM", legacy: "legacy loader" };

export function loaderText(runtime) {
  if (!runtime) return null;
  return LOADER_WORDS[runtime] ?? String(runtime);
}

// "1.7× slower" from the plan's slowdown (1.0 = every weight resident, no streaming).
export function speedText(slowdown) {
  if (typeof slowdown !== "number" || !Number.isFinite(slowdown)) return null;
  return slowdown <= 1.05 ? "full speed" : `${slowdown.toFixed(1)}× slower`;
}

// "VAEDecode → VAEDecodeTiled (tile_size 768, overlap 64, …)": a node the preset swaps, with the widgets
// the new node gets (the core's `replace` change).
export function replaceText(change) {
  const widgets = Object.entries(change?.widgets ?? {}).map(([k, v]) => `${k} ${v}`).join(", ");
  return `${change?.from ?? "?"} → ${change?.to ?? "?"}${widgets ? ` (${widgets})` : ""}`;
}
