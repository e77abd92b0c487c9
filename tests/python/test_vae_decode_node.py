"""VAE Decode (Headroom) (issue 13, item 15): budget errors name this node's inputs (it has no tile
input), every budget text is either a budget or an error, `auto` never picks `fast` and the tooltip says
what `fast` costs, and progress reaches ComfyUI at most ~10 times a second."""
import json
import sys
import types

import pytest

import fakes
from conftest import real_core_or_skip, load_pack, natives_installed
from test_nodes_run import FakeTorchOps

load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.server import settings  # noqa: E402
from headroom_pack.nodes.graph import vae_decode  # noqa: E402
from headroom_pack.nodes.graph.vae_decode import HeadroomVAEDecode  # noqa: E402

GIB = 2 ** 30
PLANNER_BUDGET_ERROR = ("budget: 1.00 GiB is too small for a fast tile of 8 latent px, which needs about 1.20 GiB; "
                        "raise the budget (free VRAM) or lower the tile")  # native/core/estimate/decode_plan.cpp wording


def gpu_lookup(text):
    """The core's recognise for a typed GPU name: one card, found by its name in any case; no other."""
    name = json.loads(text)["gpu"]
    if name.lower() == "rtx 3060 12gb":
        return json.dumps({"from": "gpu", "gpu": "RTX 3060 12GB", "memory_bytes": 12 * GIB, "matches": [],
                           "closest": []})
    return json.dumps({"from": "gpu", "gpu": None, "memory_bytes": None, "matches": [],
                       "closest": ["RTX 3060 12GB"] if "rtx" in name.lower() else []})


@pytest.fixture
def ops():
    core = fakes.FakeCore()
    core.recognise = gpu_lookup
    fake = FakeTorchOps("kl")
    with natives_installed(core, fake):
        yield fake


@pytest.mark.parametrize("mode", ["fast", "auto", "exact"])
def test_budget_error_names_this_nodes_inputs_not_a_tile(ops, mode):
    def too_small(*a, **kw):
        raise ValueError(PLANNER_BUDGET_ERROR)
    ops.decode = too_small
    with pytest.raises(ValueError) as info:
        HeadroomVAEDecode().decode(fakes.latent_image(), fakes.FakeVAE(), mode=mode, budget="1")
    text = str(info.value)
    advice = text.split("which needs")[1]
    assert text.startswith("budget:") and "1.00 GiB is too small" in text
    assert "tile" not in advice  # the advice names no tile input
    assert "this node's budget" in advice
    # auto and exact already use the least memory (fast runs exact on a KL VAE): no advice to switch mode.
    assert "set mode" not in advice and "free VRAM" in advice


@pytest.mark.parametrize("budget", ["abc", "RTX 9999 1GB", "12 apples"])
def test_unknown_budget_text_is_an_error_not_ignored(ops, budget):
    with pytest.raises(ValueError, match="^budget: .*(a card Headroom knows|GPU name)") as info:
        HeadroomVAEDecode().decode(fakes.latent_image(), fakes.FakeVAE(), budget=budget)
    assert ops.calls == []
    # The core's nearest cards are named, so a typo can be mended.
    assert ("closest: RTX 3060 12GB" in str(info.value)) == ("RTX" in budget)


@pytest.mark.parametrize("budget", ["9" * 400, "inf", "-1", "0"])
def test_out_of_range_budget_is_an_error(ops, budget):
    with pytest.raises(ValueError, match="^budget"):
        HeadroomVAEDecode().decode(fakes.latent_image(), fakes.FakeVAE(), budget=budget)


def test_gpu_name_budget_is_that_cards_memory(ops):
    HeadroomVAEDecode().decode(fakes.latent_image(), fakes.FakeVAE(), mode="exact", budget="rtx 3060 12gb")
    _, mode, budget_bytes = ops.calls[-1]
    assert budget_bytes == 12 * GIB - vae_decode.budget_mod.reserve_bytes()


def test_gpu_names_are_looked_up_by_the_core_as_the_cli_does():
    core = real_core_or_skip()
    cards = {g["name"]: g["memory_bytes"] for g in json.loads(core.catalog())["gpus"]}
    with natives_installed(core):
        # An unambiguous part of a name, as `headroom plan --gpu 4090` takes it.
        assert (vae_decode.decode_budget_bytes("RTX 4090") ==
                cards["RTX 4090 24GB"] - vae_decode.budget_mod.reserve_bytes())
        with pytest.raises(ValueError, match="^budget: .*a card Headroom knows.*closest: .*RTX 4090"):
            vae_decode.decode_budget_bytes("RTX 4091 24GB")


def test_fast_tooltip_says_what_it_does_and_auto_never_picks_it():
    mode_tip = HeadroomVAEDecode.INPUT_TYPES()["required"]["mode"][1]["tooltip"]
    assert "never fast" in mode_tip and "runs exact" in mode_tip and "twice as long as full" in mode_tip


def test_fast_on_a_kl_vae_runs_exact_and_says_so(ops):
    """fast's halo tiles needed more memory than exact and twice full's time (issue 13, item 15): on a KL
    VAE the node runs exact, which is smaller and faster and gives the whole decode's image."""
    out = HeadroomVAEDecode().decode(fakes.latent_image(), fakes.FakeVAE(), mode="fast", budget="8")
    assert ops.calls[-1][1] == "exact"
    assert "fast asked: exact ran instead" in out["ui"]["text"][0]
    HeadroomVAEDecode().decode(fakes.latent_image(), fakes.FakeVAE(), mode="exact", budget="8")
    assert ops.calls[-1][1] == "exact"


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture
def progress_bar(monkeypatch):
    """comfy.utils.ProgressBar as a stand-in that records (clock time, value, total) of each update."""
    clock = _Clock()
    updates = []

    class Bar:
        def __init__(self, total):
            self.total = total

        def update_absolute(self, value, total=None):
            updates.append((clock.t, value, total))
    utils = types.ModuleType("comfy.utils")
    utils.ProgressBar = Bar
    comfy = types.ModuleType("comfy")
    comfy.utils = utils
    monkeypatch.setitem(sys.modules, "comfy", comfy)
    monkeypatch.setitem(sys.modules, "comfy.utils", utils)
    return clock, updates


def test_progress_is_throttled_to_ten_messages_a_second(progress_bar):
    """An exact 1024 px decode reports 139,264 steps; ComfyUI got a websocket message for each."""
    clock, updates = progress_bar
    progress = vae_decode._Progress(clock=clock)
    total = 139264
    seconds = 7.0  # ~195 steps a second, as measured
    for done in range(1, total + 1):
        clock.t = seconds * done / total
        progress(done, total)
    assert updates[-1][1:] == (100, 100)  # it ends full
    assert len(updates) <= seconds * 10 + 2
    gaps = [b[0] - a[0] for a, b in zip(updates, updates[1:-1])]
    assert all(g >= 0.1 - 1e-9 for g in gaps)
    values = [u[1] for u in updates]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_progress_with_few_steps_shows_each(progress_bar):
    clock, updates = progress_bar
    progress = vae_decode._Progress(clock=clock)
    for done in range(1, 5):
        clock.t += 1.0
        progress(done, 4)
    assert [(v, t) for _, v, t in updates] == [(1, 4), (2, 4), (3, 4), (4, 4)]


def _torch_ops_or_skip():
    try:
        import _headroom_torch
    except ImportError:
        pytest.skip("_headroom_torch is not built")
    return _headroom_torch


@pytest.mark.parametrize("family,shape", [("kl", [1, 16, 128, 128]), ("kl", [1, 4, 96, 160])])
def test_auto_never_plans_fast(family, shape):
    ops = _torch_ops_or_skip()
    for budget in [0, 2 ** 28, 2 ** 29, 2 ** 30, 2 ** 31, 2 ** 32, 2 ** 34]:
        try:
            plan = dict(ops.plan(family, shape, mode="auto", budget_bytes=budget))
        except ValueError:
            continue  # too small for anything: an error, never a silent fast decode
        assert plan["mode"] in ("full", "exact"), (budget, plan)


def test_flux2_vae_decodes_natively_through_the_node():
    """A FLUX.2 VAE as ComfyUI hands it over (get_sd(): top-level post_quant_conv, bn statistics) and its
    [B, 128, H/16, W/16] LATENT: the node runs the native decoder (not ComfyUI's decode), exact equals the
    independent reference, and fast runs exact as on any KL decoder."""
    ht = _torch_ops_or_skip()
    import torch

    import reference_flux2_vae as f2
    model = f2.random_flux2_vae(seed=21)
    vae = fakes.FakeVAE(state_dict=f2.comfy_state_dict(model), upscale=8)
    z = torch.randn(1, 128, 3, 4, generator=torch.Generator().manual_seed(22))
    want = f2.decode_image(model, z)
    with natives_installed(fakes.FakeCore(), ht):
        out = HeadroomVAEDecode().decode({"samples": z}, vae, mode="exact", budget="8")
        assert (out["result"][0] - want).abs().max().item() < 1e-4
        assert out["ui"]["text"][0].startswith("flux2 VAE, exact decode")
        out = HeadroomVAEDecode().decode({"samples": z}, vae, mode="fast", budget="8")
        assert (out["result"][0] - want).abs().max().item() < 1e-4
        assert "fast asked: exact ran instead" in out["ui"]["text"][0]
    assert vae.decode_calls == []
