"""Calibration in the pack (nodes/server/calibration.py, docs/calibration.md): opt-in, learned by the real core
from recorded runs (the history contract's run objects), stored in <user dir>/headroom/calibration.json,
passed into the estimates the pack makes, reset in one call, and the measurements exported without
prompts or paths."""
import json
import os
import time

import pytest

from conftest import load_pack, natives_installed, real_core_or_skip, run_with_client

load_pack()
from headroom_pack.nodes.server import calibration, runs_export, settings  # noqa: E402
from headroom_pack.nodes.comfyui import comfy_adapters  # noqa: E402
from headroom_pack.nodes.native import native_loader  # noqa: E402

CARD = "NVIDIA GeForce RTX 4090"
RATIOS = [1.20, 1.25, 1.30, 1.24, 1.26, 1.25]


def runs_for(model, stage="sample", ratios=RATIOS, started=1764633600, predicted=10 * 2**30, outcome="ok"):
    """Recorded runs, newest first, with `stage` of `model` measured at each ratio x predicted."""
    return [{"v": 1, "prompt_id": f"prompt-{i}", "started": started - i, "ended": started - i + 9, "outcome": outcome,
             "message": None, "runtime": {"loader": "dynamic", "device": CARD, "vram_total_bytes": 24 * 2**30},
             "stages": [{"name": stage, "model": model, "nodes": [], "wall_s": 8.0, "predicted_bytes": predicted,
                         "measured_bytes": round(predicted * r)}],
             "timeline": []} for i, r in enumerate(ratios)]


@pytest.fixture
def pack_with_history(tmp_path, monkeypatch):
    """The pack on the real core, with a user folder that holds a run history and a runs source answering
    `history["runs"]` (what the history parser would return); calibration still off."""
    core = real_core_or_skip()
    history = {"runs": []}
    (tmp_path / calibration.HISTORY_NAME).write_text("{}\n")
    monkeypatch.setattr(calibration, "folder_override", tmp_path)
    monkeypatch.setattr(calibration, "runs_source", lambda: history["runs"])
    monkeypatch.setattr(calibration, "_logged", set())
    with natives_installed(core):
        yield history, tmp_path


def touch_history(folder, later_by_s=5):
    path = folder / calibration.HISTORY_NAME
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(later_by_s * 1e9)))


def sample(answer):
    return next(s for s in answer["stages"] if s["name"] == "sample")


def test_off_by_default_so_no_estimate_changes(pack_with_history):
    history, folder = pack_with_history
    history["runs"] = runs_for("flux1-dev")
    assert settings.get()["calibration"] is False
    assert calibration.request_fields() == {}
    assert "calibration" not in comfy_adapters.with_runtime({"model": "flux1-dev"})
    assert not (folder / calibration.FILE_NAME).exists()


def test_learned_corrections_reach_the_pack_s_estimates_and_are_stored(pack_with_history):
    history, folder = pack_with_history
    history["runs"] = runs_for("flux1-dev")
    request = {"model": "flux1-dev", "vram_bytes": 80 * 2**30}
    plain = native_loader.call_json("estimate", comfy_adapters.with_runtime(request))
    settings.update({"calibration": True})
    calibrated = native_loader.call_json("estimate", comfy_adapters.with_runtime(request))
    stored = json.loads((folder / calibration.FILE_NAME).read_text())
    [entry] = stored["calibration"]
    assert entry["card"] == CARD and entry["runs"] == len(RATIOS) and entry["stage"] == "sample"
    ratios = sorted(round(10 * 2**30 * r) / (10 * 2**30) for r in RATIOS)
    assert entry["factor"] == pytest.approx((ratios[2] + ratios[3]) / 2)
    assert sample(calibrated)["peak_bytes"] == pytest.approx(sample(plain)["peak_bytes"] * entry["factor"], abs=1)
    assert sample(calibrated)["calibration"]["runs"] == len(RATIOS)
    assert any(f"calibrated from {len(RATIOS)} runs on this card" in n for n in calibrated["notes"])


def test_a_workflow_s_model_file_is_matched_by_its_file_name(pack_with_history, real_workflows):
    history, _ = pack_with_history
    workflow = json.loads((real_workflows / "flux_dev_full_text_to_image.json").read_text())
    unet = next(n for n in workflow["nodes"] if n["type"] == "UNETLoader")["widgets_values"][0]
    history["runs"] = runs_for(unet.split("/")[-1])
    settings.update({"calibration": True})
    plan = native_loader.call_json("plan", comfy_adapters.plan_request(workflow, {"vram_bytes": 80 * 2**30}))
    assert sample(plan)["calibration"]["model"] == unet.split("/")[-1]
    assert sample(plan)["peak_bytes"] > sample(plan)["uncalibrated_peak_bytes"]


def test_reset_forgets_the_runs_so_far_and_later_runs_count_again(pack_with_history):
    history, folder = pack_with_history
    history["runs"] = runs_for("flux1-dev")
    settings.update({"calibration": True})
    assert calibration.request_fields()["calibration"]
    calibration.reset()
    assert calibration.request_fields() == {}
    touch_history(folder)  # the same old runs, re-read: still before the reset
    assert calibration.request_fields() == {}
    history["runs"] = runs_for("flux1-dev", ratios=[1.1] * 3, started=time.time() + 60) + history["runs"]
    touch_history(folder, 10)
    [entry] = calibration.request_fields()["calibration"]
    assert entry["runs"] == 3 and entry["factor"] == pytest.approx(1.1, rel=1e-6)


def test_too_few_or_failed_runs_give_no_correction(pack_with_history):
    history, _ = pack_with_history
    settings.update({"calibration": True})
    history["runs"] = runs_for("flux1-dev", ratios=[1.3]) + runs_for("flux1-dev", outcome="oom")
    assert calibration.request_fields() == {}


@pytest.mark.parametrize("content", ["not json", '{"v": 2, "calibration": []}', '{"v": 1, "calibration": 5}', "[]"])
def test_a_damaged_or_foreign_calibration_file_is_skipped_never_raised(pack_with_history, content, caplog):
    history, folder = pack_with_history
    (folder / calibration.FILE_NAME).write_text(content)
    assert calibration.load()["calibration"] == []
    assert "skipped" in caplog.text
    history["runs"] = runs_for("flux1-dev")
    settings.update({"calibration": True})
    assert calibration.request_fields()["calibration"]  # learned again from the history, file rewritten
    assert json.loads((folder / calibration.FILE_NAME).read_text())["v"] == 1


def test_malformed_runs_leave_estimates_uncalibrated_with_a_log_line(pack_with_history, caplog):
    history, _ = pack_with_history
    history["runs"] = runs_for("flux1-dev")
    history["runs"][0]["stages"][0]["measured_bytes"] = "lots"
    settings.update({"calibration": True})
    assert calibration.request_fields() == {}
    assert "runs[0].stages[0].measured_bytes" in caplog.text


def test_the_setting_takes_only_true_or_false():
    with pytest.raises(ValueError, match="^calibration: expected true or false"):
        settings.update({"calibration": "yes"})
    settings.reset()


def test_routes_show_reset_and_export(pack_with_history):
    history, _ = pack_with_history
    history["runs"] = runs_for("models/unet/flux1-dev")
    history["runs"][0]["message"] = "OutOfMemoryError in /home/ann/ComfyUI/custom_nodes/x/node.py line 3"
    settings.update({"calibration": True})

    async def check(client):
        shown = await (await client.get("/headroom/calibration")).json()
        export = await client.get("/headroom/runs/export")
        exported = await export.json()
        reset = await (await client.post("/headroom/calibration/reset", json={})).json()
        return shown, export.headers.get("Content-Disposition"), exported, reset
    shown, disposition, exported, reset = run_with_client(check)
    assert shown["enabled"] is True and shown["card"] == CARD and shown["runs"] == len(RATIOS)
    assert shown["rule"]["min_runs"] >= 1
    assert reset["calibration"] == [] and reset["reset_at"] > 0
    assert "attachment" in disposition
    text = json.dumps(exported)
    assert "prompt-" not in text and "/home/ann" not in text and "models/unet" not in text
    assert exported["runs"][0]["message"] == "OutOfMemoryError in <path>/node.py line 3"
    assert exported["runs"][0]["stages"][0]["model"] == "flux1-dev"
    assert exported["runs"][0]["stages"][0]["measured_bytes"] == history["runs"][0]["stages"][0]["measured_bytes"]
    assert len(exported["runs"]) == len(RATIOS)


@pytest.mark.parametrize("text,expected", [
    ("C:\\Users\\ann\\ComfyUI\\models\\x.safetensors missing", "<path>/x.safetensors missing"),
    ("at /opt/comfy/models/vae/ae.safetensors", "at <path>/ae.safetensors"),
    ("Tried to allocate 2.00 GiB (GPU 0; 23.99 GiB total)", "Tried to allocate 2.00 GiB (GPU 0; 23.99 GiB total)"),
])
def test_export_cuts_folders_out_of_messages(text, expected):
    assert runs_export.redact(text) == expected
