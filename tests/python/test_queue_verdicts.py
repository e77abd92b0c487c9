"""The queue-time action keeps its word (issue 10, item 5): warn, block and auto-fix act only on a verdict
whose catalog flag `runs` is false (out of VRAM, or out of host RAM, which the core also reports as a
run that does not complete); a run that streams weights or runs with little margin is reported and left
alone. A Preflight node set to "apply fix" fits its own budget, not the settings'."""
import copy

import pytest

import fakes
from conftest import core_built, load_pack, natives_installed

load_pack()
from headroom_pack.nodes.server import prompt_handler, settings  # noqa: E402
from headroom_pack.nodes.report import report_format  # noqa: E402
from headroom_pack.nodes.server.queue_gate import gate_of  # noqa: E402

GIB = 1024 ** 3
ROWS = {r["id"]: r for r in fakes.VERDICTS}
PROMPT = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
}


class VerdictCore(fakes.FakeCore):
    """Answers every plan with one verdict (and its reason), as the core does for that case."""

    def __init__(self, verdict_id, reason=None, slowdown=1.0, runtime="dynamic"):
        super().__init__()
        self.verdict, self.verdict_id = ROWS[verdict_id]["text"], verdict_id
        self.reason, self.slowdown, self.runtime = reason, slowdown, runtime

    def _result(self, req):
        out = super()._result(req)
        if req.get("vram_bytes") is not None:
            out.update(verdict=self.verdict, verdict_id=self.verdict_id, slowdown=self.slowdown, runtime=self.runtime,
                       changes=self.changes, advice="use fp8 weights to run at full speed")
            if self.reason:
                out["verdict_reason"] = self.reason
        return out


CASES = {
    "streams": ("streams", "sample streams weights, about 2.4x slower", 2.4),
    "tight": ("tight", "fits only with partial loading", 1.0),
    "vram": ("does_not_fit", "runs out of VRAM in sample", 1.0),
    "host_ram": ("does_not_fit", "runs out of host RAM: the weights need 40.0 GiB of 32.0 GiB", 1.0),
}


@pytest.fixture
def queue(monkeypatch):
    sent = []
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append(data))

    def run(case, action, prompt=PROMPT, budget="12"):
        verdict_id, reason, slowdown = CASES[case]
        with natives_installed(VerdictCore(verdict_id, reason, slowdown)) as core:
            settings.update({"queue_action": action, "budget": budget})
            data = {"prompt": copy.deepcopy(prompt), "client_id": "c1", "extra_data": {}}
            out = prompt_handler.on_prompt(data)
            assert prompt_handler.wait_idle()  # warn's toast comes from the worker thread
            return out, sent[-1], core
    return run


def unchanged(out, prompt=PROMPT):
    return {k: {kk: vv for kk, vv in n.items() if kk != "is_changed"} for k, n in out["prompt"].items()} == prompt


@pytest.mark.parametrize("case", ["streams", "tight"])
@pytest.mark.parametrize("action", ["warn", "block", "auto-fix"])
def test_a_run_that_completes_is_reported_never_blocked_or_fixed(queue, case, action):
    out, payload, core = queue(case, action)
    assert unchanged(out) and gate_of(out["prompt"])[1] is None
    assert not [c for c in core.calls if c[0] == "apply_preset"] and "applied" not in payload
    assert payload["over_budget"] is False and payload["verdict_flags"]["runs"] is True
    # Reported with its reason, the loader it is for and the slowdown.
    assert payload["verdict_reason"] == CASES[case][1] and payload["runtime"] == "dynamic"
    assert payload["slowdown"] == CASES[case][2]
    assert CASES[case][1] in payload["report"] and "dynamic VRAM" in payload["report"]
    assert "does not fit" not in payload["report"]


@pytest.mark.parametrize("case", ["vram", "host_ram"])
def test_block_acts_on_a_run_that_does_not_complete(queue, case):
    out, payload, _core = queue(case, "block")
    gate_id, gate = gate_of(out["prompt"])
    reason = gate["inputs"]["reason"]
    assert gate_id in PROMPT and payload["blocked"] is True
    assert CASES[case][1] in reason  # the host-RAM shortage says so, not "over budget" of VRAM


@pytest.mark.parametrize("case", ["vram", "host_ram"])
def test_auto_fix_acts_on_a_run_that_does_not_complete(queue, case):
    out, payload, _core = queue(case, "auto-fix")
    assert out["prompt"]["1"]["inputs"]["weight_dtype"] == "fp8_e4m3fn"  # the plan's widget edit
    assert payload["applied"] and out["extra_data"]["extra_pnginfo"]["headroom"]["applied"]


@pytest.mark.parametrize("case", ["vram", "host_ram"])
def test_warn_reports_a_run_that_does_not_complete_and_keeps_the_prompt(queue, case):
    out, payload, _core = queue(case, "warn")
    assert unchanged(out) and payload["over_budget"] is True and payload["verdict_reason"] == CASES[case][1]


def preflight_node(budget):
    return {"class_type": "HeadroomPreflight", "inputs": {"samples": ["5", 0], "budget": budget, "action": "apply fix"}}


def test_the_preflight_nodes_own_budget_is_what_its_apply_fix_fits(queue):
    prompt = {**PROMPT, "9": preflight_node("10")}
    # The settings say a 24 GB card; the node says 10 GB, and its apply fix must fit that.
    out, payload, core = queue("vram", "warn", prompt=prompt, budget="24")
    plans = [req for name, req in core.calls if name == "plan" and "vram_bytes" in req]
    assert plans[0]["vram_bytes"] == 10 * GIB
    assert payload["budget_bytes"] == 10 * GIB and payload["action"] == "auto-fix"
    assert out["prompt"]["1"]["inputs"]["weight_dtype"] == "fp8_e4m3fn"


def test_a_preflight_on_auto_leaves_the_settings_budget(queue):
    prompt = {**PROMPT, "9": preflight_node("auto")}
    _out, payload, core = queue("vram", "warn", prompt=prompt, budget="24")
    plans = [req for name, req in core.calls if name == "plan" and "vram_bytes" in req]
    assert plans[0]["vram_bytes"] == 24 * GIB and payload["budget_bytes"] == 24 * GIB


def test_the_preflight_report_names_the_loader_the_reason_and_the_advice():
    with natives_installed(fakes.FakeCore()):
        result = {"peak_bytes": 20 * GIB, "peak_stage": "sample", "stages": [], "verdict": "streams", "verdict_id": "streams",
                  "verdict_reason": "sample streams weights, about 2.4x slower", "runtime": "dynamic",
                  "advice": "use fp8 weights", "budget_bytes": 16 * GIB}
        text = report_format.preflight_report(result, {"vram_bytes": 16 * GIB}, "16.00 GiB")
        assert "Verdict: streams (sample streams weights, about 2.4x slower) [dynamic VRAM]" in text
        assert "Advice: use fp8 weights" in text
        legacy = report_format.preflight_report({**result, "verdict": "does not fit", "verdict_id": "does_not_fit", "runtime": "legacy",
                                                 "verdict_reason": "runs out of VRAM in sample"},
                                                {"vram_bytes": 16 * GIB}, "16.00 GiB")
        assert "Verdict: does not fit (runs out of VRAM in sample) [legacy loader]" in legacy


REAL_PROMPT = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors",
                                                     "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "latent_image": ["5", 0], "seed": 1, "steps": 20,
                                               "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple",
                                               "denoise": 1.0, "positive": ["7", 0], "negative": ["7", 0]}},
    "7": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "x"}},
    "8": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
}


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
@pytest.mark.parametrize("ram_gib", [256, 16])
def test_with_the_real_core_under_dynamic_vram_streaming_and_disk_reads_run(monkeypatch, ram_gib):
    """Dynamic VRAM reads weights file-backed (comfy-aimdo 0.6.0 ModelMMAP): 16 GiB of RAM under ~31 GiB of
    weights re-reads them from disk and is not blocked; only memory with no file behind it (LoRA patches,
    GGUF) can end the run (tests/native/estimate/test_runtime_dynamic.cpp)."""
    import sys
    import types
    from headroom_pack.nodes.comfyui import comfy_runtime
    cli = types.ModuleType("comfy.cli_args")
    cli.args = types.SimpleNamespace(reserve_vram=None, vram_headroom=0.0)
    mem = types.ModuleType("comfy.memory_management")
    mem.aimdo_enabled = True
    monkeypatch.setitem(sys.modules, "comfy.cli_args", cli)
    monkeypatch.setitem(sys.modules, "comfy.memory_management", mem)
    monkeypatch.setitem(sys.modules, "comfy.model_management", types.ModuleType("comfy.model_management"))
    monkeypatch.setattr(comfy_runtime, "_ram", lambda: (ram_gib * GIB, ram_gib * GIB // 2))
    sent = []
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append(data))
    with natives_installed():
        # FLUX.1-dev in 16 bit (~22 GiB of DiT weights, ~31 GiB with its text encoders) on a 12 GiB card.
        settings.update({"queue_action": "block", "budget": "12"})
        out = prompt_handler.on_prompt({"prompt": copy.deepcopy(REAL_PROMPT), "client_id": "c", "extra_data": {}})
    payload = sent[-1]
    assert payload["runtime"] == "dynamic"
    assert unchanged(out, REAL_PROMPT) and payload["verdict_flags"]["runs"] and not payload["verdict_flags"]["fits"]
    assert "slower" in payload["verdict_reason"] and payload["slowdown"] > 1
    assert ("reads weights from disk" in payload["verdict_reason"]) == (ram_gib == 16)
