"""The panel's "Recent runs" in headless Chromium: the timeline of a recorded run (tests/web/fixtures/
runs.json in the shape of GET /headroom/runs), predicted against measured per stage, and the calibration's
switch and reset going to the routes. Also writes the picture of docs/panel-runs.png."""
import re

from .harness import runs_routes, screenshot

GIB = 1024 ** 3
READY = "() => document.querySelector('.headroom-timeline polyline.vram') !== null"


def gib(b):
    return f"{b / GIB:.1f} GiB"


def points(page, selector):
    text = page.get_attribute(selector, "points")
    return [tuple(float(v) for v in p.split(",")) for p in text.split()]


def open_runs(open_panel):
    runs_routes.reset_state()
    page, errors = open_panel("/templates/text_to_video_wan.json")
    page.wait_for_function(READY)
    return page, errors


def test_timeline_shows_measured_lines_predicted_bands_and_peak_hold(open_panel):
    page, errors = open_runs(open_panel)
    newest = runs_routes.RUNS["runs"][0]
    vram, ram, hold = (points(page, f".headroom-timeline polyline.{c}") for c in ("vram", "ram", "peak-hold"))
    assert len(vram) == len(ram) == len(hold) == len(newest["timeline"])
    # Peak hold never comes down and ends at the measured line's highest point (smallest y on screen).
    ys = [y for _, y in hold]
    assert all(b <= a for a, b in zip(ys, ys[1:]))
    assert ys[-1] == min(y for _, y in vram)
    assert any(y1 > y2 for (_, y1), (_, y2) in zip(vram, vram[1:])), "the measured line should come down somewhere"
    bands = page.eval_on_selector_all(".headroom-timeline rect.band", "rs => rs.map((r) => r.dataset.stage)")
    assert bands == [s["name"] for s in newest["stages"]]
    # A band spans the least the stage needs to its predicted peak: taller where that range is wider.
    heights = page.eval_on_selector_all(".headroom-timeline rect.band", "rs => rs.map((r) => +r.getAttribute('height'))")
    ranges = [s["predicted_bytes"] - s["predicted_min_bytes"] for s in newest["stages"]]
    assert sorted(range(3), key=lambda i: heights[i]) == sorted(range(3), key=lambda i: ranges[i])
    assert errors == []


def test_stage_table_shows_predicted_against_measured_with_the_error(open_panel):
    page, errors = open_runs(open_panel)
    rows = page.eval_on_selector_all(".headroom-run-stages tr[data-stage]",
                                     "rs => rs.map((r) => [...r.children].map((c) => c.textContent))")
    stages = runs_routes.RUNS["runs"][0]["stages"]
    assert [r[0] for r in rows] == [s["name"] for s in stages]
    for row, s in zip(rows, stages):
        error = (s["measured_bytes"] - s["predicted_bytes"]) / s["predicted_bytes"]
        assert row[1:4] == [gib(s["predicted_bytes"]), gib(s["measured_bytes"]), f"{'+' if error >= 0 else ''}{error * 100:.0f}%"]
    # The run that ran out of memory: its last stage has no measurement, and its message is shown.
    page.click(".headroom-run-pick >> nth=1")
    oom = runs_routes.RUNS["runs"][1]
    page.wait_for_selector(".headroom-run-pick.selected.oom")
    assert page.text_content(".headroom-run-message") == oom["message"]
    last = page.eval_on_selector_all(".headroom-run-stages tr[data-stage]", "rs => [...rs.at(-1).children].map((c) => c.textContent)")
    assert last[0] == oom["stages"][-1]["name"] and last[2] == "not measured" and last[3] == "n/a"
    assert errors == []


def test_calibration_switch_and_reset_go_to_the_server_and_the_panel_says_so(open_panel, server):
    page, errors = open_runs(open_panel)
    status = ".headroom-calibration-status"
    assert page.text_content(status).startswith("calibration off")
    assert page.get_attribute(".headroom-runs-export", "href") == "/api/headroom/runs/export"
    estimates = len(server.routed("/headroom/plan"))
    page.click(".headroom-calibration-switch input")
    learned = runs_routes.LEARNED[0]
    page.wait_for_function(f"() => document.querySelector('{status}').textContent.includes('calibrated from')")
    assert re.match(rf"calibrated from {learned['runs']} runs on {re.escape(learned['card'])} \(sample ×1\.25\)",
                    page.text_content(status))
    assert {"calibration": True} in [r["body"] for r in server.routed("/headroom/settings")]
    assert server.wait_until(lambda: len(server.routed("/headroom/plan")) > estimates), "the switch did not re-estimate"
    page.click(".headroom-calibration-reset")
    page.wait_for_function(f"() => document.querySelector('{status}').textContent.startsWith('not calibrated yet')")
    assert page.text_content(status) == f"not calibrated yet: needs {runs_routes.RULE['min_runs']} measured runs of a model on this card"
    assert server.routed("/headroom/calibration/reset")
    assert errors == []


# HEADROOM_UPDATE_SCREENSHOT=1 refreshes docs/panel-runs.png (harness/screenshot.py).
def test_screenshot_of_the_runs_view_for_the_docs(open_panel):
    page, _ = open_runs(open_panel)
    page.click(".headroom-calibration-switch input")
    page.wait_for_function("() => document.querySelector('.headroom-calibration-status').textContent.includes('calibrated from')")
    assert screenshot.save(page, "panel-runs.png").stat().st_size > 5000
