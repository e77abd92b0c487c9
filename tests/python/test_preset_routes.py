"""POST /headroom/apply-preset for the panel's preset rows (issue 13, items 13 and 16): each answer says
what the preset does to the verdict and to the speed, and "fit this card" on a machine without a GPU
gets a message about the budget, not the core's API wording."""

import json

import pytest

import fakes
from conftest import core_built, load_pack, run_with_client, natives_installed

load_pack()
from headroom_pack.nodes.comfyui import budget  # noqa: E402
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.server import settings  # noqa: E402

FLUX = {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}}}


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    monkeypatch.setattr(budget, "free_bytes_raw", lambda device=None: None)
    monkeypatch.setattr(budget, "free_bytes", lambda device=None: None)
    settings.reset()
    yield
    settings.reset()


def post(path, body):
    async def check(client):
        r = await client.post(path, json=body)
        return r.status, await r.json()
    return run_with_client(check)


def test_fit_this_card_without_a_gpu_says_set_a_budget(no_gpu):
    core = fakes.FakeCore(presets=[{"name": "fit 8 GB"}, {"name": "fit this card", "target": "request"}])
    with natives_installed(core):
        status, body = post("/headroom/apply-preset", {"workflow": FLUX, "preset": "fit this card", "budget": "auto"})
        other, _ = post("/headroom/apply-preset", {"workflow": FLUX, "preset": "fit 8 GB", "budget": "auto"})
    assert status == 400 and body["error"].startswith("budget:") and "no GPU here" in body["error"]
    assert "vram_bytes" not in body["error"] and "free_bytes" not in body["error"]
    assert not any(c[0] == "apply_preset" and c[1]["preset"] == "fit this card" for c in core.calls)
    assert other == 200  # presets with their own target still preview


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_real_fit_this_card_without_a_gpu(no_gpu):
    native_loader.reset()
    status, body = post("/headroom/apply-preset", {"workflow": FLUX, "preset": "fit this card", "budget": "auto"})
    assert status == 400 and "no GPU here" in body["error"] and "give gpu" not in body["error"]


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_preset_answer_has_verdict_and_speed_before_and_after(no_gpu):
    """fit 8 GB on Flux dev at 8 GiB: the resident peak barely moves (both stream weights), but fp8 halves
    what streams per step, so the slowdown drops: that is what the row must show."""
    native_loader.reset()
    status, body = post("/headroom/apply-preset", {"workflow": FLUX, "preset": "fit 8 GB", "budget": "8"})
    assert status == 200, body
    before, after = body["before"], body["after"]
    assert before["verdict"] and after["verdict"]
    assert before["slowdown"] >= 1.0 and after["slowdown"] >= 1.0
    assert after["slowdown"] < before["slowdown"]
    assert any(c["widget"] == "weight_dtype" for c in body["changes"])


def test_preset_requests_read_the_files_from_comfyuis_folders_as_the_estimate_does(no_gpu, monkeypatch, tmp_path):
    """A broken file withholds the plan's verdict only if the preset rows read the same files: apply-preset
    and suggest-preset pass ComfyUI's model folders as /headroom/estimate does."""
    from headroom_pack.nodes.comfyui import comfy_adapters
    folders = {"diffusion_models": [str(tmp_path)]}
    monkeypatch.setattr(comfy_adapters, "comfy_models_dir", lambda: str(tmp_path))
    monkeypatch.setattr(comfy_adapters, "comfy_model_folders", lambda: folders)
    core = fakes.FakeCore()
    core.suggest_preset = lambda text: (core.calls.append(("suggest_preset", json.loads(text))),
                                        json.dumps({"chosen": None, "ranked": [], "not_ranked": []}))[1]
    with natives_installed(core):
        for path, body in (("/headroom/estimate", {}), ("/headroom/apply-preset", {"preset": "fit 8 GB"}),
                           ("/headroom/suggest-preset", {})):
            status, _ = post(path, {"workflow": FLUX, "budget": "8", **body})
            assert status == 200, path
    sent = {name: req for name, req in core.calls}
    for name in ("plan", "apply_preset", "suggest_preset"):
        assert sent[name]["models_dir"] == str(tmp_path) and sent[name]["model_folders"] == folders, name
        assert sent[name]["vram_bytes"] == 8 * 2**30, name
    assert sent["apply_preset"]["preset"] == "fit 8 GB" and "preset" not in sent["suggest_preset"]


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_suggest_preset_is_the_cores_ranking_in_one_request(no_gpu):
    """POST /headroom/suggest-preset answers with the core's own choice; without a card, the preset that
    needs one is left out with the reason, not refused as apply-preset refuses it."""
    native_loader.reset()
    status, body = post("/headroom/suggest-preset", {"workflow": FLUX, "budget": "8"})
    assert status == 200, body
    direct = native_loader.call_json("suggest_preset", {"workflow": FLUX, "vram_bytes": 8 * 2**30})
    assert body["chosen"]["preset"] == direct["chosen"]["preset"]
    assert [r["preset"] for r in body["ranked"]] == [r["preset"] for r in direct["ranked"]]
    status, body = post("/headroom/suggest-preset", {"workflow": FLUX, "budget": "auto"})
    assert status == 200, body
    assert any(n["preset"] == "fit this card" and "needs the card" in n["reason"] for n in body["not_ranked"])
