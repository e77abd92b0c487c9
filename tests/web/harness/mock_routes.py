"""Answers the pack's /headroom/* routes in the shape nodes/server/routes.py returns, with canned numbers
(GiB figures below are illustrative, not estimates). Presets are computed on the workflow the page
posts, so the test sees which widgets the panel then rewrites.

A port of the former mock_routes.mjs: where the JavaScript left a value `undefined` (a widget the
workflow lacks, a preset with no peak), the key is left out of the reply, as JSON.stringify did."""
import json
import math
import re
from pathlib import Path

try:
    from . import runs_routes
except ImportError:  # loaded as a lone file (tests/python/test_verdict_spellings.py reads VERDICTS)
    import importlib.util as _util
    _spec = _util.spec_from_file_location("runs_routes", Path(__file__).with_name("runs_routes.py"))
    runs_routes = _util.module_from_spec(_spec)
    _spec.loader.exec_module(runs_routes)

WIDGETS = json.loads((Path(__file__).parent / "widgets.json").read_text(encoding="utf-8"))

GIB = 1024 ** 3
# A card reading in the shape of GET /headroom/vram (RTX 4090: 24564 MiB as torch reports its total).
SNAPSHOT = {
    "device": "NVIDIA GeForce RTX 4090", "total_bytes": 25757220864, "free_bytes": 9.1 * GIB,
    "comfy_reserve_bytes": 400 * 1024 ** 2,
    "torch_allocated_bytes": 11.2 * GIB, "torch_reserved_bytes": 12.6 * GIB, "reserved_unallocated_bytes": 1.4 * GIB,
    "other_processes": [{"pid": 4242, "bytes": 1.1 * GIB}], "other_processes_bytes": 1.1 * GIB,
}
# api::catalog()'s verdicts, as GET /headroom/presets passes them on (tests/python/fakes.py has the same copy,
# checked against the real core by tests/python/test_verdict_spellings.py).
VERDICTS = [{"id": "fits", "text": "fits", "runs": True, "fits": True, "sized": True},
            {"id": "tight", "text": "tight", "runs": True, "fits": False, "sized": True},
            {"id": "streams", "text": "streams", "runs": True, "fits": False, "sized": True},
            {"id": "does_not_fit", "text": "does not fit", "runs": False, "fits": False, "sized": True},
            {"id": "unknown", "text": "unknown", "runs": False, "fits": False, "sized": False}]
PRESETS = [
    {"name": "fp8-weights", "title": "fp8 weights"},
    {"name": "headroom-decode", "title": "Headroom exact tiled decode"},
    {"name": "half-frames", "title": "Half the frames"},
]
PEAKS = {"base": 27.3 * GIB, "fp8-weights": 21.0 * GIB, "headroom-decode": 19.8 * GIB, "half-frames": 16.4 * GIB}

# Shape of the core's explain(): diagnosis {id, text}, fixes [{id, text}] (no preset names).
EXPLANATION = {
    "recognised": True,
    "diagnosis": {"id": "out_of_memory", "text": "The job needs more memory than the card has: 100.0 MiB more was requested with 91.2 MiB free of 44.53 GiB."},
    "fixes": [{"id": "lower_precision", "text": "Load quantised weights (fp8)"}, {"id": "smaller_batch", "text": "Lower the batch size or the resolution"}],
}
BUDGET = 21.7 * GIB
# The texts the stand-in core does not take for memory failures (the real core decides; the toast only
# renders its `recognised`).
NOT_MEMORY_FAILURES = {"ValueError: bad input", "KeyError: 'imd'"}
NOT_RECOGNISED = {"recognised": False, "diagnosis": None, "fixes": []}
# A run in the recorder's contract that died of OOM in decode (figures illustrative).
OOM_RUN = {
    "prompt_id": "p-oom-1", "started": 1764633600, "ended": 1764633642, "outcome": "oom",
    "message": "torch.OutOfMemoryError: CUDA out of memory.",
    "runtime": {"loader": "dynamic", "device": "NVIDIA GeForce RTX 4090", "vram_total_bytes": 25757220864},
    "stages": [{"name": "sample", "model": "wan2.2_ti2v_5B_fp16.safetensors", "nodes": [], "wall_s": 30.0,
                "predicted_bytes": 15 * GIB, "measured_bytes": 14 * GIB, "ram_available_bytes": 20 * GIB},
               {"name": "vae_decode", "model": None, "nodes": [], "wall_s": 2.0, "predicted_bytes": 19.5 * GIB,
                "measured_bytes": 23.5 * GIB, "ram_available_bytes": 18 * GIB}],
    "timeline": []}
# GET /headroom/runs: the runs the panel's Recent runs view is tested on (runs_routes), then the OOM run.
RUNS = {"v": 1, "skipped_lines": 0, "runs": runs_routes.RUNS["runs"] + [OOM_RUN]}

# JavaScript's `undefined`: such keys are dropped from replies.
UNDEFINED = object()


def _defined(obj):
    return {k: v for k, v in obj.items() if v is not UNDEFINED}


def _get(obj, key):
    """`obj?.[key]` for parsed JSON: a missing key or a non-object is undefined."""
    return obj.get(key, UNDEFINED) if isinstance(obj, dict) else UNDEFINED


def _truthy(value):
    """JavaScript truthiness for JSON values ([] and {} are true there, unlike in Python)."""
    return not (value is UNDEFINED or value is None or value is False or value == 0 or value == "")


def widget_names(node_type, count):
    names = WIDGETS.get(node_type, []) if isinstance(node_type, str) else []
    return [names[i] if i < len(names) else f"widget_{i}" for i in range(count)]


def widget_value(node, name):
    values = _get(node, "widgets_values")
    if not isinstance(values, list):
        return UNDEFINED
    names = widget_names(_get(node, "type"), len(values))
    return values[names.index(name)] if name in names else UNDEFINED


def _nodes(workflow):
    if workflow is UNDEFINED or workflow is None:
        raise TypeError("Cannot read properties of undefined (reading 'nodes')")
    nodes = _get(workflow, "nodes")
    return [] if nodes is UNDEFINED or nodes is None else nodes


def preset_changes(workflow, preset):
    changes = []
    for node in _nodes(workflow):
        if _get(node, "mode") == 4:
            continue
        node_type = _get(node, "type")

        def change(widget, to):
            changes.append(_defined({"node_id": _get(node, "id"), "widget": widget,
                                     "from": widget_value(node, widget), "to": to}))

        if preset == "fp8-weights" and node_type == "UNETLoader":
            change("weight_dtype", "fp8_e4m3fn")
        if preset == "headroom-decode" and node_type == "HeadroomVAEDecode":
            change("mode", "exact")
        if preset == "half-frames" and re.search(r"ImageToVideo|LatentVideo", str(node_type)):
            length = widget_value(node, "length")
            # A missing or non-numeric length is NaN in JavaScript, which JSON writes as null.
            numeric = isinstance(length, (int, float)) and not isinstance(length, bool)
            change("length", math.floor((length - 1) / 8) * 4 + 1 if numeric else None)
    return changes


def rewritten(workflow, changes):
    """The workflow with the changes made, as the core's apply_preset returns it (the panel loads it)."""
    if not isinstance(workflow, dict) or not isinstance(workflow.get("nodes"), list):
        return workflow
    out = json.loads(json.dumps(workflow))
    by_id = {n.get("id"): n for n in out["nodes"] if isinstance(n, dict)}
    for c in changes:
        node = by_id.get(c.get("node_id"))
        values = node.get("widgets_values") if node else None
        if isinstance(values, list):
            names = widget_names(node.get("type"), len(values))
            if c["widget"] in names:
                values[names.index(c["widget"])] = c.get("to")
    return out


def estimate_for(workflow):
    over = any(_get(n, "type") == "UNETLoader" and widget_value(n, "weight_dtype") == "default"
               for n in _nodes(workflow))
    sample = 22.5 * GIB if over else 15.9 * GIB
    return {
        "peak_bytes": PEAKS["base"] if over else 19.8 * GIB, "peak_stage": "decode",
        "stages": [{"name": "text_encode", "peak_bytes": 6.1 * GIB}, {"name": "sample", "peak_bytes": sample},
                   {"name": "decode", "peak_bytes": PEAKS["base"] if over else 19.8 * GIB}],
        "budget_bytes": SNAPSHOT["free_bytes"] + SNAPSHOT["torch_allocated_bytes"] + SNAPSHOT["reserved_unallocated_bytes"],
        "verdict": "does not fit" if over else "fits",
        "verdict_id": "does_not_fit" if over else "fits",
    }


def _verdict(peak):
    # `undefined <= BUDGET` is false in JavaScript.
    fits = peak is not UNDEFINED and peak <= BUDGET
    return {"verdict": "fits" if fits else "does not fit", "verdict_id": "fits" if fits else "does_not_fit"}


def suggestion(body):
    """The stand-in core's suggest_preset: its presets previewed as apply-preset previews them, those that
    change something ranked, the first that fits the budget first (catalog order otherwise)."""
    ranked = []
    for p in PRESETS:
        answer = mock("POST", "/headroom/apply-preset", {**(body or {}), "preset": p["name"]})[1]
        if answer.get("changes"):
            ranked.append({"preset": p["name"], "before": answer["before"], "after": answer["after"],
                           "changes": answer["changes"]})
    ranked.sort(key=lambda e: e["after"]["verdict_id"] != "fits")
    return {"chosen": ranked[0] if ranked else None, "ranked": ranked, "not_ranked": []}


def mock(method, route, body):
    """Returns (status, reply) for one /headroom/* request; `body` is the parsed POST body or None."""
    own = runs_routes.mock(method, route, body)
    if own is not None:
        return own
    if route == "/headroom/vram":
        return 200, {"snapshot": SNAPSHOT, "native": {"core": {"available": True}}}
    if route == "/headroom/presets":
        return 200, {"presets": PRESETS, "verdicts": VERDICTS}
    # Only the name the web calls: a page still posting to /headroom/estimate (the alias the server keeps for
    # users' scripts) gets a 404 here and fails its test.
    if route == "/headroom/plan":
        if not _truthy(_get(_get(body, "workflow"), "nodes")):
            return 400, {"error": "workflow: expected a ComfyUI workflow object"}
        return 200, estimate_for(body["workflow"])
    if route == "/headroom/apply-preset":
        if body is None:
            raise TypeError("Cannot read properties of null (reading 'workflow')")
        changes = preset_changes(_get(body, "workflow"), _get(body, "preset"))
        preset = _get(body, "preset")
        after = PEAKS.get(preset, UNDEFINED) if isinstance(preset, str) else UNDEFINED
        return 200, _defined({
            "workflow": rewritten(_get(body, "workflow"), changes),
            "before": {"peak_bytes": PEAKS["base"], **_verdict(PEAKS["base"])},
            "after": _defined({"peak_bytes": after, **_verdict(after)}),
            "changes": changes,
        })
    if route == "/headroom/suggest-preset":
        return 200, suggestion(body)
    if route == "/headroom/explain":
        return 200, NOT_RECOGNISED if _get(body, "text") in NOT_MEMORY_FAILURES else EXPLANATION
    if route == "/headroom/runs":
        return 200, RUNS
    if route in ("/headroom/settings", "/headroom/panel"):
        return 200, {} if body is None else body
    return 404, {"error": "no such route"}
