"""VAE Decode (Headroom) frees only what its decode needs (issue 10, item 6): a stand-in
comfy.model_management that unloads cached models like ComfyUI (test_decode_room.fake_mm), a fake core
that knows the VAE and prices its decode, and no native decoder (so ComfyUI's tiled decode of a FakeVAE
runs). Before, every model was unloaded before every decode."""
import json

import pytest
import torch

import fakes
from conftest import natives_installed
from test_decode_room import DiT, Loaded, TextEncoder, fake_mm

from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.graph import vae_decode  # noqa: E402

GIB = 1024 ** 3
RESERVE = GIB // 2


class DecodeCore(fakes.FakeCore):
    """Knows the VAE and prices its decode at `need` (own_peak_bytes), whatever tile is asked."""

    def __init__(self, need):
        super().__init__()
        self.need = need
        self.recognised = "some-vae"

    def recognise(self, text):
        self.calls.append(("recognise", json.loads(text)))
        return json.dumps({"model": self.recognised, "recognised": {"role": "vae"}})

    def estimate(self, text):
        req = json.loads(text)
        self.calls.append(("estimate", req))
        return json.dumps({"own_peak_bytes": self.need, "peak_bytes": self.need,
                           "stages": [{"name": "vae_decode", "peak_bytes": self.need}]})


@pytest.fixture
def comfy(monkeypatch):
    """A 16 GiB card holding a 9 GiB DiT and a 5 GiB text encoder (2 GiB free), under dynamic VRAM."""
    dit, te = Loaded(DiT, 9 * GIB, True), Loaded(TextEncoder, 5 * GIB, True)
    mm = fake_mm(16 * GIB, [dit, te], with_for_dynamic=True)
    mm.extra_reserved_memory = lambda: RESERVE
    mm.get_total_memory = lambda dev=None: 16 * GIB
    mm.processing_interrupted = lambda: False
    mm.throw_exception_if_processing_interrupted = lambda: None
    mm.unload_all_models = lambda: (mm.calls.append(("unload_all_models",)), mm.current_loaded_models.clear())
    monkeypatch.setitem(__import__("sys").modules, "comfy.model_management", mm)

    def unavailable():
        raise native_loader.NativeUnavailable("_headroom_torch is not built (test)")
    monkeypatch.setattr(native_loader, "torch_ops", unavailable)
    return mm


def decode(budget="auto"):
    vae = fakes.FakeVAE()
    out = vae_decode.HeadroomVAEDecode().decode({"samples": torch.randn(1, 16, 32, 32)}, vae, budget=budget)
    return out["ui"]["text"][0], vae


def loaded_names(mm):
    return [type(m.model.model).__name__ for m in mm.current_loaded_models]


def test_only_what_the_decode_needs_is_unloaded_and_the_text_says_so(comfy):
    with natives_installed(DecodeCore(int(1.2 * GIB))) as core:
        text, vae = decode()
    # 2 GiB were free; the decode needs 1.2 GiB plus ComfyUI's 0.5 GiB reserve: that is free already.
    assert ("unload_all_models",) not in comfy.calls and loaded_names(comfy) == ["DiT", "TextEncoder"]
    assert "no model unloaded" in text and "1.20 GiB" in text
    # The need was asked of the core for this VAE at the latent's pixel size, whole (mode auto tries full).
    est = [req for name, req in core.calls if name == "estimate"][0]
    assert (est["model"], est["width"], est["height"], est["decode_mode"]) == ("some-vae", 256, 256, "full")
    assert len(vae.tiled_calls) == 1
    # One recognition serves the room and the tiles (each walks every weight of the VAE).
    assert [name for name, _ in core.calls].count("recognise") == 1


def test_a_larger_need_unloads_one_model_not_both(comfy):
    with natives_installed(DecodeCore(4 * GIB)):
        text, _vae = decode()
    # 4 GiB + 0.5 GiB reserve > 2 GiB free: unloading the DiT (9 GiB) is enough, the text encoder stays.
    assert ("free_memory", 4 * GIB + RESERVE, False) in comfy.calls
    assert loaded_names(comfy) == ["TextEncoder"] and ("unload_all_models",) not in comfy.calls
    assert "unloaded DiT" in text and "11.00 GiB free now" in text


def test_tiles_are_sized_from_what_is_free_after_the_room_was_made(comfy, monkeypatch):
    budgets = []
    real = vae_decode.comfy_tiled_decode.decode

    def spy(vae, latent, budget_bytes, *rest):
        budgets.append(budget_bytes)
        return real(vae, latent, budget_bytes, *rest)
    monkeypatch.setattr(vae_decode.comfy_tiled_decode, "decode", spy)
    with natives_installed(DecodeCore(4 * GIB)):
        decode()
    assert budgets == [11 * GIB - RESERVE]  # free after unloading the DiT, less the reserve; not the 2 GiB before


def test_the_nodes_own_budget_caps_what_is_freed(comfy):
    with natives_installed(DecodeCore(6 * GIB)):
        text, _vae = decode(budget="1")
    # The node may use 1 GiB: 1 GiB + the reserve is free already, nothing is unloaded for the 6 GiB decode.
    assert loaded_names(comfy) == ["DiT", "TextEncoder"] and "no model unloaded" in text


def test_without_the_core_every_model_is_unloaded_as_before(comfy):
    with natives_installed(core_cause="headroom_core is not installed (test)"):
        text, _vae = decode()
    assert ("unload_all_models",) in comfy.calls and loaded_names(comfy) == []
    assert "unloaded every model" in text and "not loaded" in text


def test_an_unknown_vae_unloads_every_model_and_says_why(comfy):
    core = DecodeCore(GIB)
    core.recognised = None
    with natives_installed(core):
        text, _vae = decode()
    assert ("unload_all_models",) in comfy.calls and "catalog" in text


class OomOnceOps:
    """A native decoder stand-in that runs out of memory on its first decode, and records the budgets."""

    class DecodeCancelled(Exception):
        pass

    def __init__(self):
        self.budgets = []

    def detect_vae_family(self, state_dict):
        return "kl"

    def decode(self, state_dict, latent, mode, tile_px, budget_bytes, progress, cancel):
        self.budgets.append((mode, budget_bytes))
        if len(self.budgets) == 1:
            raise RuntimeError("CUDA out of memory (test)")
        b, _c, h, w = latent.shape
        return torch.zeros(b, h * 8, w * 8, 3), {"family": "kl", "mode": mode, "tiles": 4}


def test_an_out_of_memory_error_after_the_estimated_room_unloads_everything_for_the_retry(comfy, monkeypatch):
    ops = OomOnceOps()
    monkeypatch.setattr(native_loader, "torch_ops", lambda: ops)
    with natives_installed(DecodeCore(int(1.2 * GIB))):
        out = vae_decode.HeadroomVAEDecode().decode({"samples": torch.randn(1, 16, 32, 32)}, fakes.FakeVAE())
    text = out["ui"]["text"][0]
    # First try: nothing unloaded (1.7 GiB of 2 GiB free was enough by the estimate), budget 2 GiB - reserve.
    assert ops.budgets[0] == ("auto", 2 * GIB - RESERVE)
    # The retry tiles exact on the whole card, after every model was unloaded.
    assert ("unload_all_models",) in comfy.calls and ops.budgets[1] == ("exact", 16 * GIB - RESERVE)
    assert "retried tiled" in text and "every model was unloaded for the retry" in text
