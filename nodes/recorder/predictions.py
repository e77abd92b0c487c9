"""Headroom's queue-time estimate of each prompt, kept until that prompt runs (bounded: a queue of
thousands of prompts keeps only the newest MAX_KEPT). What is kept is the part of the core's plan a run
is compared with; file names only, never paths or prompt text."""
import os
import threading
from collections import OrderedDict

MAX_KEPT = 64
# uncalibrated_peak_bytes: a calibrated estimate's own figure, so calibration never learns from itself.
_STAGE_KEYS = ("name", "peak_bytes", "uncalibrated_peak_bytes", "min_bytes", "streamed_bytes", "mode")
_COMPONENTS = ("diffusion", "text_encoders", "clip_vision", "audio_encoder", "vae")


def _file_only(component):
    if not isinstance(component, dict) or not isinstance(component.get("file"), str):
        return None
    return {"file": os.path.basename(component["file"].replace("\\", "/"))}


def compact(plan: dict) -> dict:
    """The core's plan -> the prediction a run records (its stages, host RAM and which node runs which stage)."""
    def stages(key):
        return [{k: s.get(k) for k in _STAGE_KEYS} for s in plan.get(key) or [] if isinstance(s, dict)]
    job = plan.get("job") if isinstance(plan.get("job"), dict) else {}
    files = {}
    for key in _COMPONENTS:
        value = job.get(key)
        files[key] = [_file_only(c) for c in value] if isinstance(value, list) else _file_only(value)
    workflow = plan.get("workflow") if isinstance(plan.get("workflow"), dict) else {}
    node_stages = workflow.get("node_stages") if isinstance(workflow.get("node_stages"), dict) else {}
    return {"stages": stages("stages"), "sized_stages": stages("sized_stages"), "host_ram_bytes": plan.get("host_ram_bytes"), "peak_bytes": plan.get("peak_bytes"),
            "verdict": plan.get("verdict"), "runtime": plan.get("runtime"), "job": files, "node_stages": node_stages}


class Predictions:
    def __init__(self, limit=MAX_KEPT):
        self._limit = limit
        self._items = OrderedDict()
        self._lock = threading.Lock()
        self.on_kept = None  # called (prompt_id, prediction) after each keep: the recorder writes a late one

    def keep(self, prompt_id, plan):
        if not isinstance(prompt_id, str) or not prompt_id or not isinstance(plan, dict):
            return
        prediction = compact(plan)
        with self._lock:
            self._items[prompt_id] = prediction
            self._items.move_to_end(prompt_id)
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
        callback = self.on_kept
        if callback is not None:
            callback(prompt_id, prediction)

    def get(self, prompt_id):
        with self._lock:
            return self._items.get(prompt_id)

    def __len__(self):
        with self._lock:
            return len(self._items)
