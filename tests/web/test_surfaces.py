"""The OOM toast, the settings, the node reports and the auto-fix toast in the browser (issue 23 #8,
issue 22): the toast follows the core's `recognised`, shows the recorded run's figures when the recorder
has them, says a refused setting where it was typed, and names nodes by their titles."""
import json

from .harness.mock_routes import OOM_RUN

ABSENCE_MS = 300  # how long a failure that is no memory failure gets to (wrongly) raise a toast
GIB = 1024 ** 3


def emit_error(page, exception_type, message, prompt_id=None):
    page.evaluate("([t, m, p]) => window.__comfy.api.emit('execution_error', "
                  "{ exception_type: t, exception_message: m, prompt_id: p })", [exception_type, message, prompt_id])


def test_a_memory_failure_that_never_says_out_of_memory_gets_the_toast_with_its_figures(open_panel, server):
    page, errors = open_panel("/workflows/wan2.2_ti2v_5b.json")
    before = len(server.routed("/headroom/explain"))
    emit_error(page, "ValueError", "bad input")
    page.wait_for_timeout(ABSENCE_MS)
    # The core was asked and said no: no toast.
    assert [r["body"]["text"] for r in server.routed("/headroom/explain")[before:]] == ["ValueError: bad input"]
    assert page.query_selector(".headroom-toast") is None
    # comfy-aimdo's failure (Comfy-Org/ComfyUI#16225) says neither "out of memory" nor "failed to allocate".
    emit_error(page, "MemoryError", "VBAR allocation failed", OOM_RUN["prompt_id"])
    page.wait_for_selector(".headroom-toast .headroom-measured")
    measured = page.text_content(".headroom-measured")
    assert "decode reached 23.5 GiB of VRAM (predicted 19.5 GiB)" in measured
    assert "card 24.0 GiB" in measured and "18.0 GiB system RAM free" in measured
    assert errors == []


def test_the_toast_stands_without_the_runs_route_or_a_recorded_run(open_panel, server):
    page, errors = open_panel("/workflows/wan2.2_ti2v_5b.json")
    emit_error(page, "MemoryError", "VBAR allocation failed", "a-prompt-the-recorder-never-saw")
    page.wait_for_selector(".headroom-toast")
    assert page.query_selector(".headroom-measured") is None
    page.evaluate("() => document.querySelector('.headroom-toast').remove()")
    page.route("**/api/headroom/runs*", lambda route: route.fulfill(
        status=404, content_type="application/json", body=json.dumps({"error": "no such route"})))
    emit_error(page, "MemoryError", "VBAR allocation failed", OOM_RUN["prompt_id"])
    page.wait_for_selector(".headroom-toast .headroom-diagnosis")
    assert page.query_selector(".headroom-measured") is None
    assert errors == []


def test_the_fix_button_is_a_short_label_and_its_sentence_is_in_the_body(open_panel):
    page, _ = open_panel("/templates/flux_schnell.json")
    sentence = ("Give ComfyUI's reserve back: start it with --reserve-vram 0.5 so the loader keeps 0.5 GB for "
                "other programs. Costs: less room for other programs on the card.")
    shown = page.evaluate("""async (sentence) => {
      const { showOomToast } = await import("/extensions/headroom/headroom_oom.js");
      const result = { recognised: true, diagnosis: { id: "out_of_memory", text: "d" }, fixes: [] };
      const toast = showOomToast({ app: window.__comfy.app, client: {}, result,
                                   fix: { id: "fit", preset: "fit this card", text: sentence } });
      return { button: toast.querySelector(".headroom-apply-fix").textContent,
               detail: toast.querySelector(".headroom-fix-detail").textContent };
    }""", sentence)
    assert shown["button"] == "Apply fit this card"
    assert sentence in shown["detail"]


def test_a_budget_the_server_refuses_is_said_where_it_was_typed(open_panel):
    page, _ = open_panel("/templates/flux_schnell.json")
    message = "budget: 'banana' is neither a size in GB nor a card Headroom knows. Type auto, a size in GB such as 12"
    page.route("**/api/headroom/settings", lambda route: route.fulfill(
        status=400, content_type="application/json", body=json.dumps({"error": message})))
    before = len(page.evaluate("() => window.__comfy.toasts"))
    page.evaluate("() => window.__comfy.extensions[0].settings[0].onChange('banana')")
    page.wait_for_function(f"() => window.__comfy.toasts.length > {before}")
    toast = page.evaluate("() => window.__comfy.toasts.at(-1)")
    assert toast["severity"] == "error" and toast["detail"] == message


def test_a_node_report_grows_the_node_to_its_lines(open_panel):
    page, _ = open_panel("/templates/flux_schnell.json")
    size = page.evaluate("""async () => {
      const ext = window.__comfy.extensions[0];
      function NodeType() { this.size = [240, 80]; this.widgets = []; }
      NodeType.prototype.addDOMWidget = function (name, type, el, options) {
        this.widgets.push(options); document.body.appendChild(el); return { element: el };
      };
      // LiteGraph's computeSize: the title and inputs, plus what each widget asks for.
      NodeType.prototype.computeSize = function () {
        return [240, 40 + this.widgets.reduce((h, w) => h + w.getMinHeight(), 0)];
      };
      NodeType.prototype.setSize = function (s) { this.size = s; };
      await ext.beforeRegisterNodeDef(NodeType, { name: "HeadroomPreflight" });
      const node = new NodeType();
      const lines = Array.from({ length: 20 }, (_, i) => `line ${i}`).join("\\n");
      node.onExecuted({ text: [lines] });
      return node.size;
    }""")
    assert size[0] == 240 and size[1] >= 20 * 14 + 40


def test_messages_name_nodes_by_title_not_by_execution_path(open_panel):
    page, _ = open_panel("/templates/flux_schnell.json")
    names = page.evaluate("""async () => {
      const { nodeName } = await import("/extensions/headroom/headroom_graph.js");
      const inner = { id: 46, type: "UNETLoader", title: "Load Diffusion Model" };
      const host = { id: 194, subgraph: { getNodeById: (id) => (id === 46 ? inner : null) } };
      const app = { graph: { getNodeById: (id) => (id === 194 ? host : null) } };
      return [nodeName(app, "194:46"), nodeName(app, "7")];
    }""")
    assert names == ["“Load Diffusion Model”", "node 7"]
    node = page.evaluate("() => { const n = window.__comfy.graph.nodes[0]; n.title = 'My loader'; return n.id; }")
    page.evaluate("""(id) => window.__comfy.api.emit("headroom.preflight", {
      over_budget: true, peak_bytes: 14 * 1024 ** 3, peak_stage: "sample", budget_bytes: 11 * 1024 ** 3,
      applied: [{ node_id: String(id), widget: "weight_dtype", from: "default", to: "fp8_e4m3fn" }] })""", node)
    detail = page.evaluate("() => window.__comfy.toasts.at(-1).detail")
    assert "“My loader”: weight_dtype default → fp8_e4m3fn" in detail and f"node {node}" not in detail


def test_the_panels_budget_field_is_validated_where_it_is_typed(open_panel):
    """Issue 23: a budget control in the panel; the server refuses 'banana' under the field, the setting
    keeps its value; a good value becomes the setting."""
    page, _ = open_panel("/templates/flux_schnell.json")
    message = "budget: 'banana' is neither a size in GB nor a card Headroom knows"
    page.route("**/api/headroom/settings", lambda route: route.fulfill(
        status=400, content_type="application/json", body=json.dumps({"error": message}))
        if "banana" in (route.request.post_data or "") else route.continue_())
    page.fill(".headroom-budget-input", "banana")
    page.dispatch_event(".headroom-budget-input", "change")
    page.wait_for_function("() => document.querySelector('.headroom-budget-error').textContent.length > 0")
    assert page.text_content(".headroom-budget-error") == message
    assert page.evaluate("() => window.__comfy.settings['Headroom.Budget']") == "auto"
    assert page.input_value(".headroom-budget-input") == "auto"
    page.fill(".headroom-budget-input", "12")
    page.dispatch_event(".headroom-budget-input", "change")
    page.wait_for_function("() => window.__comfy.settings['Headroom.Budget'] === '12'")
    assert page.text_content(".headroom-budget-error") == ""


def test_an_auto_fix_changes_the_graph_on_screen_with_undo(open_panel):
    """Issue 23 #3: auto-fix changed only the queued prompt, so the graph on screen no longer matched what
    ran. Now the same preset is applied on screen and the panel offers its Undo."""
    page, errors = open_panel("/templates/text_to_video_wan.json")
    unet = page.evaluate("() => window.__comfy.graph.nodes.find((n) => n.type === 'UNETLoader').id")
    page.evaluate("""(id) => window.__comfy.api.emit("headroom.preflight", {
      over_budget: true, peak_bytes: 27 * 1024 ** 3, peak_stage: "decode", budget_bytes: 21 * 1024 ** 3,
      preset: "fp8-weights", fix: "preset fp8-weights",
      applied: [{ node_id: String(id), widget: "weight_dtype", from: "default", to: "fp8_e4m3fn" }] })""", unet)
    page.wait_for_function("() => document.querySelector('.headroom-undo')?.textContent === 'Undo fp8-weights'")
    assert page.evaluate("(id) => window.__comfy.graph.widget(id, 'weight_dtype')", unet) == "fp8_e4m3fn"
    assert "Undo is in the Headroom panel" in page.evaluate("() => window.__comfy.toasts.at(-1).detail")
    page.click(".headroom-undo")
    page.wait_for_function("() => !document.querySelector('.headroom-undo')")
    assert page.evaluate("(id) => window.__comfy.graph.widget(id, 'weight_dtype')", unet) == "default"
    assert errors == []
