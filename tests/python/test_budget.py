"""The budget widget: 'auto' sends ComfyUI's free memory as free_bytes (the CUDA context and other
processes are already out of it), numbers and GPU names as before."""
import json

import pytest

from conftest import core_built, load_pack, native_core_or_none

PACK = load_pack()
from headroom_pack.nodes import budget  # noqa: E402

GIB = 2 ** 30


def test_auto_sends_free_memory_and_total(monkeypatch):
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    monkeypatch.setattr(budget, "free_bytes_raw", lambda device=None: 20 * GIB)
    monkeypatch.setattr(budget, "total_bytes", lambda device=None: 24 * GIB)
    assert budget.resolve("auto") == {"free_bytes": 20 * GIB, "vram_bytes": 24 * GIB}
    assert budget.describe(budget.resolve("auto")) == "20.00 GiB free"
    # A decode budget is used directly, so ComfyUI's reserve comes off here.
    monkeypatch.setattr(budget, "reserve_bytes", lambda: GIB // 2)
    assert budget.resolve("auto", reserve_applied_by_core=False) == {"vram_bytes": 20 * GIB - GIB // 2}


def test_auto_without_a_gpu_gives_no_budget(monkeypatch):
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    monkeypatch.setattr(budget, "free_bytes_raw", lambda device=None: None)
    assert budget.resolve("auto") == {}


def test_numbers_and_names():
    assert budget.resolve("12") == {"vram_bytes": 12 * GIB}
    assert budget.resolve(8.0) == {"vram_bytes": 8 * GIB}
    assert budget.resolve("RTX 4090") == {"gpu": "RTX 4090"}
    with pytest.raises(ValueError, match="budget"):
        budget.resolve("-3")


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_core_counts_free_memory_once(monkeypatch):
    """Less free memory can only make the verdict worse; and F bytes free (context and other processes
    already out) must never look worse than a whole card of F bytes (which still has to hold the context)."""
    core = native_core_or_none()
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    monkeypatch.setattr(budget, "total_bytes", lambda device=None: 24 * GIB)
    job = {"model": "flux1-dev", "precision": "fp8_e4m3fn", "width": 1024, "height": 1024}
    rank = {"fits": 0, "tight": 1, "does not fit": 2}
    verdicts = []
    for free in (23 * GIB, 14 * GIB, 6 * GIB):
        monkeypatch.setattr(budget, "free_bytes", lambda device=None, f=free: f)
        monkeypatch.setattr(budget, "free_bytes_raw", lambda device=None, f=free: f)
        out = json.loads(core.estimate(json.dumps({**job, **budget.resolve("auto")})))
        assert out["budget_bytes"] == free
        verdicts.append(rank[out["verdict"]])
    assert verdicts == sorted(verdicts) and verdicts[-1] >= 1
    for gib in (8, 12, 16):
        free = json.loads(core.estimate(json.dumps({**job, "free_bytes": gib * GIB, "vram_bytes": 24 * GIB})))
        card = json.loads(core.estimate(json.dumps({**job, "vram_bytes": gib * GIB})))
        assert rank[free["verdict"]] <= rank[card["verdict"]], gib


def test_without_comfyui_the_reserve_is_the_cores_runtime_constant(monkeypatch):
    """Outside ComfyUI the reserve comes from the core's data (models.json runtime), not a Python copy."""
    import fakes
    from conftest import natives_installed
    monkeypatch.setattr(budget, "_comfy_mm", lambda: None)
    monkeypatch.setattr(budget, "_core_reserve", [])
    core = fakes.FakeCore()
    core.catalog = lambda: json.dumps({"runtime": {budget.RESERVE_CONSTANT: {"value": 3 * 2**20, "source": "test"}}})
    with natives_installed(core):
        assert budget.reserve_bytes() == 3 * 2**20


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_the_real_cores_reserve_is_comfyuis_400_mib(monkeypatch):
    monkeypatch.setattr(budget, "_comfy_mm", lambda: None)
    monkeypatch.setattr(budget, "_core_reserve", [])
    assert budget.reserve_bytes() == 400 * 2**20  # ComfyUI's EXTRA_RESERVED_VRAM on Linux
