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
