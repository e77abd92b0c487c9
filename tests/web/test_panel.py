"""The web panel's logic in headless Chromium, on a page that loads web/*.js with a graph built from the
real templates in ../shared/real-workflows (and the pack's own example workflows)."""
import json
import re

import pytest

from .harness import screenshot
from .harness.mock_routes import SNAPSHOT, WIDGETS
from .harness.server import HERE, REPO, SHARED, TEMPLATES

# How long a non-OOM error gets to (wrongly) raise a toast before the test says none came.
ABSENCE_MS = 200


def read_json(path):
    return json.loads(path.read_text(encoding="utf-8"))


def widget(page, node_id, name):
    return page.evaluate("([id, name]) => window.__comfy.graph.widget(id, name)", [node_id, name])


def template_node(file, node_type):
    wf = read_json(TEMPLATES / file)
    return next(n for n in wf["nodes"] if n["type"] == node_type and n.get("mode") != 4)


def test_widget_table_agrees_with_the_recorded_real_frontend():
    recorded = read_json(HERE.parent / "fixtures" / "recorded-graphs.json")
    checked = 0
    for nodes in recorded["graphs"].values():
        for node in nodes:
            if node["type"] not in WIDGETS:
                continue
            names = [w["name"] for w in node["widgets"]]
            assert names == WIDGETS[node["type"]][:len(node["widgets"])], node["type"]
            checked += 1
    assert checked > 30, f"only {checked} nodes checked"


def test_bar_and_stage_table_render_from_the_routes(open_panel, server):
    earlier = len(server.routed("/headroom/panel"))
    page, errors = open_panel("/templates/text_to_video_wan.json")
    assert page.text_content(".headroom-device") == SNAPSHOT["device"]
    free = page.eval_on_selector(".headroom-seg.free", "el => parseFloat(el.style.width)")
    assert abs(free - SNAPSHOT["free_bytes"] / SNAPSHOT["total_bytes"] * 100) < 0.01
    other = page.eval_on_selector(".headroom-seg.other", "el => el.title")
    assert re.search(r"other processes: 1\.1 GiB", other)
    stages = page.eval_on_selector_all(".headroom-stages tr", "rows => rows.map((r) => r.dataset.stage)")
    assert stages == ["text_encode", "sample", "decode"]
    assert re.search(r"does not fit: peak 27\.3 GiB in decode \(21\.7 GiB\)", page.text_content(".headroom-verdict"))
    # A websocket reading replaces the bar.
    page.evaluate("(s) => window.__comfy.api.emit('headroom.vram', { ...s, device: 'pushed reading' })", SNAPSHOT)
    assert page.text_content(".headroom-device") == "pushed reading"
    # The panel's opening is posted without the page awaiting it, so nothing in the page to wait on.
    panel_posts = server.wait_until(lambda: server.routed("/headroom/panel")[earlier:])
    assert panel_posts, "opening the panel was not posted"
    assert panel_posts[0]["body"] == {"open": True, "client_id": "test-client"}
    # Loading another workflow re-estimates it.
    before = len(server.routed("/headroom/plan"))
    page.evaluate("() => window.__comfy.extensions[0].afterConfigureGraph()")
    assert server.wait_until(lambda: len(server.routed("/headroom/plan")) > before), "loading a workflow did not re-estimate it"
    assert errors == []


@pytest.mark.parametrize("flavour", ["modern", "v1.4"])
def test_presets_rewrite_the_right_widgets_and_undo_restores_them(open_panel, server, flavour):
    page, errors = open_panel("/templates/text_to_video_wan.json", flavour)
    unet = template_node("text_to_video_wan.json", "UNETLoader")
    latent = template_node("text_to_video_wan.json", "EmptyHunyuanLatentVideo")
    assert widget(page, unet["id"], "weight_dtype") == "default"
    assert widget(page, latent["id"], "length") == 33
    label = page.text_content('.headroom-preset[data-preset="fp8-weights"] .headroom-preset-label')
    assert label == "fp8 weights: 27.3 GiB → 21.0 GiB"

    page.click('.headroom-preset[data-preset="fp8-weights"] button')
    page.wait_for_selector(".headroom-undo")
    assert widget(page, unet["id"], "weight_dtype") == "fp8_e4m3fn"
    assert widget(page, latent["id"], "length") == 33
    # The server saw the whole recorded graph, not a summary.
    sent = server.routed("/headroom/apply-preset")[-1]
    assert len(sent["body"]["workflow"]["nodes"]) == len(read_json(TEMPLATES / "text_to_video_wan.json")["nodes"])

    # Choosing another preset first returns to the user's graph.
    page.click('.headroom-preset[data-preset="half-frames"] button')
    page.wait_for_function("() => document.querySelector('.headroom-undo')?.textContent === 'Undo half-frames'")
    assert widget(page, unet["id"], "weight_dtype") == "default"
    assert widget(page, latent["id"], "length") == 17

    page.click(".headroom-undo")
    page.wait_for_function("() => !document.querySelector('.headroom-undo')")
    assert widget(page, latent["id"], "length") == 33
    assert widget(page, unet["id"], "weight_dtype") == "default"
    assert errors == []


def test_oom_toast_appears_for_a_recorded_error_and_its_button_applies_the_fix(open_panel, server):
    page, errors = open_panel("/workflows/wan2.2_ti2v_5b.json")
    oom = read_json(SHARED / "facts" / "oom-examples.json")[0]
    exception_type, *rest = oom["text"].split(": ")
    # A non-OOM failure is left alone.
    page.evaluate("() => window.__comfy.api.emit('execution_error', "
                  "{ exception_type: 'ValueError', exception_message: 'bad input' })")
    page.wait_for_timeout(ABSENCE_MS)
    assert page.query_selector(".headroom-toast") is None
    explains_before = len(server.routed("/headroom/explain"))
    suggests_before = len(server.routed("/headroom/suggest-preset"))
    applies_before = len(server.routed("/headroom/apply-preset"))

    page.evaluate("([t, m]) => window.__comfy.api.emit('execution_error', { exception_type: t, exception_message: m })",
                  [exception_type, ": ".join(rest)])
    page.wait_for_selector(".headroom-toast")
    explains = server.routed("/headroom/explain")
    assert len(explains) == explains_before + 1
    assert explains[-1]["body"]["text"] == oom["text"]
    assert re.search(r"100\.0 MiB more was requested", page.text_content(".headroom-diagnosis"))
    # No preset named by the diagnosis: the one the core suggests for this graph (fp8 weights, 21.0 GiB),
    # asked once; nothing is applied before the button is pressed.
    assert page.text_content(".headroom-apply-fix") == "Apply fp8-weights"
    assert "does not fit (27.3 GiB) → fits (21.0 GiB)" in page.text_content(".headroom-fix-detail")
    assert len(server.routed("/headroom/suggest-preset")) == suggests_before + 1
    assert len(server.routed("/headroom/apply-preset")) == applies_before
    unet = next(n for n in read_json(REPO / "workflows" / "wan2.2_ti2v_5b.json")["nodes"] if n["type"] == "UNETLoader")
    page.click(".headroom-apply-fix")
    # The toast then says what changed and offers Undo (issue 13, item 14).
    page.wait_for_selector(".headroom-undo-fix")
    assert widget(page, unet["id"], "weight_dtype") == "fp8_e4m3fn"
    assert "weight_dtype" in page.text_content(".headroom-diagnosis")
    page.click(".headroom-undo-fix")
    page.wait_for_function("() => !document.querySelector('.headroom-toast')")
    assert widget(page, unet["id"], "weight_dtype") == "default"
    assert errors == []


def test_queue_time_warning_becomes_a_toast_settings_are_declared_and_mirrored(open_panel, server):
    earlier = len(server.routed("/headroom/settings"))
    page, _ = open_panel("/templates/flux_schnell.json")
    page.evaluate("""() => window.__comfy.api.emit("headroom.preflight", {
      over_budget: true, peak_bytes: 14 * 1024 ** 3, peak_stage: "sample", budget_bytes: 11 * 1024 ** 3,
      fix: "weight_dtype fp8_e4m3fn" })""")
    toasts = page.evaluate("() => window.__comfy.toasts")
    assert len(toasts) == 1
    assert toasts[0]["severity"] == "warn"
    assert re.search(r"peak 14\.0 GiB in sample over 11\.0 GiB\. First change: weight_dtype fp8_e4m3fn", toasts[0]["detail"])
    # The plan's first change in the core's words (issue 23) is what the toast says when the server sends it.
    page.evaluate("""() => window.__comfy.api.emit("headroom.preflight", {
      over_budget: true, peak_bytes: 14 * 1024 ** 3, peak_stage: "sample", budget_bytes: 11 * 1024 ** 3,
      fix: "weight_dtype fp8_e4m3fn (peak 9.00 GiB)", first_change: "load flux1-dev as fp8", verdict: "does not fit" })""")
    last = page.evaluate("() => window.__comfy.toasts.at(-1)")
    assert last["detail"].endswith("First change: load flux1-dev as fp8")
    # The core's verdict words, as the panel and the Preflight report say them (issue 23, one set of words).
    assert last["summary"] == "This run: does not fit" and last["detail"].startswith("does not fit: peak 14.0 GiB")
    page.evaluate("() => window.__comfy.toasts.pop()")
    page.evaluate("() => window.__comfy.api.emit('headroom.preflight', { action: 'warn', verdict: 'fits', over_budget: false })")
    assert len(page.evaluate("() => window.__comfy.toasts")) == 1  # a fit says nothing
    # A preflight that could not run is told once, not on every queue.
    for _ in range(2):
        page.evaluate("() => window.__comfy.api.emit('headroom.preflight', { error: 'plan: unsupported node X' })")
    assert len(page.evaluate("() => window.__comfy.toasts")) == 2
    ids = page.evaluate("() => window.__comfy.extensions[0].settings.map((s) => s.id)")
    assert ids == ["Headroom.Budget", "Headroom.QueueAction", "Headroom.RefreshSeconds", "Headroom.Calibration"]
    page.evaluate("() => window.__comfy.extensions[0].settings[1].onChange('block')")
    # This page's setup mirrored every setting, then the change sent only what changed.
    posted = server.wait_until(lambda: len(server.routed("/headroom/settings")[earlier:]) >= 2)
    assert posted, "settings were not posted at setup and on change"
    posted = server.routed("/headroom/settings")[earlier:]
    assert posted[0]["body"] == {"budget": "auto", "queue_action": "warn", "refresh_s": 1, "calibration": False}
    assert posted[-1]["body"] == {"queue_action": "block"}


def test_changes_addressed_into_a_subgraph_reach_the_inner_node(open_panel):
    page, _ = open_panel("/templates/flux_schnell.json")
    result = page.evaluate("""async () => {
      const { applyChanges, undoChanges } = await import("/extensions/headroom/headroom_graph.js");
      const inner = { id: 122, widgets: [{ name: "weight_dtype", value: "default" }] };
      const host = { id: 130, widgets: [], subgraph: { getNodeById: (id) => (id === 122 ? inner : null) } };
      const app = { graph: { getNodeById: (id) => (id === 130 ? host : null) } };
      const record = applyChanges(app, [{ node_id: "130:122", widget: "weight_dtype", to: "fp8_e4m3fn" },
        { node_id: "130:999", widget: "weight_dtype", to: "x" }]);
      const applied = inner.widgets[0].value;
      undoChanges(app, record);
      return { applied, restored: inner.widgets[0].value, recorded: record.length };
    }""")
    assert result == {"applied": "fp8_e4m3fn", "restored": "default", "recorded": 1}


def test_node_report_shows_in_a_dom_widget_after_execution(open_panel):
    page, _ = open_panel("/templates/flux_schnell.json")
    text = page.evaluate("""async () => {
      const ext = window.__comfy.extensions[0];
      function NodeType() {}
      NodeType.prototype.addDOMWidget = function (name, type, el) { this.el = el; document.body.appendChild(el); return { element: el }; };
      await ext.beforeRegisterNodeDef(NodeType, { name: "HeadroomPreflight" });
      const node = new NodeType();
      node.onExecuted({ text: ["stage  peak\\nsample 20.00 GiB\\nVerdict: FITS"] });
      return node.el.textContent;
    }""")
    assert re.search(r"Verdict: FITS", text)


# Always written to tests/web/artifacts/ (ignored by git); HEADROOM_UPDATE_SCREENSHOT=1 also refreshes
# docs/panel.png, the README's picture, so a plain test run leaves the tree clean.
def test_screenshot_of_the_panel_for_the_readme(open_panel):
    page, _ = open_panel("/workflows/wan2.2_ti2v_5b.json")
    assert screenshot.save(page, "panel.png").stat().st_size > 5000


# ---- issue 13: re-estimating, preset rows, the OOM toast, no card ----

def verdict_text(page):
    return page.text_content(".headroom-verdict")


def test_undo_and_widget_edits_re_estimate(open_panel, server):
    """Item 12: after Undo the estimate kept the preset's numbers, and a widget change did not re-estimate."""
    page, errors = open_panel("/templates/text_to_video_wan.json")
    unet = template_node("text_to_video_wan.json", "UNETLoader")
    assert "does not fit" in verdict_text(page)
    page.click('.headroom-preset[data-preset="fp8-weights"] button')
    page.wait_for_selector(".headroom-undo")
    page.wait_for_function("() => document.querySelector('.headroom-verdict').textContent.includes('fits')"
                           " && !document.querySelector('.headroom-verdict').textContent.includes('not')")
    page.click(".headroom-undo")
    page.wait_for_function("() => document.querySelector('.headroom-verdict').textContent.includes('does not fit')")
    assert widget(page, unet["id"], "weight_dtype") == "default"
    # The user changes a widget on the canvas: the panel estimates the graph again, by itself.
    before = len(server.routed("/headroom/plan"))
    page.evaluate("""(id) => {
      const w = window.__comfy.graph.getNodeById(id).widgets.find((w) => w.name === "weight_dtype");
      w.value = "fp8_e4m3fn";
      document.body.dispatchEvent(new Event("change", { bubbles: true }));
    }""", unet["id"])
    page.wait_for_function("() => !document.querySelector('.headroom-verdict').textContent.includes('not')")
    sent = server.routed("/headroom/plan")[before:]
    assert sent and sent[-1]["body"]["workflow"]["nodes"]
    # Input that changes nothing in the graph does not re-estimate.
    settled = len(server.routed("/headroom/plan"))
    page.evaluate("() => document.body.dispatchEvent(new Event('pointerup', { bubbles: true }))")
    page.wait_for_timeout(900)
    assert len(server.routed("/headroom/plan")) == settled
    assert errors == []


def test_preset_rows_say_what_they_change_and_what_it_does(open_panel):
    """Item 13: 'fit 8 GB: 7.4 → 7.4 GiB' hid a switch to fp8 and 121 → 101 frames."""
    page, errors = open_panel("/templates/text_to_video_wan.json")
    row = '.headroom-preset[data-preset="half-frames"]'
    assert page.text_content(f"{row} .headroom-preset-changes") == "length 33 → 17"
    assert page.text_content(f"{row} .headroom-preset-effect") == "does not fit → fits"
    assert "better" in page.get_attribute(f"{row} .headroom-preset-effect", "class")
    fp8 = '.headroom-preset[data-preset="fp8-weights"]'
    assert page.text_content(f"{fp8} .headroom-preset-changes") == "weight_dtype default → fp8_e4m3fn"
    # A preset this workflow has nothing for says so, and cannot be applied.
    decode = '.headroom-preset[data-preset="headroom-decode"]'
    assert page.text_content(f"{decode} .headroom-preset-changes") == "changes nothing in this workflow"
    assert page.is_disabled(f"{decode} button")
    # Speed: the plan's slowdown before and after, from the route (same peak, different speed).
    summary = page.evaluate("""async () => {
      const { presetSummary } = await import("/extensions/headroom/headroom_panel.js");
      return presetSummary({ changes: [{ node_id: 1, widget: "weight_dtype", from: "default", to: "fp8_e4m3fn" },
                                       { node_id: 2, widget: "length", from: 121, to: 101 }],
        before: { peak_bytes: 7.4 * 2 ** 30, verdict: "tight", verdict_id: "tight", slowdown: 1.73 },
        after: { peak_bytes: 7.4 * 2 ** 30, verdict: "tight", verdict_id: "tight", slowdown: 1.0 } });
    }""")
    assert summary == {"changes": ["weight_dtype default → fp8_e4m3fn", "length 121 → 101"],
                       "effect": ["still tight", "weights: 1.7× slower → full speed"], "better": 1, "costs": []}
    assert errors == []


def test_preset_rows_are_judged_on_the_users_card_and_say_their_costs(open_panel):
    """Issue 23 #1/#2: a swapped decode node reads as one change with its tile size (not "tile_size ?"),
    a row that changes nothing claims no speed, the slowdown is never "full speed" alone, and a "fit N GB"
    row says how it does on its own card beside the user's."""
    page, _ = open_panel("/templates/flux_schnell.json")
    out = page.evaluate("""async () => {
      const { presetSummary } = await import("/extensions/headroom/headroom_panel.js");
      const swap = { node_id: 8, widget: "type", from: "VAEDecode", to: "VAEDecodeTiled", replace: true,
                     widgets: { tile_size: 768, overlap: 64 } };
      const judged = presetSummary({ changes: [swap], judged_on: "request", judged_bytes: 12e9,
        before: { verdict: "does not fit", verdict_id: "does_not_fit", slowdown: 1.2 }, after: { verdict: "streams", verdict_id: "streams", slowdown: 1.2 },
        target: { bytes: 8e9, verdict: "does not fit", verdict_id: "does_not_fit" },
        costs: [{ kind: "text_encoder_cpu", effect: "prompt encoding takes seconds" }] });
      const nothing = presetSummary({ changes: [], before: { verdict: "tight", verdict_id: "tight", slowdown: 1.2 },
                                      after: { verdict: "tight", verdict_id: "tight", slowdown: 1.2 } });
      return { judged, nothing };
    }""")
    assert out["judged"]["changes"] == ["VAEDecode → VAEDecodeTiled (tile_size 768, overlap 64)"]
    assert out["judged"]["effect"] == ["does not fit → streams", "on a 7.5 GiB card: does not fit"]
    assert out["judged"]["costs"] == ["prompt encoding takes seconds"]
    assert out["nothing"]["effect"] == []


def test_the_headline_names_the_limit_it_stops_at(open_panel):
    """Issue 23 #5: host RAM is the reason, with its bar; a VRAM stop names its stage; dynamic VRAM peaks
    stand beside the least the run needs."""
    page, _ = open_panel("/templates/flux_schnell.json")
    out = page.evaluate("""async (rows) => {
      const { renderStages } = await import("/extensions/headroom/headroom_panel.js");
      const G = 2 ** 30;
      const stages = [{ name: "text_encode", peak_bytes: 5 * G, required_bytes: 1 * G },
                      { name: "sample", peak_bytes: 11.7 * G, required_bytes: 4 * G }];
      const base = { peak_bytes: 11.7 * G, peak_stage: "sample", stages, budget_bytes: 12 * G, required_bytes: 4 * G };
      const ram = renderStages({ ...base, verdict: "does not fit", verdict_id: "does_not_fit", limit: "host_ram", ram_bytes: 16 * G,
        host_ram_bytes: 30 * G, verdict_reason: "runs out of host RAM: the weights need 30.0 GiB of 16.0 GiB" }, null, rows);
      const vram = renderStages({ ...base, verdict: "does not fit", verdict_id: "does_not_fit", limit: "vram", limit_stage: "text_encode",
        verdict_reason: "runs out of VRAM in text_encode" }, null, rows);
      const fits = renderStages({ ...base, verdict: "fits", verdict_id: "fits" }, null, rows);
      return [ram, vram, fits].map((e) => ({ text: e.querySelector(".headroom-verdict").textContent,
        ramBar: Boolean(e.querySelector(".headroom-ram-bar")) }));
    }""", VERDICT_ROWS)
    assert out[0]["text"] == "does not fit: host RAM — runs out of host RAM: the weights need 30.0 GiB of 16.0 GiB"
    assert out[0]["ramBar"] and not out[1]["ramBar"]
    assert out[1]["text"] == "does not fit: VRAM in text_encode needs 1.0 GiB of 12.0 GiB"
    assert "sample" not in out[1]["text"]
    assert out[2]["text"] == "fits: peak 11.7 GiB in sample, needs at least 4.0 GiB (12.0 GiB)"


def _panel_without_card(page, presets, estimate):
    """A panel on this page with a client that has no GPU reading; returns the calls it made."""
    return page.evaluate("""async ([presets, estimate]) => {
      const { createPanel } = await import("/extensions/headroom/headroom_panel.js");
      const calls = [];
      const client = {
        vram: async () => ({ snapshot: { device: null, total_bytes: null } }),
        plan: async () => estimate,
        presets: async () => ({ presets }),
        applyPreset: async (wf, name, budget) => {
          calls.push([name, budget]);
          return { before: { peak_bytes: 9 }, after: { peak_bytes: 5 }, changes: [{ node_id: 1, widget: "w", from: 1, to: 2 }] };
        },
      };
      const panel = createPanel({ app: window.__comfy.app, client, getBudget: () => "auto" });
      const host = document.createElement("div");
      host.id = "nocard";
      document.body.appendChild(host);
      host.appendChild(panel.element);
      await panel.refresh();
      panel.destroy();
      return calls;
    }""", [presets, estimate])


def test_no_card_fit_this_card_asks_for_a_budget_and_is_not_requested(open_panel):
    """Item 16: on a machine without a GPU "fit this card" showed the API's message and a 400 each refresh."""
    page, errors = open_panel("/templates/flux_schnell.json")
    estimate = {"peak_bytes": 6 * 2 ** 30, "peak_stage": "sample", "stages": [
        {"name": "text_encode", "peak_bytes": 2 * 2 ** 30}, {"name": "sample", "peak_bytes": 6 * 2 ** 30},
        {"name": "decode", "peak_bytes": 3 * 2 ** 30}]}
    calls = _panel_without_card(page, [{"name": "fit 8 GB"}, {"name": "fit this card", "target": "request"}], estimate)
    assert calls == [["fit 8 GB", "auto"]]
    row = '#nocard .headroom-preset[data-preset="fit this card"]'
    assert "set Headroom's budget" in page.text_content(f"{row} .headroom-preset-note")
    assert page.is_disabled(f"{row} button")
    # Without a budget the stage bars compare the stages: the largest is full, the others in proportion.
    widths = page.eval_on_selector_all("#nocard .headroom-stage-bar", "bars => bars.map((b) => parseFloat(b.style.width))")
    assert widths == pytest.approx([100 / 3, 100, 50], abs=1e-3)
    assert "no budget" in page.text_content("#nocard .headroom-verdict")
    assert errors == []


def test_an_estimate_the_core_could_not_make_says_so(open_panel):
    """Item 11: "Peak n/a in ?" read as a result."""
    page, errors = open_panel("/templates/flux_schnell.json")
    _panel_without_card(page, [], {"peak_bytes": None, "verdict": "unknown", "stages": [], "budget_bytes": 12 * 2 ** 30,
                                   "reason": "no diffusion model loader runs in this workflow"})
    text = page.text_content("#nocard .headroom-estimate")
    assert "Not estimated: no diffusion model loader runs in this workflow" in text
    assert "n/a" not in text and "fits" not in text
    # The queue-time event says so once, as a warning.
    page.evaluate("""() => { for (let i = 0; i < 2; i++) window.__comfy.api.emit("headroom.preflight", {
      action: "warn", verdict: "unknown", verdict_id: "unknown", over_budget: false, estimated: false,
      not_estimated: "no diffusion model loader runs in this workflow" }); }""")
    toasts = page.evaluate("() => window.__comfy.toasts")
    assert len(toasts) == 1 and toasts[0]["summary"] == "Headroom could not estimate this workflow"
    assert errors == []


def test_oom_toast_offers_no_unrelated_preset_and_fits_the_card_of_the_message(open_panel):
    """Item 14: a fragmentation diagnosis got "Apply: fit this card", computed against the settings' budget."""
    page, errors = open_panel("/templates/flux_schnell.json")
    result = page.evaluate("""async (rows) => {
      const { suggestedFix, showOomToast } = await import("/extensions/headroom/headroom_oom.js");
      const calls = [];
      let chosen = { preset: "fit this card", why: "own_fit", before: { verdict: "does not fit", peak_bytes: 14 * 2 ** 30 },
                     after: { verdict: "fits", peak_bytes: 9 * 2 ** 30 } };
      const client = {
        suggestPreset: async (wf, budget) => {
          calls.push(["suggest", budget]);
          return { chosen, ranked: chosen ? [chosen] : [], not_ranked: [] };
        },
      };
      const app = window.__comfy.app;
      const fragmented = { diagnosis: { id: "fragmentation", text: "the cache is fragmented" }, total_bytes: 12 * 2 ** 30,
        fixes: [{ id: "expandable_segments", text: "Start ComfyUI with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" }] };
      const forFragmentation = await suggestedFix({ app, client, result: fragmented, getBudget: () => "24" });
      const callsAfterFragmentation = calls.length;
      const tooBig = { diagnosis: { id: "out_of_memory", text: "needs more" }, total_bytes: 12 * 2 ** 30, fixes: [] };
      const forOom = await suggestedFix({ app, client, result: tooBig, getBudget: () => "24" });
      chosen = null;  // the core suggests nothing (no preset changes anything, or none has a verdict)
      const forNothing = await suggestedFix({ app, client, result: tooBig, getBudget: () => "24" });
      // A long unbroken name must wrap inside the toast.
      const long = { diagnosis: { id: "fragmentation", text: "x" },
        fixes: [{ id: "a", text: "PYTORCH_CUDA_ALLOC_CONF=" + "expandable_segments:True,".repeat(12) + "garbage_collection_threshold:0.6" }] };
      const toast = showOomToast({ app, client, result: long, fix: null });
      const overflow = toast.scrollWidth - toast.clientWidth;
      const buttons = toast.querySelectorAll(".headroom-apply-fix").length;
      toast.remove();
      return { forFragmentation, callsAfterFragmentation, forOom, forNothing, calls, overflow, buttons };
    }""", VERDICT_ROWS)
    assert result["forFragmentation"] is None and result["callsAfterFragmentation"] == 0
    # The core's choice, with its before/after in the core's words; one request each, on the message's card.
    assert result["forOom"] == {"preset": "fit this card", "title": "fit this card",
                                "text": "does not fit (14.0 GiB) → fits (9.0 GiB)"}
    assert result["forNothing"] is None
    assert result["calls"] == [["suggest", {"vram_bytes": 12 * 2 ** 30}]] * 2
    assert result["overflow"] <= 0 and result["buttons"] == 0
    assert errors == []


# ---- issue 10: which loader a verdict is for, the advice, and streams with its slowdown ----

# api::catalog()'s verdict rows (flags only; the spellings are the core's).
VERDICT_ROWS = [{"id": "fits", "text": "fits", "runs": True, "fits": True, "sized": True},
                {"id": "streams", "text": "streams", "runs": True, "fits": False, "sized": True},
                {"id": "does_not_fit", "text": "does not fit", "runs": False, "fits": False, "sized": True}]


def test_the_estimate_says_its_loader_the_advice_and_the_streaming_slowdown(open_panel):
    page, errors = open_panel("/templates/flux_schnell.json")
    texts = page.evaluate("""async (rows) => {
      const { renderStages } = await import("/extensions/headroom/headroom_panel.js");
      const base = { peak_bytes: 14 * 2 ** 30, peak_stage: "sample", budget_bytes: 12 * 2 ** 30,
                     stages: [{ name: "sample", peak_bytes: 14 * 2 ** 30 }] };
      const streams = renderStages({ ...base, verdict: "streams", verdict_id: "streams", slowdown: 2.44, runtime: "dynamic",
        verdict_reason: "sample streams weights, about 2.4x slower", advice: "fp8 weights run at full speed" }, null, rows);
      const legacy = renderStages({ ...base, verdict: "does not fit", verdict_id: "does_not_fit", runtime: "legacy",
        verdict_reason: "runs out of VRAM in sample" }, null, rows);
      const plain = renderStages({ ...base, verdict: "fits", verdict_id: "fits", peak_bytes: 2 ** 30 }, null, rows);
      return [streams, legacy, plain].map((e) => ({
        verdict: e.querySelector(".headroom-verdict").textContent,
        cls: e.querySelector(".headroom-verdict").className,
        loader: e.querySelector(".headroom-loader")?.textContent ?? null,
        advice: e.querySelector(".headroom-advice")?.textContent ?? null,
        reason: e.querySelector(".headroom-verdict-reason")?.textContent ?? null }));
    }""", VERDICT_ROWS)
    streams, legacy, plain = texts
    assert streams["verdict"] == "streams, 2.4× slower: peak 14.0 GiB in sample (12.0 GiB)"
    assert "tight" in streams["cls"] and streams["loader"] == "for dynamic VRAM"
    assert streams["advice"] == "Advice: fp8 weights run at full speed"
    assert streams["reason"] == "sample streams weights, about 2.4x slower"
    assert "over" in legacy["cls"] and legacy["loader"] == "for legacy loader"
    assert legacy["reason"] == "runs out of VRAM in sample" and legacy["advice"] is None
    # An answer that names no loader (a core before the runtime fields) shows no loader line.
    assert plain["loader"] is None and plain["reason"] is None
    assert errors == []


def test_queue_time_toasts_name_the_loader_and_a_streaming_run_is_reported_whatever_the_action(open_panel):
    page, _ = open_panel("/templates/flux_schnell.json")
    page.evaluate("""(rows) => window.__comfy.api.emit("headroom.preflight", {
      action: "block", verdict: "streams", verdict_id: "streams", verdict_flags: rows[1], over_budget: false, runtime: "dynamic",
      slowdown: 2.44, verdict_reason: "sample streams weights, about 2.4x slower",
      peak_bytes: 14 * 2 ** 30, peak_stage: "sample", budget_bytes: 12 * 2 ** 30 })""", VERDICT_ROWS)
    page.evaluate("""(rows) => window.__comfy.api.emit("headroom.preflight", {
      action: "block", blocked: true, verdict: "does not fit", verdict_id: "does_not_fit", verdict_flags: rows[2], over_budget: true,
      runtime: "legacy", verdict_reason: "runs out of host RAM: the weights need 40.0 GiB of 32.0 GiB",
      peak_bytes: 10 * 2 ** 30, peak_stage: "sample", budget_bytes: 12 * 2 ** 30, fix: "fp8 weights" })""", VERDICT_ROWS)
    # Without the core's reason the plan's slowdown says how much slower.
    page.evaluate("""(rows) => window.__comfy.api.emit("headroom.preflight", {
      action: "auto-fix", verdict: "streams", verdict_id: "streams", verdict_flags: rows[1], over_budget: false, slowdown: 1.8,
      peak_bytes: 14 * 2 ** 30, peak_stage: "sample", budget_bytes: 12 * 2 ** 30 })""", VERDICT_ROWS)
    toasts = page.evaluate("() => window.__comfy.toasts")
    assert len(toasts) == 3
    assert toasts[2]["summary"] == "Runs: streams" and toasts[2]["detail"].endswith("(1.8× slower).")
    assert toasts[0]["severity"] == "info" and toasts[0]["summary"] == "Runs: streams (dynamic VRAM)"
    assert toasts[0]["detail"] == "peak 14.0 GiB in sample of 12.0 GiB: sample streams weights, about 2.4x slower."
    assert toasts[1]["severity"] == "error" and toasts[1]["summary"] == "Headroom blocked the run"
    assert "(runs out of host RAM: the weights need 40.0 GiB of 32.0 GiB) (legacy loader)" in toasts[1]["detail"]


def test_the_panel_says_what_its_figures_rest_on(open_panel):
    """Issue 23 #4: the server's notes, unknown nodes, loaders and smallest card reach the panel."""
    page, _ = open_panel("/templates/flux_schnell.json")
    out = page.evaluate("""async () => {
      const { renderTrust } = await import("/extensions/headroom/headroom_panel.js");
      const e = renderTrust({ notes: ["'a.safetensors' taken for flux1-dev from its file name"],
        unknown_nodes: [{ id: "12", type: "SomeCustomNode" }],
        smallest_gpu: { name: "RTX 4090 24GB" },
        workflow: { loaders: [{ type: "UNETLoader", file: "a.safetensors", model: "flux1-dev", precision: "bf16" },
                              { type: "CLIPLoader", file: "b.safetensors", model: null }] } });
      return { text: e.textContent, open: e.open, unknown: e.querySelectorAll(".unknown").length };
    }""")
    assert "UNETLoader: a.safetensors → flux1-dev, bf16" in out["text"]
    assert "CLIPLoader: b.safetensors → unknown model" in out["text"]
    assert "Not counted: SomeCustomNode #12" in out["text"]
    assert "taken for flux1-dev from its file name" in out["text"]
    assert "Smallest card that runs it unchanged: RTX 4090 24GB" in out["text"]
    assert out["open"] and out["unknown"] == 1


def test_the_panel_says_where_each_size_comes_from_and_flags_broken_files(open_panel):
    """Issue 23 #4: a loader's size source (header, file name, unknown) and a broken file reach the panel."""
    page, _ = open_panel("/templates/flux_schnell.json")
    out = page.evaluate("""async () => {
      const { renderTrust } = await import("/extensions/headroom/headroom_panel.js");
      const broken = "UNETLoader #1 loads 'a.safetensors' (/m/a.safetensors), which is empty (0 bytes)";
      const e = renderTrust({ notes: [],
        workflow: { loaders: [
          { type: "UNETLoader", file: "a.safetensors", model: "flux1-dev", size_source: "file_name",
            file_problem: "empty", file_problem_text: broken },
          { type: "CLIPLoader", file: "t5.safetensors", model: "t5-xxl", size_source: "header", file_problem: null },
          { type: "VAELoader", file: "v.safetensors", model: null, size_source: "unknown", file_problem: null }] } });
      return { text: e.textContent, open: e.open,
               broken: [...e.querySelectorAll(".headroom-trust-broken")].map((n) => n.textContent),
               unknown: e.querySelectorAll(".unknown").length };
    }""")
    assert "UNETLoader: a.safetensors → flux1-dev (size from its file name)" in out["text"]
    assert "CLIPLoader: t5.safetensors → t5-xxl (size from the file's header)" in out["text"]
    assert "VAELoader: v.safetensors → unknown model (size unknown)" in out["text"]
    assert out["broken"] == ["UNETLoader #1 loads 'a.safetensors' (/m/a.safetensors), which is empty (0 bytes)"]
    assert out["open"] and out["unknown"] == 1
