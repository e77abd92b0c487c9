"""VAE Decode (Headroom) with no native decoder (issue 12, item 4): it never falls back to one whole,
untiled vae.decode. It decodes through ComfyUI's tiled decode with the largest tile whose peak the real
estimator puts inside the budget, and says which path ran and why. The stand-in VAE (fakes.FakeVAE)
records the tiles it is asked for; the budget rule is checked against independent calls of the real core."""
import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_kl_vae as ref  # noqa: E402
from conftest import core_built, load_pack  # noqa: E402
from fakes import FakeVAE  # noqa: E402

pack = load_pack()
from headroom_pack.nodes.comfyui import comfy_tiled_decode  # noqa: E402
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.graph import vae_decode  # noqa: E402

GIB = 2**30


def flux_vae_state_dict():
    """The Flux VAE's real decoder layout (16 latent channels, widths 128-512) on the meta device: the
    recogniser reads names, dtypes and shapes only."""
    with torch.device("meta"):
        model = ref.random_vae(z_channels=16, widths=(128, 256, 512, 512), blocks=3, post_quant=False, seed=0)
    return {k: v.to(torch.bfloat16) for k, v in ref.state_dict_of(model).items()}


@pytest.fixture
def no_native_decoder(monkeypatch):
    def unavailable():
        raise native_loader.NativeUnavailable("_headroom_torch is not built (test)")
    monkeypatch.setattr(native_loader, "torch_ops", unavailable)
    monkeypatch.setattr(vae_decode, "evict_other_models", lambda: None)


def real_tiled_peak(core, tile_latent, width, height):
    r = json.loads(core.estimate(json.dumps({"model": "flux-vae", "width": width, "height": height, "batch": 1,
                                             "decode_mode": "tiled", "decode_tile_px": max(64, tile_latent * 8)})))
    return max(s["peak_bytes"] for s in r["stages"])


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
@pytest.mark.parametrize("budget_gib", [1.0, 1.6, 3.0])
def test_tiles_come_from_the_estimate_and_fit_the_budget(no_native_decoder, budget_gib):
    core = native_loader.core()
    vae = FakeVAE(flux_vae_state_dict())
    latent = {"samples": torch.randn(1, 16, 256, 256)}  # 2048 x 2048 px
    out = vae_decode.HeadroomVAEDecode().decode(latent, vae, mode="auto", budget=str(budget_gib))
    # Exactly one decode, and it went through decode_tiled (the old fallback called decode whole).
    assert len(vae.decode_calls) == 1 and len(vae.tiled_calls) == 1
    call = vae.tiled_calls[0]
    tile = call["tile_x"]
    assert call["tile_y"] == tile and 0 < call["overlap"] < tile
    budget = budget_gib * GIB
    # The tile fits, and the next larger candidate would not have (or there is none).
    assert real_tiled_peak(core, tile, 2048, 2048) <= budget
    candidates = json.loads(core.decode_tile(json.dumps({"model": "flux-vae", "latent_width": 256,
                                                         "latent_height": 256})))["candidates_latent"]
    larger = [t for t in candidates if t > tile]
    if larger:
        assert real_tiled_peak(core, min(larger), 2048, 2048) > budget
    text = out["ui"]["text"][0]
    assert "ComfyUI tiled decode" in text and f"tile {tile} latent px" in text and "flux-vae" in text
    assert "_headroom_torch is not built" in text
    assert out["result"][0].shape == (1, 2048, 2048, 3)


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_a_smaller_budget_gets_a_smaller_tile(no_native_decoder):
    tiles = []
    for budget in ("0.9", "4"):
        vae = FakeVAE(flux_vae_state_dict())
        vae_decode.HeadroomVAEDecode().decode({"samples": torch.randn(1, 16, 256, 256)}, vae, budget=budget)
        tiles.append(vae.tiled_calls[0]["tile_x"])
    assert tiles[0] < tiles[1]


class CountingCore:
    """The real core, counting the requests each decode costs."""

    def __init__(self, core):
        self.core, self.calls = core, []

    def __getattr__(self, name):
        function = getattr(self.core, name)

        def counted(*args):
            self.calls.append(name)
            return function(*args)
        return counted


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
@pytest.mark.parametrize("budget", ["0.9", "1.6", "64"])
def test_the_tile_is_one_core_request_per_decode(no_native_decoder, monkeypatch, budget):
    """Issue 25: the core answers the tile (api::decode_tile); the node no longer prices candidate tiles
    one estimate at a time (up to ten round trips per decode)."""
    counting = CountingCore(native_loader.core())
    monkeypatch.setattr(native_loader, "core", lambda: counting)
    vae = FakeVAE(flux_vae_state_dict())
    vae_decode.HeadroomVAEDecode().decode({"samples": torch.randn(1, 16, 256, 256)}, vae, budget=budget)
    assert counting.calls.count("decode_tile") == 1 and "estimate" not in counting.calls, counting.calls
    direct = json.loads(counting.core.decode_tile(json.dumps({"model": "flux-vae", "latent_width": 256,
                                                              "latent_height": 256, "budget_bytes":
                                                              int(float(budget) * GIB)})))
    assert vae.tiled_calls[0]["tile_x"] == direct["tile_latent"]
    assert vae.tiled_calls[0]["overlap"] == direct["overlap_latent"]


def test_a_core_that_chooses_no_tile_leaves_comfyuis_default_tiles_and_says_why(no_native_decoder, monkeypatch):
    """A core without decode_tile (an older build) or one that refuses the latent: ComfyUI's own tiles."""
    import fakes

    core = fakes.FakeCore()
    core.recognise = lambda text: json.dumps({"model": "flux-vae", "recognised": {"role": "vae"}})

    def refuse(text):
        raise ValueError("function: unknown 'decode_tile'")
    core.decode_tile = refuse
    monkeypatch.setattr(native_loader, "core", lambda: core)
    vae = FakeVAE(flux_vae_state_dict())
    out = vae_decode.HeadroomVAEDecode().decode({"samples": torch.randn(1, 16, 32, 32)}, vae, budget="8")
    assert vae.tiled_calls[0]["tile_x"] is None
    text = out["ui"]["text"][0]
    assert "ComfyUI's default tiles" in text and "unknown 'decode_tile'" in text


def test_unknown_vae_or_no_core_uses_comfyuis_default_tiles_and_says_so(no_native_decoder, monkeypatch):
    def no_core():
        raise native_loader.NativeUnavailable("headroom_core is not installed (test)")
    monkeypatch.setattr(native_loader, "core", no_core)
    vae = FakeVAE({"decoder.conv_in.weight": torch.zeros(4, 16, 3, 3)}, video=True)
    out = vae_decode.HeadroomVAEDecode().decode({"samples": torch.randn(1, 16, 3, 6, 6)}, vae, budget="8")
    # No tile given: ComfyUI's decode_tiled chooses its own; only the temporal overlap is ours.
    assert vae.tiled_calls == [{"tile_x": None, "tile_y": None, "overlap": None, "tile_t": None, "overlap_t": 1}]
    text = out["ui"]["text"][0]
    assert "ComfyUI's default tiles" in text and "estimator core is not loaded" in text
    assert out["result"][0].shape[0] == 9  # 3 latent frames -> 9 video frames, as IMAGE rows
