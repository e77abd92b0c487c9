"""GET /headroom/runs, the calibration routes and the calibration setting for the browser tests, in the
shapes nodes/server/calibration_routes.py and the run history answer: the runs are tests/web/fixtures/runs.json,
the calibration a canned learned answer that the switch and the reset change."""
import json
from pathlib import Path

RUNS = json.loads((Path(__file__).parent.parent / "fixtures" / "runs.json").read_text(encoding="utf-8"))
RULE = {"min_runs": 3, "max_runs": 20, "factor_min": 0.5, "factor_max": 2.0}
LEARNED = [{"model": "flux1-dev-fp8.safetensors", "stage": "sample", "card": "NVIDIA GeForce RTX 4090",
            "factor": 1.25, "runs": 3}]
# GET /headroom/runs/unfinished as the real recorder and core answered it after a run killed mid-decode
# (tests/web/fixtures/unfinished.json); offered only while a test sets state["unfinished"].
UNFINISHED = json.loads((Path(__file__).parent.parent / "fixtures" / "unfinished.json").read_text(encoding="utf-8"))
NO_NOTICE = {"run": None, "explanation": None}
state = {"enabled": False, "reset": False, "unfinished": False, "seen": 0}


def reset_state():
    state.update(enabled=False, reset=False, unfinished=False, seen=0)


def calibration():
    entries = [] if state["reset"] else LEARNED
    return {"enabled": state["enabled"], "card": LEARNED[0]["card"], "calibration": entries,
            "runs": max((e["runs"] for e in entries), default=0), "rule": RULE, "reset_at": 0, "stored": True}


def mock(method, route, body):
    """(status, reply) for the routes of this file, or None to leave the request to mock_routes."""
    # GET /headroom/runs is mock_routes': these runs and the OOM toast's run in one answer.
    if route == "/headroom/runs/unfinished":
        return 200, UNFINISHED if state["unfinished"] and not state["seen"] else NO_NOTICE
    if route == "/headroom/runs/unfinished/seen":
        forgotten = state["unfinished"] and not state["seen"]
        state["seen"] += 1
        return 200, {"forgotten": forgotten}
    if route == "/headroom/calibration":
        return 200, calibration()
    if route == "/headroom/calibration/reset":
        state["reset"] = True
        return 200, calibration()
    if route == "/headroom/settings" and isinstance(body, dict) and isinstance(body.get("calibration"), bool):
        state["enabled"] = body["calibration"]
    return None
