"""The notice of a run the previous ComfyUI process left unfinished (killed by the OS, the window closed):
the run as the core reads it from the history (stage, node, RAM in use, likely cause) and the core's
explanation of it as a failure that printed nothing (oom_parse.hpp, run=unfinished). The frontend asks
once per page load and says "seen" after showing it, so the notice appears on the first load after the
start and not on every reload."""
from ..graph import explain
from .. import recorder as run_recorder

_FIGURES = (("stage", "stage"), ("ram_available", "ram_available_bytes"))


def run_fields(run: dict) -> str:
    """The run's fields of the explainer's context line: where it stopped and the RAM left at its last
    record, set against the machine's RAM, so the diagnosis agrees with what was measured."""
    unfinished = run.get("unfinished") if isinstance(run.get("unfinished"), dict) else {}
    parts = ["run=unfinished"]
    for key, field in _FIGURES:
        value = unfinished.get(field)
        if isinstance(value, str) and value and value != "other":
            parts.append(f"{key}={value}")
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            parts.append(f"{key}={value}")
    total = run.get("ram_total_bytes")
    if isinstance(total, int) and not isinstance(total, bool) and total > 0:
        parts.append(f"ram_total={total}")
    return " ".join(parts)


def previous_run():
    """The run the previous process left unfinished, or None (no recorder, or every run finished)."""
    run = getattr(run_recorder.recorder(), "unfinished_run", None)
    return run if isinstance(run, dict) else None


def explanation(run: dict) -> dict:
    return explain.explain_text("", run_fields(run))


def notice() -> dict:
    """{run, explanation}: both null when there is nothing to report or the notice was seen."""
    run = previous_run()
    if run is None or getattr(run_recorder.recorder(), "unfinished_seen", False):
        return {"run": None, "explanation": None}
    return {"run": run, "explanation": explanation(run)}


def seen() -> bool:
    """The notice is not offered again in this process; False when there was none to see."""
    rec = run_recorder.recorder()
    if previous_run() is None or rec.unfinished_seen:
        return False
    rec.unfinished_seen = True
    return True
