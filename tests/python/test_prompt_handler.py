"""Queue-time preflight: passes, warns, blocks (with a prompt that fails validation with the plan) and
auto-fixes only when chosen, as set."""
import copy
import threading

import pytest

import fakes
from conftest import load_pack, natives_installed

load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.server import prompt_handler, settings  # noqa: E402
from headroom_pack.nodes.server.queue_gate import HeadroomQueueGate, gate_node_id, gate_of  # noqa: E402

PROMPT = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "9": {"class_type": "HeadroomPreflight", "inputs": {"samples": ["5", 0], "budget": "auto", "action": "warn"}},
}


@pytest.fixture
def env(monkeypatch):
    sent = []
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append((event, data, sid)))
    with natives_installed(fakes.FakeCore()) as core:
        yield core, sent


def request(prompt=PROMPT):
    return {"prompt": copy.deepcopy(prompt), "client_id": "c1", "extra_data": {"extra_pnginfo": {"workflow": {}}}}


def unstamped(prompt):
    """The prompt without the Preflight nodes' cache stamp (prompt_handler._stamp_in_background)."""
    return {k: {kk: vv for kk, vv in n.items() if kk != "is_changed"} for k, n in prompt.items()}


def test_pass_does_nothing(env):
    core, sent = env
    settings.update({"queue_action": "pass", "budget": "12"})
    no_preflight = {k: v for k, v in PROMPT.items() if v["class_type"] != "HeadroomPreflight"}
    data = request(no_preflight)
    assert prompt_handler.on_prompt(data) is data and data["prompt"] == no_preflight
    assert prompt_handler.wait_idle()
    assert core.calls == [] and sent == []
    # With a Preflight node, pass only stamps it (its report depends on the whole prompt) and sends nothing.
    data = request()
    assert prompt_handler.on_prompt(data) is data and unstamped(data["prompt"]) == PROMPT
    assert prompt_handler.wait_idle()
    assert sent == [] and "is_changed" in data["prompt"]["9"]


def test_warn_sends_peak_stage_fix_and_keeps_prompt(env):
    core, sent = env
    settings.update({"queue_action": "warn", "budget": "12"})
    data = request()
    out = prompt_handler.on_prompt(data)
    assert out is data and unstamped(out["prompt"]) == PROMPT
    assert prompt_handler.wait_idle()
    event, payload, sid = sent[-1]
    assert event == "headroom.preflight" and sid == "c1"
    assert payload["over_budget"] and payload["peak_stage"] == "sample" and payload["peak_bytes"] == 20 * 2**30
    assert "fp8" in payload["fix"]


def test_warn_when_it_fits_reports_fit(env):
    core, sent = env
    settings.update({"queue_action": "warn", "budget": "24"})
    out = prompt_handler.on_prompt(request())
    assert prompt_handler.wait_idle()
    assert unstamped(out["prompt"]) == PROMPT and sent[-1][1]["over_budget"] is False


def test_block_replaces_prompt_with_failing_gate(env):
    core, sent = env
    settings.update({"queue_action": "block", "budget": "12"})
    out = prompt_handler.on_prompt(request())
    gate_id, gate = gate_of(out["prompt"])
    assert gate is not None and gate["class_type"] == "HeadroomQueueGate"
    # ComfyUI keys node_errors by this id and the issues panel locates it: the node the fix edits.
    assert gate_id == "1" and gate_id in PROMPT
    verdict = HeadroomQueueGate.VALIDATE_INPUTS(**gate["inputs"])
    assert verdict is not True and "Verdict: does not fit" in verdict and "fp8" in verdict
    assert sent[-1][1]["blocked"] is True


def test_block_lets_fitting_prompt_through(env):
    settings.update({"queue_action": "block", "budget": "24"})
    data = request()
    assert unstamped(prompt_handler.on_prompt(data)["prompt"]) == PROMPT


def test_auto_fix_applies_cheapest_fix_and_records_it(env):
    core, sent = env
    settings.update({"queue_action": "auto-fix", "budget": "12"})
    data = request()
    out = prompt_handler.on_prompt(data)
    assert out["prompt"]["1"]["inputs"]["weight_dtype"] == "fp8_e4m3fn"
    assert data["prompt"]["1"]["inputs"]["weight_dtype"] == "default"  # the caller's dict is untouched
    applied = out["extra_data"]["extra_pnginfo"]["headroom"]["applied"]
    assert applied == [{"node_id": "1", "widget": "weight_dtype", "from": "default", "to": "fp8_e4m3fn"}]


def test_preflight_node_set_to_apply_fix_chooses_auto_fix(env):
    settings.update({"queue_action": "warn", "budget": "12"})
    prompt = copy.deepcopy(PROMPT)
    prompt["9"]["inputs"]["action"] = "apply fix"
    out = prompt_handler.on_prompt(request(prompt))
    assert out["prompt"]["1"]["inputs"]["weight_dtype"] == "fp8_e4m3fn"


def test_auto_fix_never_cuts_a_link(env):
    core, _ = env
    core.changes = [{"edits": [{"node_id": "9", "widget": "samples", "to": "x"}]}]
    settings.update({"queue_action": "auto-fix", "budget": "12"})
    out = prompt_handler.on_prompt(request())
    assert out["prompt"]["9"]["inputs"]["samples"] == ["5", 0]


def test_native_missing_never_blocks(env):
    _, sent = env
    native_loader._cache[native_loader.CORE_MODULE] = (None, "headroom_core is not installed (test)")
    settings.update({"queue_action": "block", "budget": "12"})
    data = request()
    assert prompt_handler.on_prompt(data) is data
    assert "not installed" in sent[-1][1]["error"]


def test_auto_fix_uses_the_fit_this_card_preset_for_planner_changes(env):
    """The planner's changes name kinds (presets.json "changes"), not widgets; Headroom applies those a
    preset can make through the catalog's preset whose target is the request's card."""
    core, sent = env
    core.changes = [{"kind": "decode_tiled", "applies_by_preset": True, "description": "tiled decode", "new_peak_bytes": 11 * 2**30},
                    {"kind": "gguf_q8", "applies_by_preset": False, "description": "GGUF Q8 file"}]
    core.presets = [{"name": "max quality"}, {"name": "fit this card", "target": "request"}]
    settings.update({"queue_action": "auto-fix", "budget": "12"})
    out = prompt_handler.on_prompt(request())
    kind, req = [c for c in core.calls if c[0] == "apply_preset"][-1]
    assert kind == "apply_preset" and req["preset"] == "fit this card" and req["vram_bytes"] == 12 * 2**30
    assert out["extra_data"]["extra_pnginfo"]["headroom"]["fix"] == "preset fit this card"


def test_auto_fix_without_widget_changes_leaves_prompt(env):
    core, sent = env
    core.changes = [{"kind": "gguf_q8", "applies_by_preset": False, "description": "GGUF Q8 file"}]
    settings.update({"queue_action": "auto-fix", "budget": "12"})
    data = request()
    assert unstamped(prompt_handler.on_prompt(data)["prompt"]) == PROMPT
    assert "no fix Headroom can apply" in sent[-1][1]["fix_unavailable"]


def test_real_core_blocks_and_auto_fixes_a_real_workflow(monkeypatch):
    """With the real planner: the Wan 2.2 TI2V 5B example workflow (UI format; the planner reads both)
    does not fit 3.5 GiB under dynamic VRAM, whatever its weights are stored in (its activations and decode are over),
    so auto-fix shortens and shrinks the clip until it runs, through the fit-this-card preset; at 3 GiB
    even that would not run, so nothing of the user's content is cut; block replaces the prompt."""
    import json as _json
    from conftest import REPO, core_built
    workflow = _json.loads((REPO / "workflows" / "wan2.2_ti2v_5b.json").read_text())
    if not core_built():
        pytest.skip("the core library is not built")
    native_loader.reset()
    settings.reset()
    sent = []
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append((event, data, sid)))
    settings.update({"queue_action": "auto-fix", "budget": "3.5"})
    out = prompt_handler.on_prompt({"prompt": workflow, "client_id": "c"})
    applied = out["extra_data"]["extra_pnginfo"]["headroom"]["applied"]
    latent = next(n for n in workflow["nodes"] if n["type"] == "Wan22ImageToVideoLatent")
    cuts = {c["widget"]: c for c in applied if str(c["node_id"]) == str(latent["id"])}
    assert cuts["length"]["to"] < cuts["length"]["from"] == 121
    assert sent[-1][1]["over_budget"] is True
    settings.update({"budget": "3"})
    untouched = prompt_handler.on_prompt({"prompt": workflow, "client_id": "c"})
    kept = untouched.get("extra_data", {}).get("extra_pnginfo", {}).get("headroom", {}).get("applied", [])
    assert not [c for c in kept if c["widget"] in ("length", "width", "height", "batch_size")], kept
    settings.update({"queue_action": "block"})
    blocked = prompt_handler.on_prompt({"prompt": workflow, "client_id": "c"})
    gate_id, gate = gate_of(blocked["prompt"])
    assert gate_id in {str(n["id"]) for n in workflow["nodes"]} and "Verdict: does not fit" in gate["inputs"]["reason"]
    settings.reset()


def test_preflight_stamp_follows_the_whole_prompts_workload(env):
    """Issue 13, item 16: ComfyUI served a Preflight from its cache (same inputs) although the prompt's
    workload had changed elsewhere. The stamp is ComfyUI's is_changed for that node: it moves when the
    workload the core read moves (here: a decode node added downstream), and stays for a new seed, prompt
    text or budget (free VRAM moves between runs)."""
    core, _ = env

    def stamp_of(prompt, action="pass", budget="auto"):
        settings.update({"queue_action": action, "budget": budget})
        data = request(prompt)
        prompt_handler.on_prompt(data)
        assert prompt_handler.wait_idle()  # the worker writes the fingerprint into the stamp
        return data["prompt"]["9"]["is_changed"]

    base = stamp_of(PROMPT)
    with_decode = {**PROMPT, "8": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["1", 0]}}}
    reseeded = copy.deepcopy(PROMPT)
    reseeded["5"]["inputs"]["seed"] = 7  # an input the core does not read into the workload
    assert isinstance(base, list) and len(base) == 1 and not base[0].startswith("pending")
    assert stamp_of(reseeded) == base and stamp_of(with_decode) != base
    # The warn check plans once, with the budget; its stamp is the one pass gives, on any card.
    assert stamp_of(PROMPT, "warn", "12") == stamp_of(PROMPT, "warn", "24") == base
    assert stamp_of(PROMPT, "block", "24") == base  # let through: stamped from the decision's plan
    # ComfyUI consults node["is_changed"] only for classes that define IS_CHANGED.
    from headroom_pack.nodes.graph.preflight import HeadroomPreflight
    assert callable(getattr(HeadroomPreflight, "IS_CHANGED", None))


def core_calls(core, action, budget="12", prompt=PROMPT):
    """The core calls one queued prompt costs under `action`."""
    settings.update({"queue_action": action, "budget": budget})
    core.calls.clear()
    data = request(prompt)
    out = prompt_handler.on_prompt(data)
    assert prompt_handler.wait_idle()
    return [name for name, _ in core.calls], out


@pytest.mark.parametrize("action", ["pass", "warn", "block", "auto-fix"])
@pytest.mark.parametrize("budget", ["12", "24"])
def test_one_plan_per_queued_prompt(env, action, budget):
    """Issue 23 and 25 (point 3): the queue check asked the core twice per prompt (a fingerprint for the
    Preflight's stamp, then the plan). One plan now serves the stamp, the toast, the block message and the
    auto-fix; a widget fix is applied from it without asking again."""
    core, sent = env
    calls, out = core_calls(core, action, budget)
    assert calls == ["plan"], calls
    stamp = out["prompt"]["9"]["is_changed"] if "9" in out["prompt"] else None
    if action != "block" or budget == "24":
        assert stamp and not stamp[0].startswith("pending")
    no_preflight = {k: v for k, v in PROMPT.items() if k != "9"}
    # Without a Preflight node, pass has nothing to stamp (nor, without the recorder, to predict).
    assert core_calls(core, action, budget, no_preflight)[0] == ([] if action == "pass" else ["plan"])


def test_an_auto_fix_by_preset_costs_the_plan_and_the_preset_only(env):
    """A fix the planner leaves to a preset is one apply_preset call, whose answer carries the rewritten
    workflow; the fixed prompt's stamp follows from the plan and the changes, not a second plan."""
    core, sent = env
    core.changes = [{"kind": "decode_tiled", "applies_by_preset": True, "description": "tiled decode"}]
    core.presets = [{"name": "fit this card", "target": "request"}]
    calls, out = core_calls(core, "auto-fix")
    assert calls == ["plan", "apply_preset"], calls
    fixed_stamp = out["prompt"]["9"]["is_changed"]
    assert out["extra_data"]["extra_pnginfo"]["headroom"]["fix"] == "preset fit this card"
    assert fixed_stamp != [prompt_handler.workload_fingerprint(PROMPT)] and not fixed_stamp[0].startswith("pending")
    assert core_calls(core, "auto-fix")[1]["prompt"]["9"]["is_changed"] == fixed_stamp  # the same fix: the same stamp



# ---- issue 27, item 8: the handler never raises, whatever the prompt, the settings or the core answers ----

def headroom_warnings(caplog):
    return [r for r in caplog.records if r.name == "headroom" and r.levelname == "WARNING"]


def assert_one_line_logged(caplog):
    records = headroom_warnings(caplog)
    assert len(records) == 1, [r.getMessage() for r in records]
    assert "\n" not in records[0].getMessage() and records[0].exc_info is None


@pytest.mark.parametrize("extra_data", [["not", "an", "object"], "text", 7,
                                        {"extra_pnginfo": "text"}, {"extra_pnginfo": [1, 2]}])
def test_auto_fix_applies_its_fix_whatever_extra_data_holds(env, extra_data):
    """A client's extra_data or extra_pnginfo that is not an object used to raise out of the handler; the
    fix is now applied and the client's own value kept (there is no object to record the fix in)."""
    settings.update({"queue_action": "auto-fix", "budget": "12"})
    data = {**request(), "extra_data": copy.deepcopy(extra_data)}
    out = prompt_handler.on_prompt(data)
    assert out["prompt"]["1"]["inputs"]["weight_dtype"] == "fp8_e4m3fn"
    assert out["extra_data"] == extra_data and data["extra_data"] == extra_data


class Boom(Exception):
    pass


CORE_ERRORS = [TypeError("bad type"), KeyError("error"), MemoryError(), ZeroDivisionError("x"), Boom("a\nb")]


@pytest.mark.parametrize("error", CORE_ERRORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("action", ["pass", "warn", "block", "auto-fix"])
def test_core_errors_of_any_kind_leave_the_prompt_and_log_one_line(env, caplog, action, error):
    core, sent = env

    def fails(_text):
        raise error
    core.plan = fails
    settings.update({"queue_action": action, "budget": "12"})
    data = request()
    out = prompt_handler.on_prompt(data)
    assert prompt_handler.wait_idle()
    assert out is data and unstamped(data["prompt"]) == PROMPT
    if action == "pass":  # pass only stamps, and an estimate that fails is a stamp like any other
        assert headroom_warnings(caplog) == [] and sent == []
        assert data["prompt"]["9"]["is_changed"] == [prompt_handler.workload_fingerprint(PROMPT)]
    else:
        assert_one_line_logged(caplog)
        assert type(error).__name__ in sent[-1][1]["error"]


@pytest.mark.parametrize("answer", ["[1, 2]", "null", "3", '"text"', "true"])
@pytest.mark.parametrize("action", ["warn", "block", "auto-fix"])
def test_a_core_answer_that_is_not_an_object_leaves_the_prompt(env, caplog, action, answer):
    core, sent = env
    core.plan = lambda _text: answer
    settings.update({"queue_action": action, "budget": "12"})
    data = request()
    out = prompt_handler.on_prompt(data)
    assert prompt_handler.wait_idle()
    assert out is data and unstamped(data["prompt"]) == PROMPT
    assert_one_line_logged(caplog)
    assert "expected a JSON object" in sent[-1][1]["error"]


@pytest.mark.parametrize("answer", ["[]", "null", '{"workflow": [], "changes": 5}', '{"workflow": {}, "changes": "x"}'])
def test_an_apply_preset_answer_that_is_not_a_rewrite_applies_nothing(env, answer):
    core, sent = env
    core.changes = [{"preset": "fp8-weights", "description": "fp8 weights"}]
    core.apply_preset = lambda _text: answer
    settings.update({"queue_action": "auto-fix", "budget": "12"})
    data = request()
    out = prompt_handler.on_prompt(data)
    assert unstamped(out["prompt"]) == PROMPT and "headroom" not in out["extra_data"]["extra_pnginfo"]
    assert "no fix Headroom can apply" in sent[-1][1]["fix_unavailable"]


@pytest.mark.parametrize("changes", [5, "text", {"edits": 1}, [{"edits": [7, None, {"node_id": "1", "widget": ["w"]}]}],
                                     [{"edits": [{"node_id": "1", "widget": "weight_dtype", "to": "x"}]}]])
def test_malformed_planner_changes_never_raise(env, changes):
    core, _ = env
    core.changes = changes
    settings.update({"queue_action": "auto-fix", "budget": "12"})
    prompt = copy.deepcopy(PROMPT)
    prompt["1"]["inputs"] = ["not", "an", "object"]  # a widget edit has nowhere to go
    data = request(prompt)
    out = prompt_handler.on_prompt(data)
    assert out["prompt"]["1"]["inputs"] == ["not", "an", "object"]


HOSTILE_PROMPTS = [
    {"9": {"class_type": "HeadroomPreflight", "inputs": ["apply fix"]}},
    {"9": {"class_type": "HeadroomPreflight", "inputs": "apply fix"}},
    {"9": {"class_type": "HeadroomPreflight", "inputs": {"action": "apply fix", "budget": {"x": 1}}}},
    {"9": {"class_type": "HeadroomPreflight", "inputs": {"action": "apply fix", "budget": "9" * 400}}},
    {"1": "node", "2": [1, 2], "3": None, "4": {"class_type": ["HeadroomPreflight"]}},
    {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": float("nan")}}},
]


@pytest.mark.parametrize("prompt", HOSTILE_PROMPTS, ids=range(len(HOSTILE_PROMPTS)))
@pytest.mark.parametrize("action", ["pass", "warn", "block", "auto-fix"])
def test_hostile_prompts_never_raise(env, action, prompt):
    settings.update({"queue_action": action, "budget": "12"})
    data = {"prompt": prompt, "client_id": "c1"}
    out = prompt_handler.on_prompt(data)
    assert prompt_handler.wait_idle()
    assert isinstance(out, dict) and "prompt" in out


@pytest.mark.parametrize("values", [{}, {"queue_action": "block"}, {"queue_action": "block", "budget": ["x"]},
                                    {"queue_action": ["warn"], "budget": None}, {"queue_action": "warn", "budget": object()}])
def test_settings_of_any_shape_never_raise(env, monkeypatch, values):
    monkeypatch.setattr(settings, "get", lambda: dict(values))
    data = request()
    out = prompt_handler.on_prompt(data)
    assert prompt_handler.wait_idle()
    assert out is data and unstamped(data["prompt"]) == PROMPT


@pytest.mark.parametrize("json_data", [None, [], "text", {"prompt": []}, {"prompt": {}}, {"client_id": "c"}])
def test_requests_without_a_prompt_come_back_as_they_came(env, json_data):
    assert prompt_handler.on_prompt(json_data) is json_data


def test_a_send_that_fails_costs_neither_the_run_nor_later_toasts(env, monkeypatch, caplog):
    core, sent = env
    settings.update({"queue_action": "block", "budget": "12"})

    def broken(event, data, sid):
        raise OSError("socket gone")
    monkeypatch.setattr(prompt_handler, "send", broken)
    data = request()
    out = prompt_handler.on_prompt(data)
    # The decision stands (ComfyUI's answer to the queue request carries the plan); the toast is logged lost.
    assert gate_of(out["prompt"])[1] is not None and unstamped(data["prompt"]) == PROMPT
    assert_one_line_logged(caplog)
    # Warn toasts come from the worker: one that fails there leaves the worker serving the next prompt.
    settings.update({"queue_action": "warn"})
    prompt_handler.on_prompt(request())
    assert prompt_handler.wait_idle()
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append((event, data, sid)))
    prompt_handler.on_prompt(request())
    assert prompt_handler.wait_idle()
    assert sent and sent[-1][1]["over_budget"] is True


def test_a_client_id_that_is_not_a_string_gets_no_toast(env):
    """ComfyUI looks a client id up in its sockets dict; a list there would end its message loop."""
    _, sent = env
    settings.update({"queue_action": "warn", "budget": "12"})
    prompt_handler.on_prompt({**request(), "client_id": ["c1"]})
    prompt_handler.on_prompt({**request(), "client_id": None})  # ComfyUI's "every client": as before
    assert prompt_handler.wait_idle()
    assert [sid for _, _, sid in sent] == [None]


# ---- issue 27, item 5: the estimate is off ComfyUI's event loop in pass and warn mode, bounded otherwise ----

class HeldCore(fakes.FakeCore):
    """A core whose plans wait until the test releases them (at most 10 s), as a slow header would."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()
        self.started = threading.Event()

    def plan(self, text):
        self.started.set()
        self.release.wait(10)
        return super().plan(text)


@pytest.fixture
def held(monkeypatch):
    sent = []
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append((event, data, sid)))
    core = HeldCore()
    with natives_installed(core):
        try:
            yield core, sent
        finally:
            core.release.set()
            assert prompt_handler.wait_idle()


@pytest.mark.parametrize("with_preflight", [False, True])
def test_warn_returns_before_the_estimate_and_the_toast_follows(held, with_preflight):
    core, sent = held
    settings.update({"queue_action": "warn", "budget": "12"})
    prompt = PROMPT if with_preflight else {k: v for k, v in PROMPT.items() if k != "9"}
    data = request(prompt)
    assert prompt_handler.on_prompt(data) is data
    # The handler came back while the core was still busy with this prompt: nothing sent yet.
    assert core.started.wait(5) and not core.release.is_set() and sent == []
    core.release.set()
    assert prompt_handler.wait_idle()
    assert sent[-1][1]["over_budget"] is True and sent[-1][2] == "c1"


def test_pass_with_a_preflight_stamps_at_once_and_fills_the_fingerprint_in_later(held):
    core, _ = held
    settings.update({"queue_action": "pass"})
    data = request()
    assert prompt_handler.on_prompt(data) is data
    stamp = data["prompt"]["9"]["is_changed"]
    assert core.started.wait(5) and len(stamp) == 1 and stamp[0].startswith("pending ")
    core.release.set()
    assert prompt_handler.wait_idle()
    # The same list, now holding the workload's fingerprint: what ComfyUI reads when the prompt runs.
    assert data["prompt"]["9"]["is_changed"] is stamp and stamp[0] == prompt_handler.workload_fingerprint(PROMPT)


@pytest.mark.parametrize("action", ["block", "auto-fix"])
def test_block_and_auto_fix_wait_a_bounded_time_then_let_the_prompt_through(held, monkeypatch, caplog, action):
    core, sent = held
    monkeypatch.setattr(prompt_handler, "DECIDE_TIMEOUT_S", 0.2)
    settings.update({"queue_action": action, "budget": "12"})
    data = request()
    out = prompt_handler.on_prompt(data)
    assert not core.release.is_set()  # returned while the core was still at it
    assert out is data and unstamped(data["prompt"]) == PROMPT
    assert "queued unchecked" in sent[-1][1]["error"]
    assert_one_line_logged(caplog)


def test_newer_prompts_replace_the_waiting_one(held):
    """One worker and at most one prompt waiting: the newest; the ones it replaced are never estimated."""
    core, sent = held
    settings.update({"queue_action": "warn", "budget": "12"})
    no_preflight = {k: v for k, v in PROMPT.items() if k != "9"}
    prompt_handler.on_prompt({**request(no_preflight), "client_id": "first"})
    assert core.started.wait(5)  # the first is running, held by the core
    for i in range(50):
        prompt_handler.on_prompt({**request(no_preflight), "client_id": f"waiting {i}"})
    core.release.set()
    assert prompt_handler.wait_idle()
    assert [sid for _, _, sid in sent] == ["first", "waiting 49"]
    assert len([c for c in core.calls if c[0] == "plan"]) == 2


def test_the_gate_takes_the_id_of_a_node_in_the_users_graph():
    # ComfyUI keys node_errors by the gate's id; the issues panel's locate button must find that node.
    prompt = {"194:46": {"class_type": "KSampler"}, "7": {"class_type": "VAEDecode"},
              "9": {"class_type": "HeadroomPreflight"}}
    assert gate_node_id(prompt, [{"edits": [{"node_id": 7, "widget": "w"}]}], ["9"]) == "7"
    assert gate_node_id(prompt, [{"node_id": "nowhere"}], ["9"]) == "9"
    assert gate_node_id(prompt, [], []) == "7"  # top level first: a subgraph path may not be locatable
    assert gate_node_id({"194:46": {"class_type": "KSampler"}}, [], []) == "194:46"


def test_a_workflow_queued_in_the_ui_format_gates_on_one_of_its_nodes():
    workflow = {"revision": 0, "extra": {"ds": {}}, "nodes": [{"id": 12, "type": "KSampler"}], "links": []}
    assert gate_node_id(workflow, [], []) == "12"


def test_the_auto_fix_payload_names_the_preset_the_browser_applies_on_screen():
    """Issue 23 #3: the browser applies the same preset to the graph on screen."""
    from headroom_pack.nodes.server import autofix
    assert autofix.preset_named(autofix.PRESET_PREFIX + "fit this card") == "fit this card"
    assert autofix.preset_named("widget edits") is None
