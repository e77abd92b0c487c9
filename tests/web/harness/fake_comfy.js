// Browser-side stand-ins for ComfyUI's `app` and `api`, holding a graph built from a real workflow
// template (UI format). Widget names per node type (widgets.json) follow ComfyUI's node definitions
// (INPUT_TYPES order; KSampler's seed carries the frontend's control_after_generate widget after it).
// The table is JSON so that the Python mock of the routes reads this same one.
import WIDGETS from "./widgets.json" with { type: "json" };

export { WIDGETS };

export function widgetNames(type, count) {
  const names = WIDGETS[type] ?? [];
  return Array.from({ length: count }, (_, i) => names[i] ?? `widget_${i}`);
}

class FakeNode {
  // `recorded`: this node as a real frontend built it ({id, type, widgets: [{name, value}]}), when known.
  constructor(data, recorded, fromValues = false) {
    this.id = data.id;
    this.type = data.type;
    this.comfyClass = data.type;
    this.mode = data.mode ?? 0;
    const values = Array.isArray(data.widgets_values) ? data.widgets_values : [];
    // A recorded node gives its widgets' names; a graph configured again takes the workflow's values.
    this.widgets = recorded
      ? recorded.widgets.map((w, i) => ({ ...w, ...(fromValues && i < values.length ? { value: values[i] } : {}) }))
      : widgetNames(data.type, values.length).map((name, i) => ({ name, value: values[i] }));
    this.dirty = 0;
  }
  setDirtyCanvas() { this.dirty += 1; }
}

export class FakeGraph {
  constructor(workflow, recordedNodes = null) {
    this.recorded = new Map((recordedNodes ?? []).map((n) => [n.id, n]));
    this.configure(workflow);
    this.dirty = 0;
  }
  // LiteGraph's configure: the graph becomes the given workflow (nodes made again from their types); a
  // recorded node is reused only while it keeps its type.
  configure(workflow) {
    this.workflow = workflow;
    this.configured = (this.configured ?? -1) + 1;
    this.nodes = workflow.nodes.map((n) => {
      const rec = this.recorded.get(n.id);
      return new FakeNode(n, rec?.type === n.type ? rec : null, this.configured > 0);
    });
  }
  getNodeById(id) { return this.nodes.find((n) => n.id === id) ?? null; }
  setDirtyCanvas() { this.dirty += 1; }
  serialize() {
    const byId = new Map(this.nodes.map((n) => [n.id, n]));
    return {
      ...this.workflow,
      nodes: this.workflow.nodes.map((n) => ({ ...n, widgets_values: Array.isArray(n.widgets_values)
        ? byId.get(n.id).widgets.map((w) => w.value) : n.widgets_values })),
    };
  }
  widget(nodeId, name) { return this.getNodeById(nodeId)?.widgets.find((w) => w.name === name)?.value; }
}

// flavour "modern": app.rootGraph, extensionManager.sidebarTab, dialog service (frontend 1.27+);
// flavour "v1.4": app.graph only, extensionManager.registerSidebarTab, no dialog (frontend 1.4.13).
export function makeComfy(workflow, flavour = "modern", settings = {}, recordedNodes = null) {
  const graph = new FakeGraph(workflow, recordedNodes);
  const toasts = [];
  const tabs = [];
  const extensions = [];
  const extensionManager = {
    toast: { add: (m) => toasts.push(m) },
    setting: { get: (id) => settings[id], set: async (id, v) => { settings[id] = v; } },
  };
  const app = {
    graph,
    canvas: { setDirty() {} },
    extensionManager,
    registerExtension(ext) { extensions.push(ext); },
  };
  if (flavour === "modern") {
    app.rootGraph = graph;
    extensionManager.sidebarTab = { registerSidebarTab: (t) => tabs.push(t) };
    extensionManager.dialog = { confirm: async () => true, prompt: async () => null };
  } else {
    extensionManager.registerSidebarTab = (t) => tabs.push(t);
  }
  const api = new EventTarget();
  api.clientId = "test-client";
  api.fetchApi = (path, init) => fetch(`/api${path}`, init);
  api.emit = (type, detail) => api.dispatchEvent(new CustomEvent(type, { detail }));
  return { app, api, graph, toasts, tabs, extensions, settings };
}
