"""Queue-time preflight: passes, warns, blocks (with a prompt that fails validation with the plan) and
auto-fixes only when chosen, as set."""
import copy

import pytest

import fakes
from conftest import load_pack, natives_installed

load_pack()
from headroom_pack.nodes import native_loader, prompt_handler, settings  # noqa: E402
from headroom_pack.nodes.queue_gate import HeadroomQueueGate  # noqa: E402

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
    """The prompt without the Preflight nodes' cache stamp (prompt_handler.stamp_preflight_nodes)."""
    return {k: {kk: vv for kk, vv in n.items() if kk != "is_changed"} for k, n in prompt.items()}


def test_pass_does_nothing(env):
    core, sent = env
    settings.update({"queue_action": "pass", "budget": "12"})
    no_preflight = {k: v for k, v in PROMPT.items() if v["class_type"] != "HeadroomPreflight"}
    data = request(no_preflight)
    assert prompt_handler.on_prompt(data) is data and data["prompt"] == no_preflight
    assert core.calls == [] and sent == []
    # With a Preflight node, pass only stamps it (its report depends on the whole prompt) and sends nothing.
    data = request()
    assert prompt_handler.on_prompt(data) is data and unstamped(data["prompt"]) == PROMPT
    assert sent == [] and "is_changed" in data["prompt"]["9"]


def test_warn_sends_peak_stage_fix_and_keeps_prompt(env):
    core, sent = env
    settings.update({"queue_action": "warn", "budget": "12"})
    data = request()
    out = prompt_handler.on_prompt(data)
    assert out is data and unstamped(out["prompt"]) == PROMPT
    event, payload, sid = sent[-1]
    assert event == "headroom.preflight" and sid == "c1"
    assert payload["over_budget"] and payload["peak_stage"] == "sample" and payload["peak_bytes"] == 20 * 2**30
    assert "fp8" in payload["fix"]


def test_warn_when_it_fits_reports_fit(env):
    core, sent = env
    settings.update({"queue_action": "warn", "budget": "24"})
    out = prompt_handler.on_prompt(request())
    assert unstamped(out["prompt"]) == PROMPT and sent[-1][1]["over_budget"] is False


def test_block_replaces_prompt_with_failing_gate(env):
    core, sent = env
    settings.update({"queue_action": "block", "budget": "12"})
    out = prompt_handler.on_prompt(request())
    gate = out["prompt"]["headroom_gate"]
    assert list(out["prompt"]) == ["headroom_gate"] and gate["class_type"] == "HeadroomQueueGate"
    verdict = HeadroomQueueGate.VALIDATE_INPUTS(**gate["inputs"])
    assert verdict is not True and "OVER BUDGET" in verdict and "fp8" in verdict
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
    does not fit 4 GiB, whatever its weights are stored in (its activations and decode alone are over),
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
    settings.update({"queue_action": "auto-fix", "budget": "4"})
    out = prompt_handler.on_prompt({"prompt": workflow, "client_id": "c"})
    applied = out["extra_data"]["extra_pnginfo"]["headroom"]["applied"]
    latent = next(n for n in workflow["nodes"] if n["type"] == "Wan22ImageToVideoLatent")
    cuts = {c["widget"]: c for c in applied if str(c["node_id"]) == str(latent["id"])}
    assert cuts["length"]["to"] < cuts["length"]["from"] == 121
    assert sent[-1][1]["over_budget"] is True
    settings.update({"budget": "3"})
    untouched = prompt_handler.on_prompt({"prompt": workflow, "client_id": "c"})
    assert "headroom" not in untouched.get("extra_data", {}).get("extra_pnginfo", {})
    settings.update({"queue_action": "block"})
    blocked = prompt_handler.on_prompt({"prompt": workflow, "client_id": "c"})
    assert list(blocked["prompt"]) == ["headroom_gate"] and "OVER BUDGET" in blocked["prompt"]["headroom_gate"]["inputs"]["reason"]
    settings.reset()


def test_preflight_stamp_follows_the_whole_prompts_workload(env):
    """Issue 13, item 16: ComfyUI served a Preflight from its cache (same inputs) although the prompt's
    workload had changed elsewhere. The stamp is ComfyUI's is_changed for that node: it moves when the
    estimate moves (here: a decode node added downstream), and stays for a new seed or prompt text."""
    core, _ = env
    settings.update({"queue_action": "pass"})

    def stamp_of(prompt):
        data = request(prompt)
        prompt_handler.on_prompt(data)
        return data["prompt"]["9"]["is_changed"]

    base = stamp_of(PROMPT)
    core._result = (lambda original: (lambda req: {**original(req), "stages_seen": sorted(
        n["class_type"] for n in req["workflow"].values())}))(core._result)
    with_decode = {**PROMPT, "8": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["1", 0]}}}
    same = stamp_of(PROMPT)
    changed = stamp_of(with_decode)
    assert isinstance(base, list) and len(base) == 1
    assert same == stamp_of(PROMPT) and changed != same
    # ComfyUI consults node["is_changed"] only for classes that define IS_CHANGED.
    from headroom_pack.nodes.preflight import HeadroomPreflight
    assert callable(getattr(HeadroomPreflight, "IS_CHANGED", None))
    # The stamp is computed without a budget, so free VRAM moving between runs does not re-run it.
    plan_requests = [req for kind, req in core.calls if kind == "plan"]
    assert all("vram_bytes" not in r and "free_bytes" not in r for r in plan_requests)

