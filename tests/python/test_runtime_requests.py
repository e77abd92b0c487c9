"""Every estimate/plan/apply_preset request the nodes and routes send carries the live ComfyUI's loader and
knobs (issue 10, item 4): stand-in ComfyUI modules as ComfyUI >= 0.15 with dynamic VRAM and 0.3.64
(legacy) define them, and a fake core that records what it receives."""
import copy
import json
import sys

import pytest

import fakes
from conftest import load_pack, natives_installed, run_with_client

load_pack()
from headroom_pack.nodes.server import autofix, prompt_handler, settings  # noqa: E402
from headroom_pack.nodes.graph import preflight  # noqa: E402

GIB = 1024 ** 3
PROMPT = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "9": {"class_type": "HeadroomPreflight", "inputs": {"samples": ["5", 0], "budget": "12", "action": "warn"}},
}
# (ComfyUI version, aimdo_enabled or None for no comfy.memory_management, --reserve-vram GB,
#  --vram-headroom GB) -> the runtime the request must carry.
MODES = {
    "dynamic": ("0.15.2", True, 1.0, 0.5),
    "legacy": ("0.3.64", None, 2.0, None),
}


@pytest.fixture
def comfy(comfy_standin):
    """Installs the stand-in ComfyUI modules for one mode; returns the fields the core must receive."""
    def install(mode):
        version, aimdo, reserve, headroom = MODES[mode]
        comfy_standin(version, aimdo, reserve_vram=reserve, vram_headroom=headroom)
        return {"runtime": mode, "reserve_bytes": int(reserve * GIB), "vram_headroom_bytes": int((headroom or 0) * GIB)}
    return install


@pytest.fixture
def no_comfy(monkeypatch):
    for name in ("comfy.cli_args", "comfy.model_management", "comfy.memory_management"):
        monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.fixture
def core(monkeypatch):
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: None)
    with natives_installed(fakes.FakeCore()) as c:
        yield c


def carries(req, expected):
    for key, value in expected.items():
        assert req.get(key) == value, f"{key}: expected {value!r}, the core got {req.get(key)!r}"
    assert req.get("ram_bytes", 1) > 0  # host RAM when this machine can tell


def queue(prompt):
    return {"prompt": copy.deepcopy(prompt), "client_id": "c1", "extra_data": {}}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_preflight_node_plan_carries_the_runtime(comfy, core, mode):
    expected = comfy(mode)
    preflight.HeadroomPreflight().run(fakes.latent_image(), budget="12", prompt=PROMPT)
    name, req = core.calls[-1]
    assert name == "plan" and req["vram_bytes"] == 12 * GIB
    carries(req, expected)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_queue_time_plan_and_autofix_preset_carry_the_runtime(comfy, core, mode):
    expected = comfy(mode)
    settings.update({"queue_action": "warn", "budget": "12"})
    prompt_handler.on_prompt(queue(PROMPT))
    assert prompt_handler.wait_idle()  # the estimates run on the worker thread
    plans = [req for name, req in core.calls if name == "plan"]
    assert len(plans) == 1 and plans[0].get("runtime") == mode  # one plan serves the stamp and the toast
    carries(plans[0], expected)
    # A preset fix is asked for the same loader.
    autofix.apply_cheapest_fix(PROMPT, {"changes": [{"preset": "fp8-weights"}]}, {"vram_bytes": 12 * GIB})
    name, req = core.calls[-1]
    assert name == "apply_preset"
    carries(req, expected)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_routes_carry_the_runtime_and_the_browser_may_choose_one(comfy, core, mode):
    expected = comfy(mode)
    other = "legacy" if mode == "dynamic" else "dynamic"

    async def check(client):
        r = await client.post("/headroom/estimate", json={"workflow": PROMPT, "vram_bytes": 12 * GIB})
        assert r.status == 200
        carries(core.calls[-1][1], expected)
        r = await client.post("/headroom/estimate", json={"workflow": PROMPT, "vram_bytes": 12 * GIB, "runtime": other})
        assert r.status == 200 and core.calls[-1][1]["runtime"] == other
        r = await client.post("/headroom/apply-preset", json={"workflow": PROMPT, "preset": "fp8-weights",
                                                             "vram_bytes": 12 * GIB})
        assert r.status == 200
        presets = [req for name, req in core.calls if name == "apply_preset"]
        carries(presets[-1], expected)
        # Applying a preset is one core call: the core's answer carries the new plan, no re-plan follows.
        assert core.calls[-1][0] == "apply_preset"
        r = await client.post("/headroom/estimate", json={"workflow": PROMPT, "vram_bytes": 12 * GIB, "runtime": "fast"})
        body = await r.json()
        assert r.status == 400 and "runtime" in body["error"]

    run_with_client(check)


def test_outside_comfyui_the_runtime_is_left_to_the_core(no_comfy, core):
    preflight.HeadroomPreflight().run(fakes.latent_image(), budget="12", prompt=PROMPT)
    settings.update({"queue_action": "warn", "budget": "12"})
    prompt_handler.on_prompt(queue(PROMPT))
    assert prompt_handler.wait_idle()
    autofix.apply_cheapest_fix(PROMPT, {"changes": [{"preset": "fp8-weights"}]}, {"vram_bytes": 12 * GIB})
    assert core.calls
    for _name, req in core.calls:
        assert not {"runtime", "reserve_bytes", "vram_headroom_bytes", "ram_bytes"} & set(req), req


def test_the_single_model_estimate_carries_the_runtime(comfy, core, monkeypatch):
    expected = comfy("dynamic")
    monkeypatch.setattr(preflight.comfy_adapters, "model_descriptor", lambda m: {"config": "flux", "dim": 3072})
    monkeypatch.setattr(preflight.comfy_adapters, "catalog_model_name", lambda d: "flux1-dev")
    preflight.HeadroomPreflight().run(fakes.latent_image(), budget="12", model=object())
    name, req = core.calls[-1]
    assert name == "estimate" and req["model"] == "flux1-dev"
    carries(req, expected)
    assert json.dumps(req)  # JSON-ready
