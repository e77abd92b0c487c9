// Shows a Headroom node's report (the Python `ui.text`) in the node body through a DOM widget, the
// only node-body UI that also works with Vue nodes.
export const VIEW_NODES = new Set([
  "HeadroomPreflight", "HeadroomVAEDecode", "HeadroomLoadDiffusionModel", "HeadroomExplainOOM", "HeadroomVRAMSnapshot",
]);

function viewOf(node) {
  if (node.__headroomView) return node.__headroomView;
  const pre = document.createElement("pre");
  pre.className = "headroom-node-report";
  Object.assign(pre.style, { margin: 0, font: "11px/1.35 monospace", whiteSpace: "pre-wrap", overflow: "auto" });
  if (typeof node.addDOMWidget === "function") {
    node.addDOMWidget("headroom_report", "headroom_report", pre, {
      serialize: false, hideOnZoom: true, getValue: () => pre.textContent, setValue: () => {}, getMinHeight: () => 60,
    });
  }
  node.__headroomView = pre;
  return pre;
}

export function showReport(node, output) {
  const text = (output?.text ?? []).join("\n");
  if (!text) return;
  viewOf(node).textContent = text;
  node.setDirtyCanvas?.(true, true);
}

// beforeRegisterNodeDef body: wraps onExecuted for our node types only.
export function patchNodeType(nodeType, nodeData) {
  if (!VIEW_NODES.has(nodeData?.name)) return;
  const original = nodeType.prototype.onExecuted;
  nodeType.prototype.onExecuted = function (output) {
    original?.apply(this, arguments);
    showReport(this, output);
  };
}
