"""A Preflight the core could not estimate (issue 13, item 11): "Peak n/a in ? ... Verdict: FITS" read as
a fit. An estimate Headroom could not make must say so, with the core's reason, everywhere it is shown."""
import pytest

import fakes
from conftest import core_built, load_pack, natives_installed

load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.server import prompt_handler, settings  # noqa: E402
from headroom_pack.nodes.report import report_format  # noqa: E402
from headroom_pack.nodes.graph.preflight import HeadroomPreflight  # noqa: E402

# What the core answers for a prompt without a diffusion loader (api::plan, checked against the real
# core in test_real_core_says_it_could_not_estimate below).
UNKNOWN = {"budget_bytes": 12 * 2**30, "changes": [], "peak_bytes": None, "reason": "no diffusion model loader runs "
           "in this workflow", "smallest_gpu": None, "stages": [], "unknown_nodes": [{"id": "3", "type": "MyNode"}],
           "verdict": "unknown", "verdict_id": "unknown"}
NO_LOADER = {"5": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
             "9": {"class_type": "HeadroomPreflight", "inputs": {"samples": ["5", 0], "budget": "12", "action": "stop"}}}


@pytest.fixture
def unknown_core():
    core = fakes.FakeCore()
    core.plan = lambda text: (core.calls.append(("plan", text)), __import__("json").dumps(UNKNOWN))[1]
    with natives_installed(core):
        yield core


def test_report_says_not_estimated_with_the_reason():
    text = report_format.preflight_report(UNKNOWN, {"vram_bytes": 12 * 2**30}, "12.00 GiB")
    assert "Verdict: fits" not in text and "n/a" not in text and " in ?" not in text
    assert "could not estimate" in text and "no diffusion model loader" in text and "Verdict: unknown" in text
    assert "MyNode (node 3)" in text and "{" not in text
    assert not report_format.is_estimated(UNKNOWN) and not report_format.is_over_budget(UNKNOWN, {})


def test_estimated_reports_keep_their_verdict():
    fits = {"peak_bytes": 8 * 2**30, "peak_stage": "sample", "verdict": "fits", "verdict_id": "fits",
            "budget_bytes": 12 * 2**30,
            "stages": [{"name": "sample", "peak_bytes": 8 * 2**30}]}
    assert report_format.is_estimated(fits)
    assert "Verdict: fits" in report_format.preflight_report(fits, {"vram_bytes": 12 * 2**30}, "12.00 GiB")


def test_preflight_node_neither_fits_nor_stops_when_not_estimated(unknown_core):
    latent = fakes.latent_image()
    out = HeadroomPreflight().run(latent, budget="12", action="stop", prompt=NO_LOADER)
    text = out["result"][1]
    assert out["result"][0] is latent and "Verdict: unknown" in text and "Verdict: fits" not in text


def test_queue_time_payload_says_not_estimated(unknown_core, monkeypatch):
    sent = []
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append(data))
    settings.update({"queue_action": "warn", "budget": "12"})
    prompt_handler.on_prompt({"prompt": NO_LOADER, "client_id": "c"})
    assert prompt_handler.wait_idle()  # warn's toast comes from the worker thread
    payload = sent[-1]
    assert payload["estimated"] is False and "no diffusion model loader" in payload["not_estimated"]
    assert payload["over_budget"] is False and "Verdict: unknown" in payload["report"]


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_real_core_says_it_could_not_estimate():
    native_loader.reset()
    try:
        out = HeadroomPreflight().run(fakes.latent_image(), budget="12", action="warn", prompt=NO_LOADER)
    finally:
        native_loader.reset()
    text = out["result"][1]
    assert "could not estimate" in text and "Verdict: fits" not in text and "loader" in text
