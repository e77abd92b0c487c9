"""make_room against stand-ins of comfy.model_management's free_memory: the 2026 one (for_dynamic:
dynamic models are not unloaded for other dynamic models) and the 0.3.64 one (no such argument). The
stand-ins follow ComfyUI's rule: unload models, largest offloaded first, until the request is free."""
import sys
import types

import pytest

from conftest import load_pack

load_pack()
from headroom_pack.nodes.comfyui import decode_room  # noqa: E402

GIB = 1024 ** 3


class FakeModel:
    pass


class DiT(FakeModel):
    pass


class TextEncoder(FakeModel):
    pass


class Loaded:
    def __init__(self, model_cls, size, dynamic):
        self.model = types.SimpleNamespace(model=model_cls(), is_dynamic=lambda: dynamic)
        self.size = size


def fake_mm(card, loaded, with_for_dynamic):
    mm = types.ModuleType("comfy.model_management")
    mm.current_loaded_models = list(loaded)
    mm.calls = []

    def free_now():
        return card - sum(m.size for m in mm.current_loaded_models)

    def unload_until(need, keep_loaded, for_dynamic):
        out = []
        for m in list(mm.current_loaded_models):
            if free_now() >= need:
                break
            if m in keep_loaded or (for_dynamic and m.model.is_dynamic()):
                continue
            mm.current_loaded_models.remove(m)
            out.append(m)
        return out

    if with_for_dynamic:
        def free_memory(memory_required, device, keep_loaded=[], for_dynamic=False, pins_required=0, ram_required=0):
            mm.calls.append(("free_memory", memory_required, for_dynamic))
            return unload_until(memory_required, keep_loaded, for_dynamic)
    else:
        def free_memory(memory_required, device, keep_loaded=[]):
            mm.calls.append(("free_memory", memory_required, None))
            return unload_until(memory_required, keep_loaded, False)
    mm.free_memory = free_memory
    mm.get_free_memory = lambda dev=None: free_now()
    mm.get_torch_device = lambda: "cuda:0"
    mm.soft_empty_cache = lambda force=False: mm.calls.append(("soft_empty_cache",))
    return mm


@pytest.fixture
def install(monkeypatch):
    def put(mm):
        monkeypatch.setitem(sys.modules, "comfy.model_management", mm)
        return mm
    return put


def _aimdo(monkeypatch, evictable):
    """comfy.memory_management.aimdo_enabled and comfy_aimdo.model_vbar.vbars_analyze as ComfyUI 0.38
    with comfy-aimdo leaves them: `evictable` bytes of cached weights aimdo gives back on demand."""
    memory_management = types.ModuleType("comfy.memory_management")
    memory_management.aimdo_enabled = True
    vbar = types.ModuleType("comfy_aimdo.model_vbar")
    vbar.vbars_analyze = lambda device=None: evictable()
    monkeypatch.setitem(sys.modules, "comfy.memory_management", memory_management)
    monkeypatch.setitem(sys.modules, "comfy_aimdo.model_vbar", vbar)


def test_dynamic_vram_counts_cached_weights_as_free_and_unloads_none(install, monkeypatch):
    """Follows ModelPatcher.get_free_memory (Comfy-Org/ComfyUI comfy/model_patcher.py@08d0e510: free +
    vbars_analyze under aimdo): 16 GB card, ~14 GB of cached dynamic DiT and text-encoder weights, a
    1.2 GiB decode. aimdo evicts them when the decode allocates; unloading them would make the next run
    reload 14 GB, so nothing is unloaded."""
    dit, te = Loaded(DiT, 9 * GIB, True), Loaded(TextEncoder, 5 * GIB, True)
    mm = install(fake_mm(16 * GIB, [dit, te], with_for_dynamic=True))
    _aimdo(monkeypatch, lambda: sum(m.size for m in mm.current_loaded_models if m.model.is_dynamic()))
    need = int(1.2 * GIB) + 2 * GIB
    r = decode_room.make_room(need)
    assert r["free_before"] == 16 * GIB  # 2 GiB free to torch + 14 GiB aimdo would evict
    assert r["unloaded"] == [] and mm.current_loaded_models == [dit, te]
    assert not [c for c in mm.calls if c[0] == "free_memory"]
    assert "evicts cached weights on demand" in r["note"]


def test_dynamic_vram_unloads_only_what_aimdo_cannot_evict(install, monkeypatch):
    # A GGUF model sits on the legacy loader beside a dynamic one: only it is worth unloading.
    gguf, dit = Loaded(TextEncoder, 10 * GIB, False), Loaded(DiT, 3 * GIB, True)
    mm = install(fake_mm(16 * GIB, [gguf, dit], with_for_dynamic=True))
    _aimdo(monkeypatch, lambda: sum(m.size for m in mm.current_loaded_models if m.model.is_dynamic()))
    r = decode_room.make_room(8 * GIB)
    assert ("free_memory", 8 * GIB - 3 * GIB, True) in mm.calls
    assert r["unloaded"] == ["TextEncoder"] and mm.current_loaded_models == [dit]
    assert r["free_after"] == 16 * GIB


def test_the_legacy_loader_unloads_cached_models_until_the_decode_fits(install):
    # --disable-dynamic-vram on a 2026 ComfyUI: no aimdo, free_memory takes for_dynamic=False.
    dit, te = Loaded(DiT, 9 * GIB, False), Loaded(TextEncoder, 5 * GIB, False)
    mm = install(fake_mm(16 * GIB, [dit, te], with_for_dynamic=True))
    r = decode_room.make_room(int(1.2 * GIB) + 2 * GIB)
    assert r["free_before"] == 2 * GIB
    assert ("free_memory", int(1.2 * GIB) + 2 * GIB, False) in mm.calls
    assert r["unloaded"] == ["DiT"]  # the first one freed enough: the text encoder stays cached
    assert r["free_after"] == 11 * GIB
    assert "unloaded DiT" in r["note"]


def test_nothing_is_unloaded_when_the_need_is_free(install):
    mm = install(fake_mm(24 * GIB, [Loaded(DiT, 9 * GIB, True)], with_for_dynamic=True))
    r = decode_room.make_room(4 * GIB)
    assert r["unloaded"] == []
    assert not [c for c in mm.calls if c[0] == "free_memory"]
    assert "no model unloaded" in r["note"]


def test_the_legacy_free_memory_is_called_without_for_dynamic(install):
    mm = install(fake_mm(12 * GIB, [Loaded(DiT, 11 * GIB, False)], with_for_dynamic=False))
    r = decode_room.make_room(3 * GIB)
    assert mm.calls[0] == ("free_memory", 3 * GIB, None)
    assert r["unloaded"] == ["DiT"]
    assert r["free_after"] == 12 * GIB


def test_kept_models_stay_and_the_note_says_nothing_could_be_freed(install):
    vae = Loaded(FakeModel, 10 * GIB, True)
    install(fake_mm(12 * GIB, [vae], with_for_dynamic=True))
    r = decode_room.make_room(4 * GIB, keep=[vae])
    assert r["unloaded"] == []
    assert r["free_after"] == 2 * GIB
    assert "could free nothing" in r["note"]


def test_without_comfyui(monkeypatch):
    monkeypatch.delitem(sys.modules, "comfy.model_management", raising=False)
    r = decode_room.make_room(GIB)
    assert r["free_before"] is None and r["unloaded"] == []
