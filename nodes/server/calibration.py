"""Calibration from the user's own runs (docs/calibration.md), opt-in through the setting `calibration`.

The core learns the corrections (its `calibrate` function, on the runs the history parser returns) and
applies them (the `calibration` field of estimate and plan requests); this module only stores the core's
answer in <ComfyUI user directory>/headroom/calibration.json and passes it back with every request the
pack makes (comfy_adapters.with_runtime). Nothing here may stop an estimate: a broken file, a missing
history or a core without the function log one line and the estimate goes on uncalibrated."""
import json
import logging
import os
import threading
import time
from pathlib import Path

from . import settings

FILE_NAME = "calibration.json"
HISTORY_NAME = "runs.jsonl"  # the recorder's history (the shared contract of issue 21)
MAX_FILE_BYTES = 1024 * 1024  # a few hundred corrections are ~50 kB; anything larger is not ours
HISTORY_LIMIT = 200  # the most runs GET /headroom/runs hands out, and all the learner looks at
log = logging.getLogger("headroom")
_lock = threading.Lock()
_logged = set()

folder_override = None  # tests and tools without ComfyUI point this at a folder


def _log_once(key, text):
    if key not in _logged:
        _logged.add(key)
        log.warning("Headroom: %s", text)


def folder():
    """<ComfyUI user directory>/headroom, or None outside ComfyUI."""
    if folder_override is not None:
        return Path(folder_override)
    try:
        import folder_paths
    except ImportError:
        return None
    user = getattr(folder_paths, "get_user_directory", None)
    return Path(user()) / "headroom" if user else None


def history_runs(limit=HISTORY_LIMIT):
    """The recorded runs, newest first, as the core's history parser answers them (the same answer GET
    /headroom/runs renders), or None when there is no history or no parser in this build."""
    base = folder()
    if base is None or not (base / HISTORY_NAME).is_file():
        return None
    from ..native import native_loader
    try:
        answer = native_loader.call_json("runs", {"history": str(base / HISTORY_NAME), "limit": limit})
    except (ValueError, RuntimeError, native_loader.NativeUnavailable) as e:
        _log_once("runs", f"calibration cannot read the run history yet: {e}")
        return None
    runs = answer.get("runs") if isinstance(answer, dict) else None
    return runs if isinstance(runs, list) else None


runs_source = history_runs  # replaced in tests with a function returning fixture runs


def _empty():
    return {"v": 1, "card": None, "calibration": [], "reset_at": 0, "learned_at": None, "history_mtime": None}


def load():
    """The stored state; an absent, damaged or foreign file reads as none (one log line, never a raise)."""
    base = folder()
    path = base / FILE_NAME if base else None
    if path is None or not path.is_file():
        return _empty()
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        state = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(state, dict) or state.get("v") != 1 or not isinstance(state.get("calibration"), list):
            raise ValueError('expected {"v": 1, "calibration": [...]}')
    except (OSError, ValueError) as e:
        _log_once(f"load:{path}", f"{path} skipped ({e}); calibration starts again from the run history")
        return _empty()
    return {**_empty(), **state}


def save(state):
    """Writes the state whole (a temporary file moved over the old one); a full disk only logs."""
    base = folder()
    if base is None:
        return False
    try:
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / (FILE_NAME + ".tmp")
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        os.replace(tmp, base / FILE_NAME)
        return True
    except OSError as e:
        _log_once("save", f"could not store the calibration in {base}: {e}")
        return False


def newest_card(runs):
    """The device of the newest run that names one: the card the next run will most likely use."""
    for run in runs or []:
        device = (run.get("runtime") or {}).get("device") if isinstance(run, dict) else None
        if isinstance(device, str) and device:
            return device
    return None


def learn(runs, reset_at=0, core_call=None):
    """The core's corrections for the newest run's card from `runs` (the history answer's list), as the
    state this module stores. Raises ValueError naming the field when the runs are malformed."""
    if core_call is None:
        from ..native import native_loader
        core_call = native_loader.call_json
    card = newest_card(runs)
    state = {**_empty(), "reset_at": reset_at, "card": card, "learned_at": time.time()}
    if card is None:
        return state
    answer = core_call("calibrate", {"runs": runs, "card": card, **({"since": reset_at} if reset_at else {})})
    for key in ("calibration", "rule", "runs_seen", "stages_used", "stages_skipped"):
        state[key] = answer.get(key)
    return state


def _history_mtime():
    base = folder()
    try:
        return (base / HISTORY_NAME).stat().st_mtime_ns if base else None
    except OSError:
        return None


def refresh(force=False):
    """The stored state, learned again first when the history changed since (or when `force`)."""
    with _lock:
        state = load()
        mtime = _history_mtime()
        if not force and state.get("learned_at") and state.get("history_mtime") == mtime:
            return state
        runs = runs_source()
        if runs is None:
            return state
        try:
            state = learn(runs, state.get("reset_at") or 0)
        except (ValueError, RuntimeError) as e:
            _log_once(f"learn:{e}", f"calibration not learned from the run history: {e}")
            return state
        state["history_mtime"] = mtime
        save(state)
        return state


def request_fields():
    """{"calibration": [...]} for an estimate or plan request when calibration is on and there is any;
    else {} (the model's figures alone)."""
    if not settings.get().get("calibration"):
        return {}
    try:
        entries = refresh().get("calibration") or []
    except Exception as e:  # a bug of ours must not take an estimate down with it
        _log_once(f"fields:{type(e).__name__}", f"calibration skipped: {type(e).__name__}: {e}")
        return {}
    return {"calibration": entries} if entries else {}


def reset():
    """Forgets every correction: runs started before now no longer count (the history stays as it is)."""
    with _lock:
        state = {**_empty(), "reset_at": time.time(), "learned_at": time.time(), "history_mtime": _history_mtime()}
        save(state)
        return state


def status():
    """GET /headroom/calibration: whether it is on, the card, the corrections with their runs, the rule."""
    state = refresh()
    entries = state.get("calibration") or []
    return {"enabled": bool(settings.get().get("calibration")), "card": state.get("card"), "calibration": entries,
            "runs": max((e.get("runs", 0) for e in entries if isinstance(e, dict)), default=0),
            "rule": state.get("rule"), "reset_at": state.get("reset_at") or 0, "learned_at": state.get("learned_at"),
            "stored": folder() is not None}
