"""The budget widget: 'auto' sends ComfyUI's free memory as free_bytes (the CUDA context and other
processes are already out of it), numbers and GPU names as before."""
import json

import pytest

from conftest import core_built, load_pack, native_core_or_none

PACK = load_pack()
from headroom_pack.nodes.comfyui import budget  # noqa: E402

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
    rank = {"fits": 0, "tight": 1, "streams": 1, "does not fit": 2}  # either loader (the default is dynamic)
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
    core = fakes.FakeCore()
    core.catalog = lambda: json.dumps({"runtime": {budget.RESERVE_CONSTANT: {"value": 3 * 2**20, "source": "test"}}})
    with natives_installed(core):
        assert budget.reserve_bytes() == 3 * 2**20


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_the_real_cores_reserve_is_comfyuis_400_mib(monkeypatch):
    monkeypatch.setattr(budget, "_comfy_mm", lambda: None)
    assert budget.reserve_bytes() == 400 * 2**20  # ComfyUI's EXTRA_RESERVED_VRAM on Linux


def _mm_standin(free, total):
    """comfy.model_management's get_free_memory / get_total_memory / get_torch_device for a CUDA card."""
    import sys
    import types
    mm = sys.modules["comfy.model_management"]
    mm.get_torch_device = lambda: types.SimpleNamespace(type="cuda", index=0)
    mm.get_free_memory = lambda dev=None: free
    mm.get_total_memory = lambda dev=None: total
    return mm


def _aimdo_standin(monkeypatch, resident):
    """comfy_aimdo.model_vbar with vbars_analyze(device): what aimdo could give back on that device."""
    import sys
    import types
    seen = []
    vbar = types.ModuleType("comfy_aimdo.model_vbar")

    def vbars_analyze(device=None):
        seen.append(device)
        return resident
    vbar.vbars_analyze = vbars_analyze
    monkeypatch.setitem(sys.modules, "comfy_aimdo.model_vbar", vbar)
    return seen


def test_auto_counts_evictable_weights_as_free_under_dynamic_vram(monkeypatch, comfy_standin):
    """Follows ModelPatcher.get_free_memory (Comfy-Org/ComfyUI comfy/model_patcher.py@08d0e510): with
    comfy.memory_management.aimdo_enabled, free = model_management.get_free_memory(device) +
    comfy_aimdo.model_vbar.vbars_analyze(device.index). After one run a 24 GiB card with 14 GiB of cached
    weights reads 3 GiB free to torch; the next run can use 17 GiB."""
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    comfy_standin("0.38.1", True)
    _mm_standin(3 * GIB, 24 * GIB)
    seen = _aimdo_standin(monkeypatch, 14 * GIB)
    assert budget.resolve("auto") == {"free_bytes": 17 * GIB, "vram_bytes": 24 * GIB}
    assert seen == [0]  # asked for the card ComfyUI runs on, by CUDA index


def test_auto_leaves_cached_weights_out_on_the_legacy_loader(monkeypatch, comfy_standin):
    """Without aimdo (legacy loader, or ComfyUI before 0.15) ModelPatcher.get_free_memory adds nothing:
    cached models there are unloaded by load_models_gpu, which the core models itself."""
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    for aimdo in (False, None):
        comfy_standin("0.38.1", aimdo)
        _mm_standin(3 * GIB, 24 * GIB)
        seen = _aimdo_standin(monkeypatch, 14 * GIB)
        assert budget.resolve("auto") == {"free_bytes": 3 * GIB, "vram_bytes": 24 * GIB}
        assert seen == []


def test_auto_survives_an_aimdo_that_cannot_answer(monkeypatch, comfy_standin):
    """aimdo enabled but its module missing or raising: the budget falls back to torch's free memory
    rather than failing the prompt."""
    import sys
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    comfy_standin("0.38.1", True)
    _mm_standin(3 * GIB, 24 * GIB)
    monkeypatch.delitem(sys.modules, "comfy_aimdo.model_vbar", raising=False)
    assert budget.resolve("auto")["free_bytes"] == 3 * GIB
    _aimdo_standin(monkeypatch, 0).clear()
    sys.modules["comfy_aimdo.model_vbar"].vbars_analyze = lambda device=None: 1 / 0
    assert budget.resolve("auto")["free_bytes"] == 3 * GIB
    # the decode budget (used directly) gets the same evictable-aware figure, less ComfyUI's reserve
    _aimdo_standin(monkeypatch, 5 * GIB)
    sys.modules["comfy.model_management"].extra_reserved_memory = lambda: GIB // 2
    assert budget.resolve("auto", reserve_applied_by_core=False) == {"vram_bytes": 8 * GIB - GIB // 2}



# Issue 23 #8: a budget of "banana" was stored by the settings and then answered, in red on every
# estimate, with the CLI's "--vram GIB". The core's catalog decides what a card name means; the words are
# the budget box's.
def _real_core_with_gpu_lookup():
    core = native_core_or_none()
    if core is None:
        pytest.skip("the core library is not built")
    if json.loads(core.recognise(json.dumps({"gpu": "RTX 4090 24GB"}))).get("from") != "gpu":
        pytest.skip("the built core predates the GPU lookup (rebuild)")
    return core


@pytest.fixture
def gpu_core():
    from conftest import natives_installed
    with natives_installed(_real_core_with_gpu_lookup()) as core:
        yield core


def test_settings_refuse_a_budget_that_is_no_card_in_the_budgets_words(gpu_core):
    from headroom_pack.nodes.server import settings
    with pytest.raises(ValueError) as refused:
        settings.update({"budget": "banana"})
    message = str(refused.value)
    assert message.startswith("budget: 'banana' is neither a size in GB nor a card Headroom knows (closest: ")
    assert "--" not in message and "Type auto, a size in GB such as 12" in message
    assert settings.get()["budget"] == "auto"  # the refused value is not kept


def test_a_card_name_is_kept_and_resolved(gpu_core):
    assert budget.validate("RTX 4090 24GB") == "RTX 4090 24GB"
    assert budget.resolve("rtx 4090") == {"gpu": "rtx 4090"}


def test_an_estimate_with_an_unknown_card_says_so_in_the_budgets_words(gpu_core):
    with pytest.raises(ValueError, match="neither a size in GB nor a card") as refused:
        budget.resolve("banana")
    assert "--vram" not in str(refused.value)


def test_without_a_core_a_card_name_goes_through(monkeypatch):
    from conftest import natives_installed
    with natives_installed(core_cause="not built (test)"):
        assert budget.validate("banana") == "banana"  # the core judges it when there is one


def test_a_name_of_several_cards_asks_for_more_of_it(gpu_core):
    with pytest.raises(ValueError) as refused:
        budget.validate("RTX 407")
    message = str(refused.value)
    assert "could be any of" in message and "RTX 4070 12GB" in message and "RTX 4070 Ti SUPER 16GB" in message
