"""The recorded runs as a user may attach them to a bug report: the measurements and predictions, with
nothing that could name the user's machine beyond the card (no prompt ids, no paths, error messages with
their paths cut out). Works on the history answer's run objects (GET /headroom/runs)."""
import re

# Keys of a run and of a stage that carry figures or names of models and stages, never a path or a prompt.
RUN_KEYS = ("started", "ended", "outcome", "runtime", "stages", "timeline")
STAGE_DROP = ("paths",)  # nothing the contract writes today; a future field named so stays out
# A Windows drive path, a UNC path or a POSIX path of two or more parts: the message's file names stay,
# the folders that lead to them go ("C:\\Users\\ann\\ComfyUI\\models\\x.safetensors" -> "<path>/x.safetensors").
_PATH = re.compile(r"(?:[A-Za-z]:[\\/]|\\\\|/)(?:[^\s\\/:\"'<>|]+[\\/])+")


def redact(text):
    return _PATH.sub("<path>/", text) if isinstance(text, str) else None


def _file_name(value):
    return re.split(r"[\\/]", value)[-1] if isinstance(value, str) else value


def stage_for_export(stage):
    if not isinstance(stage, dict):
        return None
    out = {k: v for k, v in stage.items() if k not in STAGE_DROP}
    out["model"] = _file_name(stage.get("model"))
    return out


def run_for_export(run):
    if not isinstance(run, dict):
        return None
    out = {k: run[k] for k in RUN_KEYS if k in run}
    out["message"] = redact(run.get("message"))
    out["stages"] = [s for s in map(stage_for_export, run.get("stages") or []) if s is not None]
    return out


def export(runs, calibration_state, version=None):
    """{v, headroom, runs, calibration}: what GET /headroom/runs/export downloads."""
    return {"v": 1, "headroom": version, "note": "measurements only: no prompts, no paths",
            "runs": [r for r in map(run_for_export, runs or []) if r is not None],
            "calibration": {"card": calibration_state.get("card"),
                            "corrections": [{**c, "model": _file_name(c.get("model"))}
                                            for c in calibration_state.get("calibration") or [] if isinstance(c, dict)],
                            "rule": calibration_state.get("rule")}}
