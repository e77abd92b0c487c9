"""The run recorder: every node ComfyUI executes, measured, next to Headroom's prediction for that prompt,
written as the run goes to <ComfyUI user directory>/headroom/runs.jsonl (docs/runs.md). On by default and
cheap (BENCHMARKS.md, "Run recorder"); nothing here may ever fail a run: every hook catches its own errors.
Importing this package imports no torch and no ComfyUI."""
from .hooks import Recorder

_recorder = None


def recorder():
    """The process's recorder, or None before install() (outside ComfyUI)."""
    return _recorder


def install(server) -> bool:
    """Starts recording on ComfyUI's PromptServer `server`; False (and nothing changed) when it cannot."""
    global _recorder
    if _recorder is not None:
        return True
    from . import history_store
    path = history_store.default_path()
    if path is None:
        return False
    rec = Recorder(history_store.HistoryStore(path))
    if not rec.attach(server):
        return False
    _recorder = rec
    rec.report_previous_runs()
    return True
