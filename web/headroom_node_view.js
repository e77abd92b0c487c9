// Shows a Headroom node's report (the Python `ui.text`) in the node body through a DOM widget, the
// only node-body UI that also works with Vue nodes.
export const VIEW_NODES = new Set([
  "HeadroomPreflight", "HeadroomVAEDecode", "HeadroomLoadDiffusionModel", "HeadroomExplainOOM", "HeadroomVRAMSnapshot",
]);

// The report is read, not scrolled: the widget asks for the height of all its lines (a report is 10-25
// lines), and the node grows to it once when a report arrives; past MAX_LINES it scrolls.
const LINE_PX = 15;  // 11 px monospace at line-height 1.35, rounded up
const PAD_PX = 6;
const MAX_LINES = 60;

export function reportHeight(text) {
  const lines = Math.min(MAX_LINES, Math.max(1, String(text ?? "").split("\n").length));
  return lines * LINE_PX + PAD_PX;
}

function viewOf(node) {
  if (node.__headroomView) return node.__headroomView;
  const pre = document.createElement("pre");
  pre.className = "headroom-node-report";
  Object.assign(pre.style, { margin: 0, font: `11px/${LINE_PX}px monospace`, whiteSpace: "pre-wrap",
    overflow: "auto", boxSizing: "border-box" });
  if (typeof node.addDOMWidget === "function") {
    node.addDOMWidget("headroom_report", "headroom_report", pre, {
      serialize: false, hideOnZoom: true, getValue: () => pre.textContent, setValue: () => {},
      getMinHeight: () => reportHeight(pre.textContent),
    });
  }
  node.__headroomView = pre;
  return pre;
}

// Grows the node (never shrinks it: the user may have made it larger) to what its widgets now ask for.
function fitNode(node) {
  const wanted = node.computeSize?.();
  if (!Array.isArray(wanted) || !Array.isArray(node.size)) return;
  const size = [Math.max(node.size[0], wanted[0]), Math.max(node.size[1], wanted[1])];
  if (size[0] !== node.size[0] || size[1] !== node.size[1]) {
    if (typeof node.setSize === "function") node.setSize(size);
    else node.size = size;
  }
}

export function showReport(node, output) {
  const text = (output?.text ?? []).join("\n");
  if (!text) return;
  viewOf(node).textContent = text;
  fitNode(node);
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
