// Reading and rewriting the graph's widgets. Works with today's frontend (app.rootGraph) and with
// 1.x builds that only have app.graph.
export function getGraph(app) {
  return app.rootGraph ?? app.graph;
}

export function serializeWorkflow(app) {
  return getGraph(app).serialize();
}

function findInGraph(graph, id) {
  const numeric = Number(id);
  return graph?.getNodeById?.(numeric) ?? graph?.getNodeById?.(id) ??
    graph?.nodes?.find((n) => String(n.id) === String(id)) ?? null;
}

// Node ids from the server may be execution paths into subgraphs ("130:122" = node 122 inside the
// subgraph instance 130), as in ComfyUI's prompts.
export function findNode(graph, id) {
  const parts = String(id).split(":");
  let node = null;
  let scope = graph;
  for (const part of parts) {
    node = findInGraph(scope, part);
    if (!node) return null;
    scope = node.subgraph;
  }
  return node;
}

// A node as messages name it: its title on the canvas (the user's own, or its type's display name), so an
// execution path such as "194:46" (node 46 inside subgraph instance 194) never reaches the user; "node
// <id>" only when the node is not in the graph on screen.
export function nodeName(app, id) {
  const node = findNode(getGraph(app), id);
  const title = node?.title ?? node?.getTitle?.() ?? node?.type;
  return title ? `“${title}”` : `node ${id}`;
}

function markDirty(app, node) {
  node?.setDirtyCanvas?.(true, true);
  getGraph(app)?.setDirtyCanvas?.(true, true);
  app.canvas?.setDirty?.(true, true);
}

// Sets one widget; returns its previous value, or undefined when the node/widget is not there.
export function setWidget(app, nodeId, name, value) {
  const node = findNode(getGraph(app), nodeId);
  const widget = node?.widgets?.find((w) => w.name === name);
  if (!widget) return undefined;
  const previous = widget.value;
  widget.value = value;
  widget.callback?.(value);
  markDirty(app, node);
  return previous;
}

// Applies [{node_id, widget, to}] to the live graph. Returns the undo record: what was really changed,
// with the values found in the graph (not the ones the server assumed).
export function applyChanges(app, changes) {
  const record = [];
  for (const change of changes ?? []) {
    if (change?.node_id === undefined || !change.widget) continue;
    const previous = setWidget(app, change.node_id, change.widget, change.to);
    if (previous !== undefined) record.push({ node_id: change.node_id, widget: change.widget, from: previous, to: change.to });
  }
  return record;
}

export function undoChanges(app, record) {
  for (const change of [...(record ?? [])].reverse()) setWidget(app, change.node_id, change.widget, change.from);
}

function redraw(app) {
  getGraph(app)?.setDirtyCanvas?.(true, true);
  app.canvas?.setDirty?.(true, true);
  // Today's frontend keeps its own undo history (Ctrl+Z); tell it the graph moved.
  const tracker = app.extensionManager?.workflow?.activeWorkflow?.changeTracker;
  (tracker?.captureCanvasState ?? tracker?.checkState)?.call(tracker);
}

// Puts a whole workflow (UI format) on screen in place of the graph there, in the same tab.
function loadInPlace(app, workflow) {
  const graph = getGraph(app);
  if (app.canvas?.graph && app.canvas.graph !== graph) app.canvas.setGraph?.(graph);  // leave a subgraph view
  graph.configure(structuredClone(workflow));
  redraw(app);
}

// Applies a preset's answer to the graph on screen and returns its undo record. The core rewrote the
// workflow it priced (widgets, and nodes it swaps, such as VAEDecode -> VAEDecodeTiled, subgraphs
// included), so that very workflow is loaded: what runs is what the preview promised. A frontend whose
// graph cannot be loaded in place gets the widget edits, and a node swap is refused rather than left out.
export function applyPresetResult(app, result) {
  const graph = getGraph(app);
  const changes = result?.changes ?? [];
  const before = serializeWorkflow(app);
  if (Array.isArray(result?.workflow?.nodes) && typeof graph?.configure === "function") {
    loadInPlace(app, result.workflow);
    return { workflow: before, changes };
  }
  const swap = changes.find((c) => c?.replace);
  if (swap) {
    throw new Error(`this frontend cannot load a graph in place, so ${nodeName(app, swap.node_id)} cannot become ` +
                    `${swap.to}; replace it by hand`);
  }
  return { changes: applyChanges(app, changes) };
}

// Undoes applyPresetResult: the graph as it was, byte for byte (or the widgets put back).
export function undoPresetResult(app, record) {
  if (record?.workflow) loadInPlace(app, record.workflow);
  else undoChanges(app, record?.changes ?? record);
}
