"""Issue 20, "advice that holds together": every shared 2026 template planned by the built CLI on
8/12/16/24 GiB cards under both loaders, with no plan in any failure class of scripts/check_plans.py
(block swap under dynamic VRAM, a change that makes the run worse, two exclusive weight formats
combined, a smallest card that contradicts the verdict, one saving claimed by different changes, a
text-encode stage that limits the run without a text-encoder change, reserve advice that ignores the
given --reserve-vram)."""
import importlib.util

import pytest

from conftest import BUILD_DIR, REPO

_spec = importlib.util.spec_from_file_location("check_plans", REPO / "scripts" / "check_plans.py")
check_plans = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_plans)

CLI = BUILD_DIR / "headroom"


@pytest.fixture(scope="module")
def results(real_workflows):
    if not CLI.is_file():
        pytest.skip(f"the headroom CLI is not built ({CLI})")
    templates = real_workflows / "2026"
    if not templates.is_dir():
        pytest.skip(f"{templates} is absent")
    return check_plans.check(CLI, [templates])


def test_every_template_is_planned_on_four_cards_and_both_loaders(results):
    plans, _ = results
    files = {p for p, _, _, _ in plans}
    assert len(plans) == len(files) * len(check_plans.CARDS_GIB) * len(check_plans.LOADERS)
    assert len(files) == 31  # the 2026 folder: 31 workflow files, the 248 plans


@pytest.mark.parametrize("failure", check_plans.CLASSES)
def test_no_plan_fails(results, failure):
    plans, counts = results
    bad = [f"{p.name} {card} GiB {loader}" for p, card, loader, classes in plans if failure in classes]
    assert counts[failure] == 0, f"{failure}: expected no plan, got {len(bad)}: {bad[:8]}"


def test_the_classes_catch_what_they_name():
    """Each class fires on a plan shaped like the one the issue reports, and not on a coherent one."""
    swap = {"kind": "block_swap", "verdict": "streams", "saving_bytes": 1}
    worse = {"kind": "gguf_q5", "verdict": "does not fit", "saving_bytes": 2}
    fp8 = {"kind": "weights_fp8", "verdict": "streams", "saving_bytes": 3}
    q4 = {"kind": "gguf_q4", "verdict": "fits", "saving_bytes": 3}
    card = 12 * check_plans.GIB
    big = {"name": "big", "memory_bytes": 2 * card}
    plan = {"verdict": "streams", "changes": [swap, worse, fp8, q4], "cumulative": {"steps": [fp8, q4]},
            "smallest_gpu": big, "smallest_gpu_runs": big,
            "stages": [{"name": "text_encode", "mode": "streams"}]}
    assert check_plans.failures(plan, card, "dynamic") == {
        "block_swap_dynamic", "worse_change", "stacked_formats", "smallest_card", "same_saving",
        "text_encoder_ignored"}
    te = {"kind": "text_encoder_fp8", "verdict": "fits", "saving_bytes": 5}
    small = {"name": "small", "memory_bytes": card}
    good = {"verdict": "streams", "changes": [te, fp8], "cumulative": {"steps": [te]},
            "smallest_gpu": big, "smallest_gpu_runs": small,
            "stages": [{"name": "text_encode", "mode": "streams"}]}
    assert check_plans.failures(good, card, "dynamic") == set()
    assert check_plans.reserve_advice({"stages": [{"notes": ["start ComfyUI with --reserve-vram 1.4 (GB)"]}]}) == 1.4
